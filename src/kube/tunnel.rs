//! An HTTP CONNECT tunnel through a proxy to the API server; TLS then runs inside it.

use super::Error;
use super::proxy::HttpProxy;
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::TcpStream;

/// Longest proxy reply head accepted; a real one is a few hundred bytes.
const MAX_REPLY_HEAD: usize = 16 * 1024;

/// Asks `proxy` (already connected on `tcp`) for a tunnel to `host:port`; on a 2xx answer the
/// stream is the tunnel.
pub async fn open(
    tcp: &mut TcpStream,
    proxy: &HttpProxy,
    host: &str,
    port: u16,
) -> Result<(), Error> {
    let authority = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
    if let Some(authorization) = &proxy.authorization {
        request.push_str(&format!("Proxy-Authorization: {authorization}\r\n"));
    }
    request.push_str("\r\n");
    let failed = |what: String| Error::Transport(format!("proxy {proxy:?}: {what}"));
    tcp.write_all(request.as_bytes())
        .await
        .map_err(|e| failed(format!("sending CONNECT {authority}: {e}")))?;
    let head = read_head(tcp)
        .await
        .map_err(|e| failed(format!("reading its answer to CONNECT {authority}: {e}")))?;
    let status_line = head.lines().next().unwrap_or_default();
    let code = status_line.split_whitespace().nth(1).unwrap_or_default();
    if code.len() == 3 && code.starts_with('2') {
        return Ok(());
    }
    Err(failed(format!(
        "CONNECT {authority} was answered {status_line:?}; check the proxy's allow list and credentials, or exempt the server with NO_PROXY"
    )))
}

/// The reply head up to the blank line, read a byte at a time so nothing of the tunnel's
/// own bytes is consumed.
async fn read_head(tcp: &mut TcpStream) -> std::io::Result<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_REPLY_HEAD {
            return Err(std::io::Error::other("the reply head is too long"));
        }
        if tcp.read(&mut byte).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        head.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}
