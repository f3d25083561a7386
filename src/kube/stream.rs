//! WatchStream: decodes a watch response body, one JSON event per line, as chunks arrive.
//!
//! The stream ends (returns `None`) after a clean end of the body and after any error: an
//! `ERROR` event (410 → [`Error::Expired`]), a line that is not an event ([`Error::Decode`]),
//! a body cut short or a line over [`MAX_LINE`] ([`Error::Transport`]). The caller then
//! re-lists or re-watches.

use super::Error;
use super::api::{ObjectMeta, Resource, Status, WatchFrame};
use super::request::preview;
use super::watch::WatchEvent;
use serde::Deserialize;
use smol::io::{AsyncRead, AsyncReadExt};
use std::marker::PhantomData;
use std::pin::Pin;

/// Longest event line accepted: one object and its event ([`super::reply_limits`]).
const MAX_LINE: usize = super::reply_limits::MAX_WATCH_LINE_BYTES;
/// How much is read from the body at a time: one event of a watched kind is well under it
/// (a real Namespace is about 1 KiB), and the reads come from the HTTP layer's own buffer.
const READ_SIZE: usize = 4 * 1024;
/// Buffer capacity kept between events; a larger one is released once it is empty, so one
/// large event does not pin its size for the life of the watch.
const KEEP_CAPACITY: usize = 4 * READ_SIZE;

/// The events of one watch request.
pub struct WatchStream<K> {
    body: Pin<Box<dyn AsyncRead + Send + Sync>>,
    buf: Vec<u8>,
    /// Bytes of `buf` already searched for a newline.
    scanned: usize,
    done: bool,
    kind: PhantomData<fn() -> K>,
}

impl<K: Resource> WatchStream<K> {
    /// Decodes events from `body` (the response body of a watch request).
    pub fn from_reader(body: impl AsyncRead + Send + Sync + 'static) -> WatchStream<K> {
        WatchStream {
            body: Box::pin(body),
            buf: Vec::new(),
            scanned: 0,
            done: false,
            kind: PhantomData,
        }
    }

    /// The next event; `None` once the stream has ended (cleanly or after an error).
    pub async fn next(&mut self) -> Option<Result<WatchEvent<K>, Error>> {
        while !self.done {
            if let Some(line) = self.take_line() {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let event = decode_line::<K>(&line);
                self.done = event.is_err();
                return Some(event);
            }
            if let Err(e) = self.fill().await {
                self.done = true;
                return Some(Err(e));
            }
        }
        None
    }

    /// Removes and returns the next complete line, if the buffer holds one.
    fn take_line(&mut self) -> Option<Vec<u8>> {
        let found = self.buf[self.scanned..].iter().position(|&b| b == b'\n');
        match found {
            Some(offset) => {
                let end = self.scanned + offset;
                let line = self.buf[..end].to_vec();
                self.buf.drain(..=end);
                self.scanned = 0;
                if self.buf.is_empty() && self.buf.capacity() > KEEP_CAPACITY {
                    self.buf = Vec::new();
                }
                Some(line)
            }
            None => {
                self.scanned = self.buf.len();
                None
            }
        }
    }

    /// Reads more of the body; at its end marks the stream done (an error if mid-line).
    ///
    /// Reads straight into the buffer's spare room: a read array inside this future would make
    /// every watch task's state that much larger for as long as the watch is open.
    async fn fill(&mut self) -> Result<(), Error> {
        let filled = self.buf.len();
        self.reserve_within_line_limit(filled);
        let read = self.body.read(&mut self.buf[filled..]).await;
        self.buf.truncate(filled + *read.as_ref().unwrap_or(&0));
        let read = read.map_err(|e| super::watch_body::read_error(&e))?;
        if read == 0 {
            self.done = true;
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                return Ok(());
            }
            return Err(Error::Transport(
                "watch stream ended in the middle of an event".into(),
            ));
        }
        if self.buf.len() > MAX_LINE && !self.buf[filled..].contains(&b'\n') {
            return Err(Error::Transport(format!(
                "watch event longer than {MAX_LINE} bytes without a line end"
            )));
        }
        Ok(())
    }

    /// Room for one read, never taking the buffer (or its capacity) past one line over the limit.
    fn reserve_within_line_limit(&mut self, filled: usize) {
        let room = READ_SIZE.min((MAX_LINE + 1).saturating_sub(filled)).max(1);
        if self.buf.capacity() < filled + room {
            let doubled = (self.buf.capacity() * 2).min(MAX_LINE + 1);
            self.buf.reserve_exact(doubled.max(filled + room) - filled);
        }
        self.buf.resize(filled + room, 0);
    }
}

#[cfg(any(test, fuzzing))]
impl<K> WatchStream<K> {
    /// Bytes the line buffer holds room for.
    pub(crate) fn buffer_capacity(&self) -> usize {
        self.buf.capacity()
    }
}

/// Decodes one line of a watch stream.
fn decode_line<K: Resource>(line: &[u8]) -> Result<WatchEvent<K>, Error> {
    let event: WatchFrame = serde_json::from_slice(line).map_err(|e| {
        Error::Decode(format!(
            "watch line is not an event ({e}): {}",
            preview(line)
        ))
    })?;
    let WatchFrame { kind, object } = event;
    let object = object.get();
    match &*kind {
        "ADDED" => Ok(WatchEvent::Added(decode_object(&kind, object)?)),
        "MODIFIED" => Ok(WatchEvent::Modified(decode_object(&kind, object)?)),
        "DELETED" => Ok(WatchEvent::Deleted(decode_object(&kind, object)?)),
        "BOOKMARK" => {
            let bookmark: Bookmark = serde_json::from_str(object).unwrap_or_default();
            match bookmark.metadata.resource_version() {
                "" => Err(Error::Decode(
                    "BOOKMARK event without a resourceVersion".into(),
                )),
                rv => Ok(WatchEvent::Bookmark {
                    resource_version: rv.to_owned(),
                }),
            }
        }
        "ERROR" => Err(status_error(object)),
        other => Err(Error::Decode(format!("unknown watch event type {other:?}"))),
    }
}

/// What a `BOOKMARK` event's object is read for.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Bookmark {
    metadata: ObjectMeta,
}

fn decode_object<K: Resource>(kind: &str, object: &str) -> Result<K, Error> {
    serde_json::from_str(object)
        .map_err(|e| Error::Decode(format!("watch {kind} object is not a {}: {e}", K::KIND)))
}

/// The error an `ERROR` event carries: 410 Gone becomes [`Error::Expired`].
fn status_error(object: &str) -> Error {
    let status: Status = serde_json::from_str(object).unwrap_or_default();
    let message = status.message.unwrap_or_default();
    match status.code {
        Some(410) => Error::Expired(message),
        code => Error::Api {
            code: code.unwrap_or(500),
            reason: status.reason.unwrap_or_else(|| "WatchError".into()),
            message,
            retry_after: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::ConfigMap;
    use crate::property::Pieces;
    use std::io;

    /// A body delivered in the given pieces, then its end.
    fn stream(pieces: Vec<io::Result<&str>>) -> WatchStream<ConfigMap> {
        let pieces = pieces
            .into_iter()
            .map(|p| p.map(|s| s.as_bytes().to_vec()))
            .collect();
        WatchStream::from_reader(Pieces::each(pieces))
    }

    fn all(mut s: WatchStream<ConfigMap>) -> Vec<Result<WatchEvent<ConfigMap>, Error>> {
        smol::block_on(async {
            let mut out = Vec::new();
            while let Some(item) = s.next().await {
                out.push(item);
            }
            out
        })
    }

    const ADDED: &str = r#"{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"},"data":{"k":"v"}}}"#;

    #[test]
    fn events_split_across_chunks_are_reassembled() {
        let (head, tail) = ADDED.split_at(30);
        let second = ADDED.replace("ADDED", "MODIFIED");
        let events = all(stream(vec![
            Ok(head),
            Ok(tail),
            Ok("\n"),
            Ok(&second),
            Ok("\n"),
        ]));
        assert_eq!(events.len(), 2, "{events:?}");
        let Ok(WatchEvent::Added(cm)) = &events[0] else {
            panic!("{events:?}")
        };
        assert_eq!(cm.metadata.resource_version(), "5");
        assert_eq!(cm.data["k"], "v");
        assert!(matches!(&events[1], Ok(WatchEvent::Modified(_))));
    }

    #[test]
    fn bookmark_carries_the_resource_version() {
        let body = format!(
            "{}\n",
            r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"42"}}}"#
        );
        let cursor = smol::io::Cursor::new(body.into_bytes());
        let events = all(WatchStream::from_reader(cursor));
        assert_eq!(
            events,
            vec![Ok(WatchEvent::Bookmark {
                resource_version: "42".into()
            })]
        );
    }

    #[test]
    fn error_event_410_is_expired_and_ends_the_stream() {
        let gone = r#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version: 1 (50)"}}"#;
        let events = all(stream(vec![Ok(gone), Ok("\n"), Ok(ADDED), Ok("\n")]));
        assert_eq!(
            events,
            vec![Err(Error::Expired(
                "too old resource version: 1 (50)".into()
            ))]
        );
        let forbidden =
            r#"{"type":"ERROR","object":{"code":403,"reason":"Forbidden","message":"no"}}"#;
        let events = all(stream(vec![Ok(forbidden), Ok("\n")]));
        assert!(
            matches!(&events[..], [Err(Error::Api { code: 403, .. })]),
            "{events:?}"
        );
    }

    #[test]
    fn garbage_is_a_decode_error() {
        let events = all(stream(vec![Ok("<html>oops</html>\n")]));
        assert!(matches!(&events[..], [Err(Error::Decode(_))]), "{events:?}");
    }

    #[test]
    fn truncated_or_reset_body_is_a_transport_error_then_the_end() {
        let (head, _) = ADDED.split_at(40);
        let events = all(stream(vec![Ok(ADDED), Ok("\n"), Ok(head)]));
        assert!(
            matches!(
                &events[..],
                [Ok(WatchEvent::Added(_)), Err(Error::Transport(_))]
            ),
            "{events:?}"
        );
        let reset = io::Error::new(io::ErrorKind::ConnectionReset, "reset by peer");
        let events = all(stream(vec![Ok(head), Err(reset)]));
        assert!(
            matches!(&events[..], [Err(Error::Transport(_))]),
            "{events:?}"
        );
    }

    #[test]
    fn a_large_event_does_not_pin_its_buffer_size() {
        let big = ADDED.replace(r#""k":"v""#, &format!(r#""k":"{}""#, "x".repeat(100_000)));
        let body = format!("{big}\n{ADDED}\n");
        let mut s = WatchStream::<ConfigMap>::from_reader(smol::io::Cursor::new(body));
        let events = smol::block_on(async { [s.next().await, s.next().await] });
        assert!(matches!(&events, [Some(Ok(_)), Some(Ok(_))]), "{events:?}");
        assert!(
            s.buf.capacity() <= KEEP_CAPACITY,
            "buffer kept {} bytes",
            s.buf.capacity()
        );
    }

    #[test]
    fn clean_end_is_none_without_error() {
        let events = all(stream(vec![Ok(ADDED), Ok("\n\n")]));
        assert_eq!(events.len(), 1);
        assert!(events[0].is_ok());
    }
}
