//! A TCP proxy on loopback that misbehaves on demand: the network faults a leader meets.
//!
//! Why: the faults that make an operator deaf are in the network, not in the API server. A load
//! balancer or NAT that loses a flow's state keeps both ends of the connection open and
//! forwards nothing; a partition holds every byte until it heals, and TCP then delivers what it
//! was still retransmitting, late; a link far away adds latency to every byte. The proxy sits
//! between a client (skiff, or the peer) and a real API server and does each of these, per
//! connection, while counting what it does. It forwards bytes without reading them, so TLS
//! passes through untouched.
//!
//! - [`FaultProxy::kill_open`]: every open connection goes silent for good (both sockets stay
//!   open, nothing is forwarded either way); new connections pass.
//! - [`FaultProxy::kill_watches`]: the same, only for connections that look like watches: the
//!   client has sent nothing for a while, the server has (a lease client's connection carries
//!   a request every retry period; an idle pooled connection hears nothing).
//! - [`FaultProxy::partition`] / [`FaultProxy::heal`]: nothing passes, new connections are held
//!   too; on heal the held bytes are delivered, as TCP retransmission would, except from a
//!   client that reset its connection meanwhile (a reset discards unsent data).
//! - [`FaultProxy::set_latency`]: every chunk is delivered this long after it was read.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

/// Chunks of bytes to write, each with the time it was read (latency counts from there).
type Chunks = Sender<(Instant, Vec<u8>)>;

/// What the proxy saw and did; see [`FaultProxy::stats`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ProxyStats {
    /// Connections accepted from clients.
    pub opened: usize,
    /// Connections whose held client bytes were delivered when the partition healed.
    pub delivered_on_heal: usize,
    /// Client bytes delivered when the partition healed.
    pub bytes_delivered_on_heal: u64,
    /// Connections the client reset while the proxy held bytes it had sent; discarded on heal.
    pub reset_with_held_bytes: usize,
}

/// A running proxy to `upstream`; dropping it stops accepting (open connections run on until
/// either side closes).
pub struct FaultProxy {
    port: u16,
    shared: Arc<Shared>,
}

struct Shared {
    upstream: SocketAddr,
    stopped: AtomicBool,
    partitioned: AtomicBool,
    latency_micros: AtomicU64,
    conns: Mutex<Vec<Arc<Conn>>>,
    opened: AtomicUsize,
    heal_stats: Mutex<ProxyStats>,
}

/// One proxied connection.
struct Conn {
    client: TcpStream,
    upstream: Mutex<Option<TcpStream>>,
    /// Forwards to the server / to the client once connected.
    to_server: Mutex<Option<Chunks>>,
    to_client: Chunks,
    dead: AtomicBool,
    last_from_client: Mutex<Instant>,
    last_from_server: Mutex<Instant>,
    /// Client bytes read during a partition.
    held: Mutex<Vec<u8>>,
    /// How the client ended the connection, if it has: a reset, or a clean close.
    client_end: Mutex<Option<ErrorKind>>,
}

impl FaultProxy {
    /// A proxy forwarding loopback connections to `upstream` (`host:port`).
    pub fn start(upstream: &str) -> FaultProxy {
        let upstream: SocketAddr = upstream
            .parse()
            .unwrap_or_else(|e| panic!("proxy upstream {upstream:?} is not host:port: {e}"));
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fault proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let shared = Arc::new(Shared {
            upstream,
            stopped: AtomicBool::new(false),
            partitioned: AtomicBool::new(false),
            latency_micros: AtomicU64::new(0),
            conns: Mutex::new(Vec::new()),
            opened: AtomicUsize::new(0),
            heal_stats: Mutex::new(ProxyStats::default()),
        });
        let accepting = shared.clone();
        thread::spawn(move || {
            for client in listener.incoming() {
                if accepting.stopped.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(client) = client {
                    accepting.opened.fetch_add(1, Ordering::SeqCst);
                    serve(&accepting, client);
                }
            }
        });
        FaultProxy { port, shared }
    }

    /// The proxy's address for an `https://` server URL: `127.0.0.1:<port>`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Every open connection goes silent for good; new ones pass.
    pub fn kill_open(&self) -> usize {
        self.kill_where(|_| true)
    }

    /// Watch-like connections go silent for good: the client sent nothing for `quiet`, the
    /// server sent something within it.
    pub fn kill_watches(&self, quiet: Duration) -> usize {
        self.kill_where(|c| {
            lock(&c.last_from_client).elapsed() >= quiet
                && lock(&c.last_from_server).elapsed() < quiet
        })
    }

    /// Nothing passes, on open or new connections, until [`FaultProxy::heal`].
    pub fn partition(&self) {
        self.shared.partitioned.store(true, Ordering::SeqCst);
    }

    /// Ends a partition: held bytes are delivered, except those of clients that reset.
    pub fn heal(&self) {
        self.shared.partitioned.store(false, Ordering::SeqCst);
        let conns = lock(&self.shared.conns).clone();
        for conn in conns {
            heal_conn(&self.shared, &conn);
        }
    }

    /// One-way delay added to every chunk from now on.
    pub fn set_latency(&self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.shared.latency_micros.store(micros, Ordering::SeqCst);
    }

    pub fn stats(&self) -> ProxyStats {
        ProxyStats {
            opened: self.shared.opened.load(Ordering::SeqCst),
            ..lock(&self.shared.heal_stats).clone()
        }
    }

    fn kill_where(&self, chosen: impl Fn(&Conn) -> bool) -> usize {
        let conns = lock(&self.shared.conns);
        let mut killed = 0;
        for conn in conns.iter().filter(|c| chosen(c)) {
            if !conn.dead.swap(true, Ordering::SeqCst) {
                killed += 1;
            }
        }
        killed
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        for conn in lock(&self.shared.conns).iter() {
            let _ = conn.client.shutdown(Shutdown::Both);
            if let Some(up) = lock(&conn.upstream).as_ref() {
                let _ = up.shutdown(Shutdown::Both);
            }
        }
    }
}

fn serve(shared: &Arc<Shared>, client: TcpStream) {
    let _ = client.set_nodelay(true);
    let Ok(client_writer) = client.try_clone() else {
        return;
    };
    let conn = Arc::new(Conn {
        client,
        upstream: Mutex::new(None),
        to_server: Mutex::new(None),
        to_client: delayed_writer(shared.clone(), client_writer),
        dead: AtomicBool::new(false),
        last_from_client: Mutex::new(Instant::now()),
        last_from_server: Mutex::new(Instant::now()),
        held: Mutex::new(Vec::new()),
        client_end: Mutex::new(None),
    });
    lock(&shared.conns).push(conn.clone());
    if !shared.partitioned.load(Ordering::SeqCst) {
        connect_upstream(shared, &conn);
    }
    let shared = shared.clone();
    thread::spawn(move || pump_from_client(&shared, &conn));
}

/// Dials the API server for `conn` and starts forwarding its replies.
fn connect_upstream(shared: &Arc<Shared>, conn: &Arc<Conn>) {
    let Ok(upstream) = TcpStream::connect(shared.upstream) else {
        let _ = conn.client.shutdown(Shutdown::Both);
        return;
    };
    let _ = upstream.set_nodelay(true);
    let (Ok(reader), Ok(writer)) = (upstream.try_clone(), upstream.try_clone()) else {
        return;
    };
    *lock(&conn.to_server) = Some(delayed_writer(shared.clone(), writer));
    *lock(&conn.upstream) = Some(upstream);
    let (shared, conn) = (shared.clone(), conn.clone());
    thread::spawn(move || pump_from_server(&shared, &conn, reader));
}

/// Client → proxy: forward, hold (partition) or drop (dead) each chunk.
fn pump_from_client(shared: &Arc<Shared>, conn: &Arc<Conn>) {
    let mut reader = match conn.client.try_clone() {
        Ok(reader) => reader,
        Err(_) => return,
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => {
                *lock(&conn.client_end) = Some(ErrorKind::UnexpectedEof);
                break;
            }
            Ok(n) => n,
            Err(e) => {
                *lock(&conn.client_end) = Some(e.kind());
                break;
            }
        };
        *lock(&conn.last_from_client) = Instant::now();
        if conn.dead.load(Ordering::SeqCst) {
            continue;
        }
        if shared.partitioned.load(Ordering::SeqCst) || lock(&conn.to_server).is_none() {
            lock(&conn.held).extend_from_slice(&buf[..n]);
            continue;
        }
        send(&conn.to_server, buf[..n].to_vec());
    }
    // A clean close is passed on once everything before it was; a reset or a partition
    // leaves the server side to `heal`.
    if !shared.partitioned.load(Ordering::SeqCst)
        && !conn.dead.load(Ordering::SeqCst)
        && lock(&conn.held).is_empty()
    {
        close_upstream_later(conn);
    }
}

/// Server → proxy: forward to the client unless dead; during a partition, wait for the heal.
fn pump_from_server(shared: &Arc<Shared>, conn: &Arc<Conn>, mut reader: TcpStream) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        *lock(&conn.last_from_server) = Instant::now();
        while shared.partitioned.load(Ordering::SeqCst) && !shared.stopped.load(Ordering::SeqCst) {
            thread::sleep(Duration::from_millis(20));
        }
        if conn.dead.load(Ordering::SeqCst) {
            continue;
        }
        let _ = conn.to_client.send((Instant::now(), buf[..n].to_vec()));
    }
    if !conn.dead.load(Ordering::SeqCst) {
        let _ = conn.client.shutdown(Shutdown::Write);
    }
}

/// After a partition: deliver what the client sent meanwhile, unless it reset the connection.
fn heal_conn(shared: &Arc<Shared>, conn: &Arc<Conn>) {
    let held = std::mem::take(&mut *lock(&conn.held));
    let client_end = *lock(&conn.client_end);
    let reset = matches!(
        client_end,
        Some(ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted)
    );
    if reset {
        if !held.is_empty() {
            lock(&shared.heal_stats).reset_with_held_bytes += 1;
        }
        if let Some(up) = lock(&conn.upstream).as_ref() {
            let _ = up.shutdown(Shutdown::Both);
        }
        return;
    }
    if lock(&conn.to_server).is_none() {
        // Opened during the partition: a real SYN would never have been answered.
        if client_end.is_none() {
            connect_upstream(shared, conn);
        } else {
            return;
        }
    }
    if held.is_empty() {
        return;
    }
    {
        let mut stats = lock(&shared.heal_stats);
        stats.delivered_on_heal += 1;
        stats.bytes_delivered_on_heal += held.len() as u64;
    }
    send(&conn.to_server, held);
    if client_end.is_some() {
        close_upstream_later(conn);
    }
}

/// Shuts the server side's write half once the queued bytes are out (an empty message is the
/// writer's cue).
fn close_upstream_later(conn: &Conn) {
    send(&conn.to_server, Vec::new());
}

fn send(to: &Mutex<Option<Chunks>>, bytes: Vec<u8>) {
    if let Some(tx) = lock(to).as_ref() {
        let _ = tx.send((Instant::now(), bytes));
    }
}

/// A writer thread delivering each chunk `latency` after it was read, in order. An empty chunk
/// shuts the write half.
fn delayed_writer(shared: Arc<Shared>, mut out: TcpStream) -> Chunks {
    let (tx, rx) = channel::<(Instant, Vec<u8>)>();
    thread::spawn(move || {
        for (read_at, bytes) in rx {
            let latency = Duration::from_micros(shared.latency_micros.load(Ordering::SeqCst));
            let due = read_at + latency;
            let now = Instant::now();
            if due > now {
                thread::sleep(due - now);
            }
            if bytes.is_empty() {
                let _ = out.shutdown(Shutdown::Write);
                continue;
            }
            if out.write_all(&bytes).is_err() {
                break;
            }
        }
    });
    tx
}

/// Writes `to`: the kubeconfig `from` with every `server:` pointing at `address` (the proxy).
/// TLS still verifies: the API server's certificate names the host, not the port.
pub fn kubeconfig_through(from: &Path, address: &str, to: &Path) {
    let text = std::fs::read_to_string(from).expect("read the kubeconfig");
    let rewritten: Vec<String> = text
        .lines()
        .map(|line| match line.trim_start().strip_prefix("server: ") {
            Some(url) => {
                let scheme = url.split("://").next().unwrap_or("https");
                let indent = &line[..line.len() - line.trim_start().len()];
                format!("{indent}server: {scheme}://{address}")
            }
            None => line.to_owned(),
        })
        .collect();
    std::fs::write(to, rewritten.join("\n") + "\n").expect("write the kubeconfig");
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
