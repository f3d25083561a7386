//! Controller-style load on a real API server: threads listing every ConfigMap with one
//! identity's token until stopped, counting the requests API Priority and Fairness rejected.
//!
//! Why: with the identity's priority level squeezed, this keeps it saturated, so the tests and
//! the comparison can show whose Lease survives controller traffic that is being throttled.

use super::control_plane::ControlPlane;
use super::keepalive::KeepAliveGet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Pause after a 429 (the load keeps the level busy without spinning).
const AFTER_REJECTION: Duration = Duration::from_millis(20);
/// Pause after a transport error.
const AFTER_ERROR: Duration = Duration::from_millis(50);

pub struct ListLoad {
    stop: Arc<AtomicBool>,
    rejected: Arc<AtomicUsize>,
    threads: Vec<JoinHandle<()>>,
}

impl ListLoad {
    /// `threads` threads listing `/api/v1/configmaps` as the owner of `token`.
    pub fn start(cp: &ControlPlane, token: &str, threads: usize) -> ListLoad {
        let stop = Arc::new(AtomicBool::new(false));
        let rejected = Arc::new(AtomicUsize::new(0));
        let threads = (0..threads)
            .map(|_| {
                let (stop, rejected) = (stop.clone(), rejected.clone());
                let mut client = KeepAliveGet::new(cp.url(), cp.ca_pem(), token);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        match client.get("/api/v1/configmaps") {
                            Ok((429, _)) => {
                                rejected.fetch_add(1, Ordering::Relaxed);
                                std::thread::sleep(AFTER_REJECTION);
                            }
                            Ok(_) => {}
                            Err(_) => std::thread::sleep(AFTER_ERROR),
                        }
                    }
                })
            })
            .collect();
        ListLoad {
            stop,
            rejected,
            threads,
        }
    }

    /// Stops the threads; returns how many of their requests were rejected.
    pub fn stop(mut self) -> usize {
        self.halt();
        self.rejected.load(Ordering::Relaxed)
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Drop for ListLoad {
    fn drop(&mut self) {
        self.halt();
    }
}
