//! A response, written whole within [`WRITE_TIMEOUT`], and the careful close after a refusal.
//!
//! Responses are small and complete (`Content-Length`, never chunked), so each is one buffer and
//! one write. After refusing a request the connection is closed for writing, then up to
//! [`DRAIN_BYTES`] of whatever the client still sends is read and dropped for at most
//! [`DRAIN_TIMEOUT`]: closing a socket with unread input makes the kernel send a reset, which
//! can destroy the refusal before the client reads it.

use std::time::Instant;

use http_types::StatusCode;
use smol::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::limits::{DRAIN_BYTES, DRAIN_TIMEOUT, READ_CHUNK_BYTES, WRITE_TIMEOUT};

pub const TEXT: &str = "text/plain; charset=utf-8";

/// A complete response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: StatusCode,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
}

impl Reply {
    /// A `text/plain` reply.
    pub fn text(status: StatusCode, body: &str) -> Reply {
        Reply {
            status,
            content_type: TEXT,
            headers: Vec::new(),
            body: body.to_owned(),
        }
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Reply {
        self.headers.push((name, value.into()));
        self
    }

    /// The bytes on the wire; without the body for a HEAD request, and with `Connection:
    /// close` when the connection ends after it.
    pub fn encode(&self, with_body: bool, close: bool) -> Vec<u8> {
        let code = u16::from(self.status);
        let reason = self.status.canonical_reason();
        let mut head = format!(
            "HTTP/1.1 {code} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
            self.content_type,
            self.body.len()
        );
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if close {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        if with_body {
            bytes.extend_from_slice(self.body.as_bytes());
        }
        bytes
    }
}

/// Writes `bytes` and flushes within [`WRITE_TIMEOUT`]; `false` if that failed or took too long.
pub async fn send<S: AsyncWrite + Unpin>(stream: &mut S, bytes: &[u8]) -> bool {
    let write = async { stream.write_all(bytes).await.is_ok() && stream.flush().await.is_ok() };
    let late = async {
        smol::Timer::after(WRITE_TIMEOUT).await;
        false
    };
    smol::future::or(write, late).await
}

/// Closes `stream` for writing (TLS: close_notify first), then reads and drops what the client
/// still sends on `socket`, within [`DRAIN_BYTES`] and [`DRAIN_TIMEOUT`], reusing `buf`.
pub async fn close_after_refusal<S, R>(stream: &mut S, socket: &mut R, buf: &mut Vec<u8>)
where
    S: AsyncWrite + Unpin,
    R: AsyncRead + Unpin,
{
    let until = Instant::now() + DRAIN_TIMEOUT;
    let drain = async {
        let _ = stream.close().await;
        buf.clear();
        buf.resize(READ_CHUNK_BYTES, 0);
        let mut drained = 0;
        while drained < DRAIN_BYTES {
            match socket.read(buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    };
    let late = async {
        smol::Timer::at(until).await;
    };
    smol::future::or(drain, late).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_encodes_its_length_headers_and_close() {
        let reply =
            Reply::text(StatusCode::Unauthorized, "no").with_header("WWW-Authenticate", "Bearer");
        let text = String::from_utf8(reply.encode(true, true)).expect("utf-8");
        assert_eq!(
            text,
            "HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\nWWW-Authenticate: Bearer\r\nConnection: close\r\n\r\nno"
        );
        let head_only = String::from_utf8(reply.encode(false, false)).expect("utf-8");
        assert!(head_only.ends_with("Content-Length: 2\r\nWWW-Authenticate: Bearer\r\n\r\n"));
    }
}
