//! A tiny HTTP CONNECT proxy on loopback that records every tunnel it carried.
//!
//! Why: the proxy tests must see, from the proxy's side, which connections went through it.
//! Every tunnel leads to 127.0.0.1 on the requested port, whatever host was asked for, so a
//! test can name a server that does not resolve (`api.skiff.test`) and still reach a local one:
//! only a connection through the proxy can then succeed.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// One CONNECT the proxy served.
#[derive(Clone, Debug)]
pub struct Tunnel {
    /// `host:port` as the client asked for it.
    pub authority: String,
    pub proxy_authorization: Option<String>,
}

/// A loopback listener that serves each connection on a thread of its own, letting it record
/// what it carried; dropping it stops accepting (open tunnels run until either side closes).
/// The accept loop of the test proxies (this one and `super::socks`).
pub struct Recording<T> {
    port: u16,
    records: Arc<Mutex<Vec<T>>>,
    stop: Arc<AtomicBool>,
}

impl<T: Clone + Send + 'static> Recording<T> {
    pub fn start(serve: impl Fn(TcpStream, &Mutex<Vec<T>>) + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the test proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let records = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen, stopped, serve) = (records.clone(), stop.clone(), Arc::new(serve));
        thread::spawn(move || {
            for client in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    break;
                }
                if let Ok(client) = client {
                    let (seen, serve) = (seen.clone(), serve.clone());
                    thread::spawn(move || serve(client, &seen));
                }
            }
        });
        Recording {
            port,
            records,
            stop,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// What was recorded so far, in order.
    pub fn records(&self) -> Vec<T> {
        self.records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl<T> Drop for Recording<T> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// A running CONNECT proxy.
pub struct ConnectProxy(Recording<Tunnel>);

impl ConnectProxy {
    pub fn start() -> ConnectProxy {
        ConnectProxy(Recording::start(serve))
    }

    /// `http://127.0.0.1:<port>`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.0.port())
    }

    /// The tunnels opened so far, in order.
    pub fn tunnels(&self) -> Vec<Tunnel> {
        self.0.records()
    }
}

fn serve(client: TcpStream, tunnels: &Mutex<Vec<Tunnel>>) {
    let Ok(reader) = client.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(reader);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut proxy_authorization = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("proxy-authorization")
        {
            proxy_authorization = Some(value.trim().to_owned());
        }
    }
    let mut parts = request_line.split_whitespace();
    let (Some("CONNECT"), Some(authority)) = (parts.next(), parts.next()) else {
        let _ =
            (&client).write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    let port = authority
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse::<u16>().ok());
    let upstream = port.and_then(|port| TcpStream::connect(("127.0.0.1", port)).ok());
    let Some(upstream) = upstream else {
        let _ = (&client).write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    tunnels
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Tunnel {
            authority: authority.to_owned(),
            proxy_authorization,
        });
    if (&client)
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .is_err()
    {
        return;
    }
    // The client sends nothing more until it has the 200, so the reader buffered nothing.
    pipe(client, upstream);
}

/// Copies both ways until either side closes, then closes both.
pub fn pipe(client: TcpStream, upstream: TcpStream) {
    let (Ok(client_in), Ok(upstream_out)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let forward = thread::spawn(move || copy(client_in, upstream_out));
    copy(upstream, client);
    let _ = forward.join();
}

fn copy(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Both);
    let _ = from.shutdown(Shutdown::Both);
}
