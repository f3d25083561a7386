//! A hostile HTTP CONNECT proxy between skiff and the real API server: it opens each tunnel,
//! terminates TLS with a certificate of its own (skiff's kubeconfig trusts its CA, as with a
//! corporate TLS-inspecting proxy), passes requests on to the API server, and answers chosen
//! ones itself, with replies built to exhaust a client's memory.
//!
//! Why: the client's parsers (status line, headers, chunks, watch lines, the CONNECT reply) are
//! only shown to be bounded by bytes a real client never sees from a healthy server. Each
//! endless reply stops after [`ENDLESS_CAP`] bytes, so a client without bounds shows a large,
//! measurable growth instead of taking the test machine's memory.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use async_native_tls::{Certificate, TlsAcceptor, TlsConnector};
use smol::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use smol::net::{TcpListener, TcpStream};

use super::fake::tls::{PKCS12_PASSWORD, generate};

/// The most any endless reply sends.
pub const ENDLESS_CAP: usize = 256 << 20;
/// Longest request or CONNECT head the proxy reads.
const MAX_HEAD: usize = 64 * 1024;

/// A reply the proxy sends instead of the API server's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mangle {
    /// `HTTP/1.1 200 ` and then no line end, ever.
    EndlessStatusLine,
    /// A head with 200 header fields.
    ManyHeaders,
    /// A chunk announcing 2^63 bytes, then an object that never ends.
    AbsurdChunk,
    /// A watch whose first line never ends.
    EndlessWatchLine,
    /// A CONNECT reply that never ends (the tunnel is never opened).
    EndlessConnectReply,
}

/// Which requests get a mangled reply: the first `times` whose request line contains `needle`
/// (`CONNECT` for the tunnel itself).
#[derive(Debug, Clone)]
pub struct Rule {
    pub needle: &'static str,
    pub mangle: Mangle,
    pub times: usize,
}

/// A running proxy; its thread ends with the test process.
pub struct HostileProxy {
    port: u16,
    ca_pem: Vec<u8>,
    served: Arc<Mutex<Vec<Mangle>>>,
    _thread: JoinHandle<()>,
}

struct Shared {
    upstream_ca: Certificate,
    acceptor: TlsAcceptor,
    rules: Mutex<Vec<Rule>>,
    served: Arc<Mutex<Vec<Mangle>>>,
}

impl HostileProxy {
    /// Proxies to the API server whose CA is `upstream_ca_pem`, mangling by `rules`.
    pub fn start(upstream_ca_pem: &[u8], rules: Vec<Rule>) -> HostileProxy {
        let material = generate().expect("the proxy's TLS identity");
        let identity = native_tls::Identity::from_pkcs12(&material.server_pkcs12, PKCS12_PASSWORD)
            .expect("the proxy's identity");
        let acceptor =
            TlsAcceptor::from(native_tls::TlsAcceptor::new(identity).expect("TLS acceptor"));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("address").port();
        let served = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::new(Shared {
            upstream_ca: Certificate::from_pem(upstream_ca_pem).expect("the API server's CA"),
            acceptor,
            rules: Mutex::new(rules),
            served: served.clone(),
        });
        let thread = std::thread::spawn(move || {
            let executor = smol::Executor::new();
            smol::block_on(executor.run(async {
                let listener = TcpListener::try_from(listener).expect("async listener");
                while let Ok((client, _)) = listener.accept().await {
                    executor.spawn(tunnel(client, shared.clone())).detach();
                }
            }));
        });
        HostileProxy {
            port,
            ca_pem: material.ca_pem,
            served,
            _thread: thread,
        }
    }

    /// `http://127.0.0.1:<port>`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The CA a client must trust to accept the proxy's certificate.
    pub fn ca_pem(&self) -> &[u8] {
        &self.ca_pem
    }

    /// The mangled replies sent so far.
    pub fn served(&self) -> Vec<Mangle> {
        self.served
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Shared {
    /// The mangle for a request line, counting it down (and recording it) if one applies.
    fn take(&self, request_line: &str) -> Option<Mangle> {
        let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        let rule = rules
            .iter_mut()
            .find(|r| r.times > 0 && request_line.contains(r.needle))?;
        rule.times -= 1;
        let mangle = rule.mangle;
        self.served
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(mangle);
        Some(mangle)
    }
}

async fn tunnel(mut client: TcpStream, shared: Arc<Shared>) {
    let Some(connect) = read_head(&mut client).await else {
        return;
    };
    let connect_line = connect.lines().next().unwrap_or_default().to_owned();
    let Some(authority) = connect_line.split_whitespace().nth(1).map(str::to_owned) else {
        return;
    };
    if shared.take(&connect_line) == Some(Mangle::EndlessConnectReply) {
        return endless(
            &mut client,
            b"HTTP/1.1 200 Connection established\r\nX-Pad: ",
            b'x',
        )
        .await;
    }
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    let Ok(mut tls) = shared.acceptor.accept(client).await else {
        return;
    };
    let Some(head) = read_head(&mut tls).await else {
        return;
    };
    let request_line = head.lines().next().unwrap_or_default().to_owned();
    match shared.take(&request_line) {
        Some(mangle) => mangled(&mut tls, mangle).await,
        None => relay(tls, head, &authority, &shared.upstream_ca).await,
    }
}

/// Reads up to the blank line that ends a head (never past it: bodies here follow only heads
/// that say how long they are, and are relayed as they come).
async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_HEAD || stream.read(&mut byte).await.ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    String::from_utf8(head).ok()
}

async fn mangled<S: AsyncWrite + Unpin>(stream: &mut S, mangle: Mangle) {
    const CHUNKED: &[u8] =
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    match mangle {
        Mangle::EndlessStatusLine => endless(stream, b"HTTP/1.1 200 ", b'O').await,
        Mangle::ManyHeaders => {
            let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
            for n in 0..200 {
                head.extend(format!("X-Header-{n}: v\r\n").bytes());
            }
            head.extend(b"Content-Length: 2\r\n\r\n{}");
            let _ = stream.write_all(&head).await;
        }
        Mangle::AbsurdChunk => {
            let mut start = CHUNKED.to_vec();
            start.extend(
                b"8000000000000000\r\n{\"kind\":\"List\",\"items\":[{\"metadata\":{\"name\":\"",
            );
            endless(stream, &start, b'x').await
        }
        Mangle::EndlessWatchLine => endless_chunks(stream, CHUNKED).await,
        Mangle::EndlessConnectReply => {}
    }
}

/// `start`, then `filler` bytes until [`ENDLESS_CAP`] or the client closes.
async fn endless<S: AsyncWrite + Unpin>(stream: &mut S, start: &[u8], filler: u8) {
    if stream.write_all(start).await.is_err() {
        return;
    }
    let piece = vec![filler; 64 * 1024];
    let mut sent = 0;
    while sent < ENDLESS_CAP && stream.write_all(&piece).await.is_ok() {
        sent += piece.len();
    }
}

/// A chunked body of well-formed chunks whose bytes hold no line end.
async fn endless_chunks<S: AsyncWrite + Unpin>(stream: &mut S, head: &[u8]) {
    if stream.write_all(head).await.is_err() {
        return;
    }
    let mut chunk = format!("{:x}\r\n", 64 * 1024).into_bytes();
    chunk.extend(vec![b'x'; 64 * 1024]);
    chunk.extend(b"\r\n");
    let mut sent = 0;
    while sent < ENDLESS_CAP && stream.write_all(&chunk).await.is_ok() {
        sent += chunk.len();
    }
}

/// Passes the request on to the API server and relays both ways until either side closes.
async fn relay<S>(client: S, head: String, authority: &str, ca: &Certificate)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Ok(tcp) = TcpStream::connect(authority).await else {
        return;
    };
    let host = authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host);
    let connector = TlsConnector::new().add_root_certificate(ca.clone());
    let Ok(mut upstream) = connector.connect(host.trim_matches(['[', ']']), tcp).await else {
        return;
    };
    if upstream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let (mut client_in, mut client_out) = smol::io::split(client);
    let (mut upstream_in, mut upstream_out) = smol::io::split(upstream);
    let up = async {
        let _ = smol::io::copy(&mut client_in, &mut upstream_out).await;
    };
    let down = async {
        let _ = smol::io::copy(&mut upstream_in, &mut client_out).await;
    };
    smol::future::or(up, down).await;
}
