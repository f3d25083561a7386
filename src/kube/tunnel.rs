//! An HTTP CONNECT tunnel through a proxy to the API server; TLS then runs inside it.
//!
//! The proxy's reply head is read a byte at a time (so none of the tunnel's own bytes is
//! consumed), up to [`MAX_REPLY_HEAD`]: a proxy whose reply never ends costs that much at most,
//! and the dial's connect timeout bounds the time.

use super::Error;
use super::proxy::Proxy;
use smol::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use smol::net::TcpStream;

/// Longest proxy reply head accepted; a real one is a few hundred bytes.
pub const MAX_REPLY_HEAD: usize = 16 * 1024;

/// Asks `proxy` (already connected on `tcp`) for a tunnel to `host:port`; on a 2xx answer the
/// stream is the tunnel.
pub async fn open(tcp: &mut TcpStream, proxy: &Proxy, host: &str, port: u16) -> Result<(), Error> {
    let authority = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
    if let Some(authorization) = proxy.basic_authorization() {
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
    accepted(&head).map_err(|status_line| {
        failed(format!(
            "CONNECT {authority} was answered {status_line:?}; check the proxy's allow list and credentials, or exempt the server with NO_PROXY"
        ))
    })
}

/// Whether a CONNECT reply head opens the tunnel (a 2xx status); else its status line.
pub fn accepted(head: &str) -> Result<(), String> {
    let status_line = head.lines().next().unwrap_or_default();
    let code = status_line.split_whitespace().nth(1).unwrap_or_default();
    match code.len() == 3 && code.starts_with('2') {
        true => Ok(()),
        false => Err(status_line.chars().take(200).collect()),
    }
}

/// The reply head up to the blank line, read a byte at a time so nothing of the tunnel's
/// own bytes is consumed.
pub async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> std::io::Result<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_REPLY_HEAD {
            return Err(std::io::Error::other(format!(
                "the reply head is longer than {MAX_REPLY_HEAD} bytes"
            )));
        }
        if stream.read(&mut byte).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        head.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::property::{self, Pieces};

    const REPLY: &[u8] = include_bytes!("../../fuzz/seeds/connect_reply/squid-200.http");

    fn head_of(pieces: Pieces) -> std::io::Result<String> {
        let mut stream = pieces;
        smol::block_on(read_head(&mut stream))
    }

    #[test]
    fn a_2xx_reply_opens_the_tunnel_and_others_name_their_status() {
        let head = head_of(Pieces::of(REPLY, 7)).expect("head");
        assert_eq!(accepted(&head), Ok(()));
        let refused = "HTTP/1.1 407 Proxy Authentication Required\r\n\r\n";
        assert_eq!(
            accepted(refused),
            Err("HTTP/1.1 407 Proxy Authentication Required".into())
        );
        assert!(accepted("garbage").is_err());
    }

    #[test]
    fn a_reply_that_never_ends_is_cut_at_the_limit() {
        let mut endless = b"HTTP/1.1 200 OK\r\nX-Pad: ".to_vec();
        endless.extend(std::iter::repeat_n(b'x', 1024 * 1024));
        let err = head_of(Pieces::of(&endless, 4096)).unwrap_err();
        assert!(
            err.to_string().contains(&MAX_REPLY_HEAD.to_string()),
            "{err}"
        );
        let err = head_of(Pieces::of(b"HTTP/1.1 200 OK\r\n", 4)).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn property_mutated_replies_are_judged_without_panic_or_growth() {
        property::check("connect reply", |random| {
            let input = property::mutate(REPLY, random);
            let pieces = Pieces::random_split(&input, random);
            if let Ok(head) = head_of(pieces) {
                assert!(head.len() <= MAX_REPLY_HEAD);
                let _ = accepted(&head);
            }
        });
    }
}
