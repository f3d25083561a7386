//! What a server, or a broken or hostile proxy on the way, can make skiff hold while it reads a
//! reply: a bounded response head, and a bounded body.
//!
//! async-h1 decodes the response head and chunked bodies. It refuses a head of 8 KiB or more
//! and more than 128 headers once their lines end, and chunk sizes that overflow 64 bits; it
//! bounds chunk trailers at 8 KiB. It does not bound a status or header line that never ends
//! (it reads up to the next line feed), nor a body: a chunk announcing 2^63 bytes is simply
//! read on. So the connection is read through [`HeadGuard`] (`reply_head.rs`) until the head
//! is decoded, and the body through [`read_body`]:
//! - one object (a GET, create, update, patch or delete reply) is at most [`MAX_OBJECT_BYTES`];
//! - a LIST reply is measured item by item ([`ListMeter`]): each item at most
//!   [`MAX_OBJECT_BYTES`], at most as many items as the page asked for, and a small envelope.
//!   A whole page is not bounded as one: its items are what the caller asked to hold.
//!
//! Watch lines are bounded by [`MAX_WATCH_LINE_BYTES`] (`stream.rs`). Every limit broken is an
//! [`Error::Transport`] naming it; the connection is dropped, never reused, and the caller
//! retries as after any other failed request.

use smol::io::{AsyncRead, AsyncReadExt};

use super::Error;
use super::list_meter::ListMeter;
#[cfg(any(test, fuzzing))]
use super::reply_head::HeadGuard;

pub use super::reply_sizes::{MAX_OBJECT_BYTES, MAX_UNPAGED_LIST_ITEMS, MAX_WATCH_LINE_BYTES};
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
    /// The bound for the reply to a request of `verb` with the `limit` query parameter
    /// `page_size`, if any.
    pub fn for_reply(verb: &str, page_size: Option<&str>) -> BodyLimit {
        if verb != "list" {
            return BodyLimit::Object;
        }
        let page = page_size.and_then(|value| value.parse::<usize>().ok());
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

/// A whole reply read from `reader` as [`super::request`] reads one: the status and the body,
/// within the same limits. For the property tests and the fuzzers.
#[cfg(any(test, fuzzing))]
pub async fn decode_reply<R>(reader: R, limit: BodyLimit) -> Result<(u16, Vec<u8>), Error>
where
    R: AsyncRead + Unpin + Send + Sync + 'static,
{
    let (limited, head_read) = HeadGuard::new(reader);
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
