//! An operator's Lease as the API server shows it, from a watch: every change with the local
//! time it arrived. Renewals are counted from here, never from the operator's own account.
//!
//! The watch is `kubectl get --watch` as the cluster admin, whose requests are exempt from API
//! Priority and Fairness, so the observer is not slowed by the squeeze it observes.

use std::io::BufReader;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::support::control_plane::{ControlPlane, bin_dir};

/// One observed state of the Lease.
#[derive(Debug, Clone)]
pub struct Seen {
    pub at: Instant,
    pub holder: String,
    pub renew_time: String,
}

pub struct LeaseWatch {
    kubectl: Child,
    seen: Arc<Mutex<Vec<Seen>>>,
    reader: Option<JoinHandle<()>>,
}

impl LeaseWatch {
    pub fn start(cp: &ControlPlane, namespace: &str, name: &str) -> LeaseWatch {
        let selector = format!("metadata.name={name}");
        let mut kubectl = Command::new(bin_dir().join("kubectl"))
            .arg(format!("--kubeconfig={}", cp.admin_kubeconfig().display()))
            .args([
                "get",
                "leases",
                "-n",
                namespace,
                "--field-selector",
                &selector,
            ])
            .args(["--watch", "--output-watch-events", "-o", "json"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kubectl get --watch");
        crate::children::register(kubectl.id());
        let stdout = kubectl.stdout.take().expect("kubectl's stdout");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let reader = std::thread::spawn(move || {
            let events = serde_json::Deserializer::from_reader(BufReader::new(stdout));
            for event in events.into_iter::<serde_json::Value>() {
                let Ok(event) = event else { return };
                let spec = &event["object"]["spec"];
                let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
                let record = Seen {
                    at: Instant::now(),
                    holder: text(&spec["holderIdentity"]),
                    renew_time: text(&spec["renewTime"]),
                };
                sink.lock().expect("lease records").push(record);
            }
        });
        LeaseWatch {
            kubectl,
            seen,
            reader: Some(reader),
        }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lease records").clone()
    }

    pub fn holder(&self) -> String {
        self.seen()
            .last()
            .map(|s| s.holder.clone())
            .unwrap_or_default()
    }

    /// The first state after `from` that satisfies `check`, waiting at most `limit`.
    pub fn wait_for(
        &self,
        from: Instant,
        limit: Duration,
        check: impl Fn(&Seen) -> bool,
    ) -> Option<Seen> {
        let deadline = Instant::now() + limit;
        loop {
            let found = self.seen().into_iter().find(|s| s.at >= from && check(s));
            if found.is_some() || Instant::now() >= deadline {
                return found;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for LeaseWatch {
    fn drop(&mut self) {
        let _ = self.kubectl.kill();
        let _ = self.kubectl.wait();
        crate::children::unregister(self.kubectl.id());
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// The successful renewals among `seen`: each state whose renewTime moved on while held.
pub fn renewals(seen: &[Seen]) -> Vec<Seen> {
    let mut last_renew = String::new();
    let mut out = Vec::new();
    for s in seen {
        if !s.holder.is_empty() && s.renew_time != last_renew {
            out.push(s.clone());
        }
        last_renew = s.renew_time.clone();
    }
    out
}

/// Times the holder changed to another identity or to none, among `seen`.
pub fn holder_changes(seen: &[Seen]) -> usize {
    seen.windows(2)
        .filter(|pair| pair[0].holder != pair[1].holder && !pair[0].holder.is_empty())
        .count()
}
