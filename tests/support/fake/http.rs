//! Just enough HTTP/1.1 for the fake API server: read a request head and body, write a response.
//!
//! Written by hand (not async-h1's server) so fault injection can stop at any byte: stall after
//! the head, close mid-body, or send half a chunk.

use smol::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use std::io;

/// Largest request head accepted; kube clients send a few hundred bytes.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest request body accepted (the real apiserver's limit is 3 MiB per object).
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// A parsed request line and headers (header names lower-cased).
#[derive(Debug, Clone)]
pub struct RequestHead {
    pub method: String,
    pub path: String,
    pub query: String,
    pub http11: bool,
    pub headers: Vec<(String, String)>,
}

impl RequestHead {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// HTTP/1.1 keeps the connection unless told otherwise; HTTP/1.0 closes unless told otherwise.
    pub fn keep_alive(&self) -> bool {
        let connection = self.header("connection").map(str::to_ascii_lowercase);
        match connection.as_deref() {
            Some("close") => false,
            Some("keep-alive") => true,
            _ => self.http11,
        }
    }
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_string())
}

/// Reads the next request head; `None` when the client closed the connection between requests.
pub async fn read_head<S: AsyncRead + Unpin>(
    conn: &mut BufReader<S>,
) -> io::Result<Option<RequestHead>> {
    let mut line = String::new();
    if conn.read_line(&mut line).await? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid("malformed request line"));
    };
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut head = RequestHead {
        method: method.to_string(),
        path: path.to_string(),
        query: query.to_string(),
        http11: version == "HTTP/1.1",
        headers: Vec::new(),
    };
    let mut total = line.len();
    loop {
        line.clear();
        total += conn.read_line(&mut line).await?;
        if total > MAX_HEAD_BYTES {
            return Err(invalid("request head too large"));
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            return Ok(Some(head));
        }
        let (name, value) = trimmed
            .split_once(':')
            .ok_or_else(|| invalid("malformed header"))?;
        head.headers
            .push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
}

/// Reads the request body (Content-Length or chunked), answering `Expect: 100-continue` first.
pub async fn read_body<S: AsyncRead + AsyncWrite + Unpin>(
    conn: &mut BufReader<S>,
    head: &RequestHead,
) -> io::Result<Vec<u8>> {
    if head
        .header("expect")
        .is_some_and(|value| value.eq_ignore_ascii_case("100-continue"))
    {
        conn.get_mut()
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await?;
        conn.get_mut().flush().await?;
    }
    let chunked = head
        .header("transfer-encoding")
        .is_some_and(|value| value.to_ascii_lowercase().contains("chunked"));
    if chunked {
        return read_chunked(conn).await;
    }
    let length = match head.header("content-length") {
        Some(value) => value
            .parse::<usize>()
            .map_err(|_| invalid("bad content-length"))?,
        None => 0,
    };
    if length > MAX_BODY_BYTES {
        return Err(invalid("request body too large"));
    }
    let mut body = vec![0; length];
    conn.read_exact(&mut body).await?;
    Ok(body)
}

async fn read_chunked<S: AsyncRead + Unpin>(conn: &mut BufReader<S>) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        conn.read_line(&mut line).await?;
        let size_text = line.trim().split(';').next().unwrap_or("");
        let size = usize::from_str_radix(size_text, 16).map_err(|_| invalid("bad chunk size"))?;
        if body.len() + size > MAX_BODY_BYTES {
            return Err(invalid("request body too large"));
        }
        if size == 0 {
            loop {
                line.clear();
                if conn.read_line(&mut line).await? == 0 || line.trim().is_empty() {
                    return Ok(body);
                }
            }
        }
        let start = body.len();
        body.resize(start + size, 0);
        conn.read_exact(&mut body[start..]).await?;
        line.clear();
        conn.read_line(&mut line).await?;
    }
}

/// The response head: status line plus headers, ending with the blank line.
pub fn response_head(status: u16, headers: &[(String, String)]) -> Vec<u8> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason_phrase(status));
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.into_bytes()
}

/// Writes a complete response with a Content-Length body.
pub async fn write_full<W: AsyncWrite + Unpin>(
    out: &mut W,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    keep_alive: bool,
) -> io::Result<()> {
    let mut all = headers.to_vec();
    all.push(("Content-Length".into(), body.len().to_string()));
    if !keep_alive {
        all.push(("Connection".into(), "close".into()));
    }
    let mut bytes = response_head(status, &all);
    bytes.extend_from_slice(body);
    out.write_all(&bytes).await?;
    out.flush().await
}

/// Encodes one chunk of a chunked body.
pub fn chunk(data: &[u8]) -> Vec<u8> {
    let mut bytes = format!("{:x}\r\n", data.len()).into_bytes();
    bytes.extend_from_slice(data);
    bytes.extend_from_slice(b"\r\n");
    bytes
}

/// The last chunk of a chunked body.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        410 => "Gone",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Unknown",
    }
}
