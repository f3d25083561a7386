//! What an operator process shows while it is attacked, sampled from outside on a thread of its
//! own: memory (`/proc/PID/status`), open files, and how fast its `/healthz` answers a normal
//! GET.
//!
//! Why: the flood tests and `make compare` judge an operator as the kubelet and a memory limit
//! would, from outside the process, while the flood runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::flood::open_fds;
use super::skiff::proc_status_kib;

/// How often memory and open files are read.
const SAMPLE_EVERY: Duration = Duration::from_millis(50);
/// How often `/healthz` is asked.
const PROBE_EVERY: Duration = Duration::from_millis(100);

/// The worst of what was seen.
#[derive(Debug, Clone, Copy, Default)]
pub struct Worst {
    /// KiB.
    pub rss_anon: u64,
    pub vm_rss: u64,
    pub fds: usize,
    /// The slowest `/healthz` answer, and how many probes got no 200.
    pub healthz: Duration,
    pub healthz_failures: usize,
    pub probes: usize,
}

/// Samples one process until stopped.
pub struct Vitals {
    worst: Arc<Mutex<Worst>>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Vitals {
    /// Samples `pid`; also probes `GET /healthz` on `probe_port` when given.
    pub fn watch(pid: u32, probe_port: Option<u16>) -> Vitals {
        let worst = Arc::new(Mutex::new(Worst::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        let (seen, stopped) = (worst.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                let anon = proc_status_kib(pid, "RssAnon").unwrap_or(0);
                let rss = proc_status_kib(pid, "VmRSS").unwrap_or(0);
                let fds = open_fds(pid).unwrap_or(0);
                let mut w = seen.lock().unwrap_or_else(|e| e.into_inner());
                w.rss_anon = w.rss_anon.max(anon);
                w.vm_rss = w.vm_rss.max(rss);
                w.fds = w.fds.max(fds);
                drop(w);
                std::thread::sleep(SAMPLE_EVERY);
            }
        }));
        if let Some(port) = probe_port {
            let (seen, stopped) = (worst.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                while !stopped.load(Ordering::Relaxed) {
                    let asked = Instant::now();
                    let ok = healthz(port);
                    let took = asked.elapsed();
                    let mut w = seen.lock().unwrap_or_else(|e| e.into_inner());
                    w.healthz = w.healthz.max(took);
                    w.healthz_failures += usize::from(!ok);
                    w.probes += 1;
                    drop(w);
                    std::thread::sleep(PROBE_EVERY.saturating_sub(took));
                }
            }));
        }
        Vitals {
            worst,
            stop,
            threads,
        }
    }

    /// Stops sampling and returns the worst seen.
    pub fn finish(mut self) -> Worst {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
        *self.worst.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Vitals {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// `GET /healthz` as the kubelet sends it (a new connection, `Connection: close`), with the
/// kubelet's default 1 s timeout: whether it answered 200.
pub fn healthz(port: u16) -> bool {
    use std::io::{Read as _, Write as _};
    let Ok(mut tcp) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(1)));
    let request = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: kube-probe/1.36\r\nAccept: */*\r\nConnection: close\r\n\r\n";
    if tcp.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = [0u8; 12];
    tcp.read_exact(&mut answer).is_ok() && answer.starts_with(b"HTTP/1.1 200")
}
