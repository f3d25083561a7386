//! The watch stream: a chunked 200 with one JSON event per line, flushed as events happen,
//! with bookmarks, `timeoutSeconds`, 410 for forgotten resume points, and abrupt ends on
//! `close_watches`.

use super::events::WatchEvent;
use super::handler::WatchPlan;
use super::http::{LAST_CHUNK, chunk, response_head};
use super::shared::{Shared, lock};
use smol::Timer;
use smol::future::FutureExt;
use smol::io::{AsyncWrite, AsyncWriteExt};
use std::io;
use std::time::Instant;

/// What the connection does after a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    KeepAlive,
    Close,
}

enum Wake {
    Event(Option<WatchEvent>),
    Bookmark,
    Timeout,
}

/// The response head of a chunked JSON stream.
pub fn chunked_head() -> Vec<u8> {
    response_head(
        200,
        &[
            ("Content-Type".into(), "application/json".into()),
            ("Transfer-Encoding".into(), "chunked".into()),
        ],
    )
}

/// Streams a watch until it times out (clean end), is dropped (abrupt end), or the client goes.
pub async fn stream<W: AsyncWrite + Unpin>(
    out: &mut W,
    shared: &Shared,
    plan: WatchPlan,
    record: usize,
) -> io::Result<Next> {
    let registered = lock(&shared.store).watch(plan.filter.clone(), plan.from);
    shared.answered(record, 200);
    out.write_all(&chunked_head()).await?;
    out.flush().await?;
    let (watcher_id, events) = match registered {
        Ok(opened) => opened,
        Err(error) => {
            let line = WatchEvent {
                event_type: "ERROR",
                object: error.to_status(),
            }
            .to_line();
            out.write_all(&chunk(&line)).await?;
            out.write_all(LAST_CHUNK).await?;
            out.flush().await?;
            return Ok(Next::KeepAlive);
        }
    };
    let result = pump(out, shared, &plan, (watcher_id, record), events).await;
    lock(&shared.store).events.unsubscribe(watcher_id);
    result
}

/// `ids` is the store's watcher id and the request's index in the log.
async fn pump<W: AsyncWrite + Unpin>(
    out: &mut W,
    shared: &Shared,
    plan: &WatchPlan,
    (watcher_id, record): (u64, usize),
    events: smol::channel::Receiver<WatchEvent>,
) -> io::Result<Next> {
    let deadline = plan.timeout.map(|timeout| Instant::now() + timeout);
    let mut next_bookmark = Instant::now() + *lock(&shared.bookmark_interval);
    loop {
        let event = async { Wake::Event(events.recv().await.ok()) };
        let bookmark = async {
            if plan.bookmarks {
                Timer::at(next_bookmark).await;
                Wake::Bookmark
            } else {
                smol::future::pending().await
            }
        };
        let timeout = async {
            match deadline {
                Some(at) => {
                    Timer::at(at).await;
                    Wake::Timeout
                }
                None => smol::future::pending().await,
            }
        };
        match event.or(bookmark).or(timeout).await {
            Wake::Event(Some(_)) if shared.watch_is_silenced(record) => {}
            Wake::Event(Some(event)) => {
                out.write_all(&chunk(&event.to_line())).await?;
                out.flush().await?;
            }
            Wake::Event(None) => return Ok(Next::Close),
            Wake::Bookmark => {
                next_bookmark = Instant::now() + *lock(&shared.bookmark_interval);
                if shared.watch_is_silenced(record) {
                    continue;
                }
                let mut store = lock(&shared.store);
                let current = store.resource_version();
                store
                    .events
                    .bookmark(watcher_id, current, &plan.kind, &plan.api_version);
            }
            // A silenced watch does not even end: the client must notice on its own.
            Wake::Timeout if shared.watch_is_silenced(record) => {
                smol::future::pending::<()>().await;
            }
            Wake::Timeout => {
                out.write_all(LAST_CHUNK).await?;
                out.flush().await?;
                return Ok(Next::KeepAlive);
            }
        }
    }
}
