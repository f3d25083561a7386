//! A request head, read within the bounds of [`super::limits`] and parsed by `httparse`.
//!
//! The servers answer GET (and HEAD) on three paths, so a request is its head alone: a body is
//! refused (413), and so are a request line over [`MAX_REQUEST_LINE_BYTES`] (414) and a head
//! over [`MAX_HEAD_BYTES`] or [`MAX_HEADERS`] fields (431), as soon as that much has arrived.
//! The head is read into a buffer that grows with what arrives, never past the head limit, and
//! must arrive before its deadline. [`parse`] is pure, so it is fuzzed and property-tested on
//! its own.

use std::time::Instant;

use http_types::StatusCode;
use smol::io::{AsyncRead, AsyncReadExt};

use super::limits::{
    HEAD_TIMEOUT, MAX_HEAD_BYTES, MAX_HEADERS, MAX_REQUEST_LINE_BYTES, READ_CHUNK_BYTES,
};

/// The parts of a request the servers act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    pub method: Method,
    /// The path without its query.
    pub path: String,
    /// The `Authorization` header, if any (and valid UTF-8).
    pub authorization: Option<String>,
    /// Whether the client asked to keep the connection open (HTTP/1.1 without
    /// `Connection: close`).
    pub keep_alive: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    /// Any other; answered 405.
    Other,
}

/// A request refused before it is routed: the status and a short reason for the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub status: StatusCode,
    pub why: String,
}

/// What the buffered bytes amount to.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// More bytes are needed.
    Partial,
    /// A whole head, and how many bytes of the buffer it took.
    Complete(RequestHead, usize),
    Rejected(Rejection),
}

/// Parses the head at the start of `buf`.
pub fn parse(buf: &[u8]) -> Parsed {
    if let Some(rejection) = request_line_too_long(buf) {
        return Parsed::Rejected(rejection);
    }
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(buf) {
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD_BYTES => {
            Parsed::Rejected(head_too_large())
        }
        Ok(httparse::Status::Partial) => Parsed::Partial,
        Ok(httparse::Status::Complete(used)) if used > MAX_HEAD_BYTES => {
            Parsed::Rejected(head_too_large())
        }
        Ok(httparse::Status::Complete(used)) => match head_of(&request) {
            Ok(head) => Parsed::Complete(head, used),
            Err(rejection) => Parsed::Rejected(rejection),
        },
        Err(httparse::Error::TooManyHeaders) => Parsed::Rejected(Rejection {
            status: StatusCode::RequestHeaderFieldsTooLarge,
            why: format!("more than {MAX_HEADERS} header fields"),
        }),
        Err(e) => Parsed::Rejected(bad_request(format!("malformed request head: {e}"))),
    }
}

fn request_line_too_long(buf: &[u8]) -> Option<Rejection> {
    let window = &buf[..buf.len().min(MAX_REQUEST_LINE_BYTES + 1)];
    let line_ends = window.contains(&b'\n');
    (!line_ends && buf.len() > MAX_REQUEST_LINE_BYTES).then(|| Rejection {
        status: StatusCode::UriTooLong,
        why: format!("request line longer than {MAX_REQUEST_LINE_BYTES} bytes"),
    })
}

fn head_too_large() -> Rejection {
    Rejection {
        status: StatusCode::RequestHeaderFieldsTooLarge,
        why: format!("request head larger than {MAX_HEAD_BYTES} bytes"),
    }
}

fn bad_request(why: String) -> Rejection {
    Rejection {
        status: StatusCode::BadRequest,
        why,
    }
}

fn head_of(request: &httparse::Request<'_, '_>) -> Result<RequestHead, Rejection> {
    let method = match request.method.unwrap_or_default() {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        _ => Method::Other,
    };
    let target = request.path.unwrap_or_default();
    if !target.starts_with('/') {
        return Err(bad_request(format!(
            "request target {target:?} is not a path"
        )));
    }
    let path = target
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .to_owned();
    let header = |name: &str| {
        request
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    };
    let has_body = header("Transfer-Encoding").is_some()
        || request
            .headers
            .iter()
            .any(|h| h.name.eq_ignore_ascii_case("Content-Length") && h.value.trim_ascii() != b"0");
    if has_body {
        return Err(Rejection {
            status: StatusCode::PayloadTooLarge,
            why: "request bodies are not accepted".to_owned(),
        });
    }
    let connection = header("Connection").unwrap_or_default();
    let close = connection
        .split(|&b| b == b',')
        .any(|token| token.trim_ascii().eq_ignore_ascii_case(b"close"));
    Ok(RequestHead {
        method,
        path,
        authorization: header("Authorization")
            .and_then(|v| std::str::from_utf8(v).ok())
            .map(str::to_owned),
        keep_alive: request.version == Some(1) && !close,
    })
}

/// How reading a head ended.
#[derive(Debug, PartialEq, Eq)]
pub enum HeadRead {
    Head(RequestHead),
    Rejected(Rejection),
    /// The client closed (or reset) the connection, or was evicted.
    Closed,
    /// Nothing came by `idle_until`, or the head did not finish by its deadline.
    TimedOut,
}

/// When a head must arrive.
#[derive(Debug, Clone, Copy)]
pub struct Deadlines {
    /// Until when the connection may stay silent (no byte of the head yet).
    pub idle_until: Instant,
    /// When the whole head must be in; `None` means [`HEAD_TIMEOUT`] after its first byte.
    pub head_by: Option<Instant>,
}

/// Reads from `stream` into `buf` (which may already hold the start of the head) until a head
/// is complete, rejected, or late; the head's bytes are then removed from `buf`.
pub async fn read<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
    deadlines: Deadlines,
) -> HeadRead {
    let mut head_by = deadlines.head_by;
    loop {
        match parse(buf) {
            Parsed::Complete(head, used) => {
                buf.drain(..used);
                return HeadRead::Head(head);
            }
            Parsed::Rejected(rejection) => return HeadRead::Rejected(rejection),
            Parsed::Partial => {}
        }
        let deadline = match buf.is_empty() {
            true => deadlines.idle_until,
            false => *head_by.get_or_insert_with(|| Instant::now() + HEAD_TIMEOUT),
        };
        match read_some(stream, buf, deadline).await {
            Some(0) => return HeadRead::Closed,
            Some(_) => {}
            None => return HeadRead::TimedOut,
        }
    }
}

/// One read of at most [`READ_CHUNK_BYTES`] (never taking `buf` past [`MAX_HEAD_BYTES`]);
/// `Some(0)` at the end of input or on an error, `None` at the deadline.
async fn read_some<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
    deadline: Instant,
) -> Option<usize> {
    let filled = buf.len();
    let room = MAX_HEAD_BYTES
        .saturating_sub(filled)
        .clamp(1, READ_CHUNK_BYTES);
    // Exact, so the buffer's capacity never passes the head limit either.
    buf.reserve_exact(room);
    buf.resize(filled + room, 0);
    let read = async { Some(stream.read(&mut buf[filled..]).await.unwrap_or(0)) };
    let late = async {
        smol::Timer::at(deadline).await;
        None
    };
    let got = smol::future::or(read, late).await;
    buf.truncate(filled + got.unwrap_or(0));
    got
}

#[cfg(test)]
mod tests;
