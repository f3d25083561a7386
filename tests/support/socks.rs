//! A tiny SOCKS5 proxy (RFC 1928, with RFC 1929 username/password when given credentials) on
//! loopback that records every tunnel it carried.
//!
//! Why: the SOCKS5 tests must see, from the proxy's side, which connections went through it,
//! which address type named the server and which credentials were presented. As the CONNECT
//! proxy in `super::proxy`, every tunnel leads to 127.0.0.1 on the requested port whatever
//! host was asked for, so a server named `api.skiff.test`, which does not resolve, is reached
//! only through the proxy.

use super::proxy::Recording;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;

/// One CONNECT the proxy served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SocksTunnel {
    /// 1 (IPv4), 3 (a name) or 4 (IPv6), as the client sent it.
    pub address_type: u8,
    /// `host:port` as the client asked for it.
    pub authority: String,
    /// The user and password the client authenticated with.
    pub credentials: Option<(String, String)>,
}

/// A running SOCKS5 proxy.
pub struct SocksProxy(Recording<SocksTunnel>);

impl SocksProxy {
    /// A proxy that requires no authentication.
    pub fn start() -> SocksProxy {
        SocksProxy::start_requiring(None)
    }

    /// A proxy that requires `credentials` (user, password) when given.
    pub fn start_requiring(credentials: Option<(&str, &str)>) -> SocksProxy {
        let required = credentials.map(|(u, p)| (u.to_owned(), p.to_owned()));
        SocksProxy(Recording::start(move |client, tunnels| {
            serve(client, required.as_ref(), tunnels)
        }))
    }

    /// `127.0.0.1:<port>`
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.0.port())
    }

    /// The tunnels opened so far, in order.
    pub fn tunnels(&self) -> Vec<SocksTunnel> {
        self.0.records()
    }
}

fn serve(
    mut client: TcpStream,
    required: Option<&(String, String)>,
    tunnels: &Mutex<Vec<SocksTunnel>>,
) {
    let Some(credentials) = negotiate(&mut client, required) else {
        return;
    };
    let Some((address_type, host, port)) = read_connect(&mut client) else {
        return;
    };
    let Ok(upstream) = TcpStream::connect(("127.0.0.1", port)) else {
        // Connection refused, bound address 0.0.0.0:0.
        let _ = client.write_all(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0]);
        return;
    };
    tunnels
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(SocksTunnel {
            address_type,
            authority: format!("{host}:{port}"),
            credentials,
        });
    // Succeeded, bound to 127.0.0.1:0 (a real proxy names its outgoing address).
    if client.write_all(&[5, 0, 0, 1, 127, 0, 0, 1, 0, 0]).is_ok() {
        super::proxy::pipe(client, upstream);
    }
}

/// The greeting and, when `required`, the RFC 1929 exchange; the credentials presented, or
/// None when the client is turned away.
fn negotiate(
    client: &mut TcpStream,
    required: Option<&(String, String)>,
) -> Option<Option<(String, String)>> {
    let [version, count] = read_array(client)?;
    let methods = read_vec(client, count.into())?;
    let wanted = if required.is_some() { 2 } else { 0 };
    if version != 5 || !methods.contains(&wanted) {
        let _ = client.write_all(&[5, 0xff]);
        return None;
    }
    client.write_all(&[5, wanted]).ok()?;
    let Some(required) = required else {
        return Some(None);
    };
    let [_version, user_len] = read_array(client)?;
    let user = String::from_utf8(read_vec(client, user_len.into())?).ok()?;
    let [password_len] = read_array(client)?;
    let password = String::from_utf8(read_vec(client, password_len.into())?).ok()?;
    let presented = (user, password);
    let ok = presented == *required;
    client.write_all(&[1, if ok { 0 } else { 1 }]).ok()?;
    ok.then_some(Some(presented))
}

/// The CONNECT request: address type, host and port.
fn read_connect(client: &mut TcpStream) -> Option<(u8, String, u16)> {
    let [_version, command, _reserved, address_type] = read_array(client)?;
    let host = match address_type {
        1 => std::net::Ipv4Addr::from(read_array::<4>(client)?).to_string(),
        4 => format!("[{}]", std::net::Ipv6Addr::from(read_array::<16>(client)?)),
        3 => {
            let [len] = read_array(client)?;
            String::from_utf8(read_vec(client, len.into())?).ok()?
        }
        _ => return None,
    };
    let port = u16::from_be_bytes(read_array(client)?);
    if command != 1 {
        // Command not supported.
        let _ = client.write_all(&[5, 7, 0, 1, 0, 0, 0, 0, 0, 0]);
        return None;
    }
    Some((address_type, host, port))
}

fn read_array<const N: usize>(client: &mut TcpStream) -> Option<[u8; N]> {
    let mut bytes = [0u8; N];
    client.read_exact(&mut bytes).ok()?;
    Some(bytes)
}

fn read_vec(client: &mut TcpStream, len: usize) -> Option<Vec<u8>> {
    let mut bytes = vec![0u8; len];
    client.read_exact(&mut bytes).ok()?;
    Some(bytes)
}
