//! What a server, or a broken or hostile proxy on the way, can make skiff hold while it reads a
//! reply: a bounded response head, and a bounded body.
//!
//! async-h1 decodes the response head and chunked bodies. It refuses a head of 8 KiB or more
//! and more than 128 headers once their lines end, and chunk sizes that overflow 64 bits; it
//! bounds chunk trailers at 8 KiB. It does not bound a status or header line that never ends
//! (it reads up to the next line feed), nor a body: a chunk announcing 2^63 bytes is simply
//! read on. So the connection is read through [`HeadLimit`] until the head is decoded, and
//! the body through [`read_body`]:
//! - one object (a GET, create, update, patch or delete reply) is at most [`MAX_OBJECT_BYTES`];
//! - a LIST reply is measured item by item ([`ListMeter`]): each item at most
//!   [`MAX_OBJECT_BYTES`], at most as many items as the page asked for, and a small envelope.
//!   A whole page is not bounded as one: its items are what the caller asked to hold.
//!
//! Watch lines are bounded by [`MAX_WATCH_LINE_BYTES`] (`stream.rs`). Every limit broken is an
//! [`Error::Transport`] naming it; the connection is dropped, never reused, and the caller
//! retries as after any other failed request.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use smol::io::{AsyncRead, AsyncReadExt, AsyncWrite};

use super::Error;
use super::list_meter::ListMeter;
use super::request::RequestSpec;

/// Bytes read from the connection before a response head is decoded: async-h1's own 8 KiB head
/// limit plus its 8 KiB read-ahead, twice over. Past it, a status or header line that never
/// ends is an error.
pub const MAX_REPLY_HEAD_BYTES: usize = 32 * 1024;
/// Largest object accepted: etcd stores at most 1.5 MiB per object by default, and its JSON
/// (base64 data, escaping) is at most about twice that.
pub const MAX_OBJECT_BYTES: usize = 4 * 1024 * 1024;
/// Longest watch line: one object and the event around it.
pub const MAX_WATCH_LINE_BYTES: usize = MAX_OBJECT_BYTES + 4 * 1024;
/// Items of a LIST that asked for no page size (skiff's lists always do).
pub const MAX_UNPAGED_LIST_ITEMS: usize = 100_000;
/// How much of a body is read at a time.
const READ_CHUNK_BYTES: usize = 16 * 1024;

/// How a reply's body is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyLimit {
    /// One object (or a `Status`): [`MAX_OBJECT_BYTES`] in all.
    Object,
    /// A LIST page of at most this many items.
    List(usize),
}

impl BodyLimit {
    /// The bound for the reply to `spec`.
    pub fn of(spec: &RequestSpec) -> BodyLimit {
        if spec.verb != "list" {
            return BodyLimit::Object;
        }
        let page = spec.query.iter().find(|(key, _)| *key == "limit");
        let page = page.and_then(|(_, value)| value.parse::<usize>().ok());
        BodyLimit::List(page.filter(|&n| n > 0).unwrap_or(MAX_UNPAGED_LIST_ITEMS))
    }
}

/// Reads a whole body within `limit`; `declared` is its Content-Length, if it has one.
pub async fn read_body<R>(
    body: R,
    limit: BodyLimit,
    declared: Option<usize>,
) -> Result<Vec<u8>, Error>
where
    R: AsyncRead + Unpin,
{
    if limit == BodyLimit::Object
        && let Some(declared) = declared.filter(|&n| n > MAX_OBJECT_BYTES)
    {
        return Err(over_object_limit(&format!(
            "its Content-Length is {declared}"
        )));
    }
    let mut meter = match limit {
        BodyLimit::Object => None,
        BodyLimit::List(items) => Some(ListMeter::new(items)),
    };
    let mut body = body;
    let mut bytes = Vec::new();
    loop {
        let filled = bytes.len();
        bytes.resize(filled + READ_CHUNK_BYTES, 0);
        let read = body.read(&mut bytes[filled..]).await;
        bytes.truncate(filled + *read.as_ref().unwrap_or(&0));
        let read = read.map_err(|e| Error::Transport(format!("reading the response body: {e}")))?;
        if read == 0 {
            return Ok(bytes);
        }
        match &mut meter {
            None if bytes.len() > MAX_OBJECT_BYTES => {
                return Err(over_object_limit("more kept arriving"));
            }
            None => {}
            Some(meter) => meter
                .feed(&bytes[filled..])
                .map_err(|why| Error::Transport(format!("the LIST reply was cut off: {why}")))?,
        }
    }
}

fn over_object_limit(detail: &str) -> Error {
    Error::Transport(format!(
        "the reply body is larger than the {MAX_OBJECT_BYTES}-byte limit of one object ({detail})"
    ))
}

/// The connection as the reply decoder reads it: with a budget of [`MAX_REPLY_HEAD_BYTES`]
/// until [`HeadRelease::release`] says the head is decoded; writes pass through.
///
/// Every read that returns bytes also wakes the task once more. async-h1's chunked decoder
/// returns `Pending` without arranging a wake-up when the bytes it has leave a chunk trailer
/// incomplete (they may have been read, and buffered, in the same poll); the task would then
/// sleep until a timeout. The extra wake-up costs one poll per read and makes it read on.
pub struct HeadLimit<S> {
    inner: S,
    read: usize,
    released: Arc<AtomicBool>,
}

/// Lifts the head budget of the [`HeadLimit`] it came with.
pub struct HeadRelease(Arc<AtomicBool>);

impl HeadRelease {
    pub fn release(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl<S> HeadLimit<S> {
    pub fn new(inner: S) -> (HeadLimit<S>, HeadRelease) {
        let released = Arc::new(AtomicBool::new(false));
        let limited = HeadLimit {
            inner,
            read: 0,
            released: released.clone(),
        };
        (limited, HeadRelease(released))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for HeadLimit<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let len = match this.released.load(Ordering::Relaxed) {
            true => buf.len(),
            false => {
                let budget = MAX_REPLY_HEAD_BYTES.saturating_sub(this.read);
                if budget == 0 {
                    return Poll::Ready(Err(io::Error::other(format!(
                        "the response head is longer than {MAX_REPLY_HEAD_BYTES} bytes"
                    ))));
                }
                buf.len().min(budget)
            }
        };
        let read = std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut buf[..len]))?;
        this.read = this.read.saturating_add(read);
        if read > 0 {
            cx.waker().wake_by_ref();
        }
        Poll::Ready(Ok(read))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for HeadLimit<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_close(cx)
    }
}

/// A whole reply read from `reader` as [`super::request`] reads one: the status and the body,
/// within the same limits. For the property tests and the fuzzers.
#[cfg(any(test, fuzzing))]
pub async fn decode_reply<R>(reader: R, limit: BodyLimit) -> Result<(u16, Vec<u8>), Error>
where
    R: AsyncRead + Unpin + Send + Sync + 'static,
{
    let (limited, head_read) = HeadLimit::new(reader);
    let mut res = async_h1::client::decode(limited)
        .await
        .map_err(|e| Error::Transport(format!("no response: {e}")))?;
    head_read.release();
    let declared = res
        .header("Content-Length")
        .and_then(|v| v.last().as_str().trim().parse().ok());
    let body = read_body(res.take_body(), limit, declared).await?;
    Ok((u16::from(res.status()), body))
}

#[cfg(test)]
mod tests;
