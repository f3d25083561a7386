//! Hostile clients for the port tests and `make compare`: thousands of connections to one port,
//! each doing one bad thing, and when the server closed each of them.
//!
//! Why: the probe and metrics ports are reachable before anything is authenticated, so their
//! bounds are only shown by what an attacker would do: hold connections open with a partial
//! request (slowloris), start TLS handshakes and never finish them, or send a header that never
//! ends. The clients run on a thread of their own with their own executor, so a busy test
//! thread cannot slow the attack down, and the attack cannot slow the test's own checks.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};
use skiff::kube::tls_stream::{self, TlsStream};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::TcpStream;

/// The start of a real ClientHello (from `openssl s_client`): its record header announces the
/// whole message, but only these bytes are ever sent.
const CLIENT_HELLO_START: &[u8] = &[
    0x16, 0x03, 0x01, 0x01, 0x2c, 0x01, 0x00, 0x01, 0x28, 0x03, 0x03, 0x5e, 0x9b, 0x61, 0x0a, 0x36,
    0x42, 0x1a, 0x7e, 0x83, 0x9d, 0x3c, 0x22, 0x0b, 0x4f, 0x16, 0x95, 0xc8, 0x71, 0x2a,
];
/// How long one connection attempt may take before it counts as refused.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of a giant header is written at a time.
const WRITE_PIECE: usize = 64 * 1024;

/// What each hostile connection does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attack {
    /// A partial request line (`GET /healthz HT`), then silence.
    Slowloris,
    /// Over TLS: a finished handshake, then a partial request line and silence.
    SlowlorisTls,
    /// Every other connection sends the start of a TLS ClientHello, then silence; the rest
    /// send nothing (as in the report that started this).
    HalfHandshake,
    /// A request head with one header that never ends (`bytes` long, as fast as accepted).
    GiantHeader { bytes: usize },
    /// The same over TLS.
    GiantHeaderTls { bytes: usize },
}

impl Attack {
    pub fn label(&self) -> &'static str {
        match self {
            Attack::Slowloris | Attack::SlowlorisTls => "slowloris",
            Attack::HalfHandshake => "TLS half-handshakes",
            Attack::GiantHeader { .. } | Attack::GiantHeaderTls { .. } => "giant header",
        }
    }
}

/// One connection's fate, times from when the flood started.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fate {
    /// When it was connected (and its bytes sent); `None` if it never connected.
    pub opened: Option<Duration>,
    /// When the server closed or reset it; `None` while it is still open.
    pub closed: Option<Duration>,
}

impl Fate {
    /// How long the server kept it open.
    pub fn held(&self) -> Option<Duration> {
        Some(self.closed?.saturating_sub(self.opened?))
    }
}

/// A running flood; dropping it closes every connection it still holds.
pub struct Flood {
    pub started: Instant,
    fates: Arc<Mutex<Vec<Fate>>>,
    stop: Option<smol::channel::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Flood {
    /// Opens `connections` connections to `addr`, each doing `attack`, as fast as they connect.
    pub fn start(addr: SocketAddr, attack: Attack, connections: usize) -> Flood {
        let fates = Arc::new(Mutex::new(vec![Fate::default(); connections]));
        let started = Instant::now();
        let (stop, stopped) = smol::channel::bounded::<()>(1);
        let shared = fates.clone();
        let thread = std::thread::spawn(move || {
            let executor = smol::LocalExecutor::new();
            let tasks: Vec<_> = (0..connections)
                .map(|n| executor.spawn(one(addr, attack, n, started, shared.clone())))
                .collect();
            let all = async {
                for task in tasks {
                    task.await;
                }
            };
            let until_stopped = async {
                let _ = stopped.recv().await;
            };
            smol::block_on(executor.run(smol::future::or(all, until_stopped)));
        });
        Flood {
            started,
            fates,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn fates(&self) -> Vec<Fate> {
        self.fates.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Connections that connected, and of those, the ones still open.
    pub fn counts(&self) -> (usize, usize) {
        let fates = self.fates();
        let opened = fates.iter().filter(|f| f.opened.is_some()).count();
        let open = fates
            .iter()
            .filter(|f| f.opened.is_some() && f.closed.is_none())
            .count();
        (opened, open)
    }

    /// Waits until every connection that connected has been closed, or `limit` passes.
    pub fn wait_all_closed(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.counts().1 == 0 && self.thread.as_ref().is_some_and(|t| t.is_finished()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.counts().1 == 0
    }

    /// Whether every connection has at least tried to connect.
    pub fn all_attempted(&self) -> bool {
        self.fates()
            .iter()
            .all(|f| f.opened.is_some() || f.closed.is_some())
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One hostile connection: connect, misbehave, then wait for the server to close it.
async fn one(
    addr: SocketAddr,
    attack: Attack,
    n: usize,
    started: Instant,
    fates: Arc<Mutex<Vec<Fate>>>,
) {
    let record = |update: &dyn Fn(&mut Fate)| {
        if let Some(fate) = fates.lock().unwrap_or_else(|e| e.into_inner()).get_mut(n) {
            update(fate);
        }
    };
    let connect = async { TcpStream::connect(addr).await.ok() };
    let late = async {
        smol::Timer::after(CONNECT_TIMEOUT).await;
        None
    };
    let Some(tcp) = smol::future::or(connect, late).await else {
        let at = started.elapsed();
        record(&|fate| fate.closed = Some(at));
        return;
    };
    let at = started.elapsed();
    record(&|fate| fate.opened = Some(at));
    match attack {
        Attack::Slowloris => misbehave(tcp, b"GET /healthz HT", 0).await,
        Attack::HalfHandshake if n.is_multiple_of(2) => misbehave(tcp, CLIENT_HELLO_START, 0).await,
        Attack::HalfHandshake => misbehave(tcp, b"", 0).await,
        Attack::GiantHeader { bytes } => {
            misbehave(tcp, b"GET /healthz HTTP/1.1\r\nX-Flood: ", bytes).await
        }
        Attack::SlowlorisTls => {
            if let Some(stream) = tls(tcp).await {
                misbehave(stream, b"GET /metrics HT", 0).await
            }
        }
        Attack::GiantHeaderTls { bytes } => {
            if let Some(stream) = tls(tcp).await {
                misbehave(stream, b"GET /metrics HTTP/1.1\r\nX-Flood: ", bytes).await
            }
        }
    }
    let at = started.elapsed();
    record(&|fate| fate.closed = Some(at));
}

/// A TLS session over `tcp`, trusting any certificate (as scrapers of a self-signed one do).
/// One OpenSSL context serves every connection: building one per connection (as
/// async-native-tls does) would make the attacker, not the server, the bottleneck.
async fn tls(tcp: TcpStream) -> Option<TlsStream<TcpStream>> {
    static CONTEXT: OnceLock<Option<SslConnector>> = OnceLock::new();
    let context = CONTEXT.get_or_init(|| {
        let mut builder = SslConnector::builder(SslMethod::tls_client()).ok()?;
        builder.set_verify(SslVerifyMode::NONE);
        Some(builder.build())
    });
    let ssl = context
        .as_ref()?
        .configure()
        .ok()?
        .into_ssl("localhost")
        .ok()?;
    tls_stream::connect(ssl, tcp).await.ok()
}

/// Sends `start`, then `filler` bytes of `x` in pieces, then reads until the server closes.
async fn misbehave<S>(mut stream: S, start: &[u8], filler: usize)
where
    S: smol::io::AsyncRead + smol::io::AsyncWrite + Unpin,
{
    if stream.write_all(start).await.is_err() {
        return;
    }
    let piece = vec![b'x'; WRITE_PIECE];
    let mut sent = 0;
    while sent < filler {
        let n = WRITE_PIECE.min(filler - sent);
        if stream.write_all(&piece[..n]).await.is_err() {
            return;
        }
        sent += n;
    }
    let mut sink = [0u8; 512];
    loop {
        match stream.read(&mut sink).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// The number of file descriptors `pid` holds open.
pub fn open_fds(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// Resets `pid`'s peak resident size (VmHWM) to its current one, so the next peak is the
/// flood's own. Linux only; `false` if the kernel refused.
pub fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}
