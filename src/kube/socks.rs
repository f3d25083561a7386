//! A SOCKS5 tunnel (RFC 1928) through a proxy to the API server, with username/password
//! authentication (RFC 1929) when the proxy URL carries credentials; TLS then runs inside it.
//!
//! The API server's host name goes to the proxy as a name (address type 3), as Go's SOCKS
//! dialer sends it: the proxy resolves it, so a name only the proxy's network knows works, and
//! TLS still verifies the server's certificate against that name. Every reply has a known
//! length and is read exactly, so none of the tunnel's own bytes is consumed; the dial's
//! connect timeout bounds the time.

use super::Error;
use super::proxy::Proxy;
use smol::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use std::net::IpAddr;

const VERSION: u8 = 5;
const NO_AUTHENTICATION: u8 = 0;
const USERNAME_PASSWORD: u8 = 2;
const NO_ACCEPTABLE_METHOD: u8 = 0xff;
const CONNECT: u8 = 1;
const IPV4: u8 = 1;
const DOMAIN: u8 = 3;
const IPV6: u8 = 4;

/// Asks `proxy` (already connected on `stream`) for a tunnel to `host:port`; on success the
/// stream is the tunnel.
pub async fn open<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    proxy: &Proxy,
    host: &str,
    port: u16,
) -> Result<(), Error> {
    let failed = |what: String| Error::Transport(format!("SOCKS5 proxy {proxy:?}: {what}"));
    let io = |step: &'static str| move |e: std::io::Error| failed(format!("{step}: {e}"));
    let request = connect_request(host, port).map_err(failed)?;
    stream
        .write_all(&greeting(proxy))
        .await
        .map_err(io("sending the greeting"))?;
    let mut choice = [0u8; 2];
    stream
        .read_exact(&mut choice)
        .await
        .map_err(io("reading its choice of authentication"))?;
    match choice {
        [VERSION, NO_AUTHENTICATION] => {}
        [VERSION, USERNAME_PASSWORD] if proxy.credentials.is_some() => {
            authenticate(stream, proxy).await.map_err(failed)?;
        }
        [VERSION, NO_ACCEPTABLE_METHOD] if proxy.credentials.is_none() => {
            return Err(failed(
                "it requires authentication; put user:password@ in the proxy URL".into(),
            ));
        }
        other => {
            return Err(failed(format!(
                "it answered the greeting with {other:?}, which is no authentication offered"
            )));
        }
    }
    stream
        .write_all(&request)
        .await
        .map_err(io("sending CONNECT"))?;
    read_reply(stream)
        .await
        .map_err(|e| failed(format!("CONNECT {host}:{port}: {e}")))
}

/// Version and the methods offered: none, and username/password when there are credentials.
fn greeting(proxy: &Proxy) -> Vec<u8> {
    match proxy.credentials {
        None => vec![VERSION, 1, NO_AUTHENTICATION],
        Some(_) => vec![VERSION, 2, NO_AUTHENTICATION, USERNAME_PASSWORD],
    }
}

/// RFC 1929: version 1, the user and the password, each with its length; status 0 is success.
async fn authenticate<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    proxy: &Proxy,
) -> Result<(), String> {
    let (user, password) = proxy.credentials.as_ref().ok_or("no credentials")?;
    let mut request = vec![1];
    for field in [user, password] {
        let len = u8::try_from(field.len()).map_err(|_| "a credential is over 255 bytes")?;
        request.push(len);
        request.extend_from_slice(field.as_bytes());
    }
    let mut status = [0u8; 2];
    let exchange = async {
        stream.write_all(&request).await?;
        stream.read_exact(&mut status).await
    };
    exchange.await.map_err(|e| format!("authenticating: {e}"))?;
    match status[1] {
        0 => Ok(()),
        _ => Err("it refused the user and password of the proxy URL; check them".into()),
    }
}

/// The CONNECT request: an IP as itself, anything else as a name.
fn connect_request(host: &str, port: u16) -> Result<Vec<u8>, String> {
    let mut request = vec![VERSION, CONNECT, 0];
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => {
            request.push(IPV4);
            request.extend_from_slice(&ip.octets());
        }
        Ok(IpAddr::V6(ip)) => {
            request.push(IPV6);
            request.extend_from_slice(&ip.octets());
        }
        Err(_) => {
            let len = u8::try_from(host.len())
                .map_err(|_| format!("the host name {host:?} is over 255 bytes"))?;
            request.extend_from_slice(&[DOMAIN, len]);
            request.extend_from_slice(host.as_bytes());
        }
    }
    request.extend_from_slice(&port.to_be_bytes());
    Ok(request)
}

/// Reads the CONNECT reply, bound address included, exactly; Ok when it succeeded.
async fn read_reply<S: AsyncRead + Unpin>(stream: &mut S) -> Result<(), String> {
    let reading = |e: std::io::Error| format!("reading the reply: {e}");
    let mut head = [0u8; 4];
    stream.read_exact(&mut head).await.map_err(reading)?;
    if head[0] != VERSION {
        return Err(format!("the reply has version {}, not 5", head[0]));
    }
    if head[1] != 0 {
        return Err(format!("the proxy answered: {}", reply_meaning(head[1])));
    }
    let address_len = match head[3] {
        IPV4 => 4,
        IPV6 => 16,
        DOMAIN => {
            let mut len = [0u8; 1];
            stream.read_exact(&mut len).await.map_err(reading)?;
            usize::from(len[0])
        }
        other => return Err(format!("the reply has address type {other}")),
    };
    let mut rest = vec![0u8; address_len + 2];
    stream.read_exact(&mut rest).await.map_err(reading)
}

/// RFC 1928's reply codes.
fn reply_meaning(code: u8) -> String {
    let meaning = match code {
        1 => "general SOCKS server failure",
        2 => "connection not allowed by ruleset",
        3 => "network unreachable",
        4 => "host unreachable",
        5 => "connection refused",
        6 => "TTL expired",
        7 => "command not supported",
        8 => "address type not supported",
        _ => "an unknown error",
    };
    format!("{meaning} (code {code})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::proxy::parse_proxy_url;
    use crate::property::{self, Pieces};

    fn reply_of(bytes: &[u8]) -> Result<(), String> {
        smol::block_on(read_reply(&mut Pieces::of(bytes, 3)))
    }

    #[test]
    fn names_go_to_the_proxy_as_names_and_ips_as_ips() {
        let named = connect_request("api.example", 6443).unwrap();
        assert_eq!(named, b"\x05\x01\x00\x03\x0bapi.example\x19\x2b");
        let v4 = connect_request("10.0.0.1", 443).unwrap();
        assert_eq!(v4, [5, 1, 0, 1, 10, 0, 0, 1, 1, 187]);
        let v6 = connect_request("::1", 443).unwrap();
        assert_eq!((v6[3], v6.len()), (IPV6, 4 + 16 + 2));
        let err = connect_request(&"a".repeat(256), 443).unwrap_err();
        assert!(err.contains("255"), "{err}");
    }

    #[test]
    fn username_password_is_offered_only_with_credentials() {
        let plain = parse_proxy_url("socks5://p:1080", "proxy-url").unwrap();
        assert_eq!(greeting(&plain), [5, 1, 0]);
        let with = parse_proxy_url("socks5://u:pw@p:1080", "proxy-url").unwrap();
        assert_eq!(greeting(&with), [5, 2, 0, 2]);
    }

    #[test]
    fn replies_are_read_to_their_end_and_failures_named() {
        assert_eq!(reply_of(&[5, 0, 0, 1, 127, 0, 0, 1, 0, 80]), Ok(()));
        assert_eq!(reply_of(b"\x05\x00\x00\x03\x04host\x00\x50"), Ok(()));
        let err = reply_of(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0]).unwrap_err();
        assert!(err.contains("connection refused"), "{err}");
        assert!(reply_of(&[4, 0, 0, 1]).unwrap_err().contains("version"));
        assert!(reply_of(&[5, 0, 0, 1, 127]).is_err());
    }

    #[test]
    fn a_reply_leaves_the_tunnel_bytes_unread() {
        let mut stream = Pieces::of(b"\x05\x00\x00\x01\x7f\x00\x00\x01\x00\x50HTTP", 1);
        smol::block_on(async {
            read_reply(&mut stream).await.unwrap();
            let mut rest = String::new();
            stream.read_to_string(&mut rest).await.unwrap();
            assert_eq!(rest, "HTTP");
        });
    }

    #[test]
    fn property_mutated_replies_are_judged_without_panic() {
        let reply: &[u8] = b"\x05\x00\x00\x03\x09localhost\x19\x2b";
        property::check("socks5 reply", |random| {
            let input = property::mutate(reply, random);
            let _ = smol::block_on(read_reply(&mut Pieces::random_split(&input, random)));
        });
    }
}
