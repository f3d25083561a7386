//! The benchmarks' shared scenario: a fake cluster with many namespaces, one source ConfigMap
//! and a Mirror selecting them, the built `skiff` run against it, and what the server's
//! request log says about its writes.
#![allow(dead_code)]

use crate::support::fake::{FakeServer, RequestRecord};
use crate::support::skiff::{Skiff, TempDir, eventually, write_kubeconfig};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// skiff's own namespace (kubeconfig context), hence its only source namespace.
pub const SOURCE_NAMESPACE: &str = "skiff-system";
pub const MIRROR: &str = "ca";
pub const SOURCE: &str = "app-ca";
/// The label the Mirror selects namespaces by.
const SELECT_LABEL: &str = "mirror";

/// Namespaces of the smoke version run by `cargo test --all-targets` (no figures).
pub const SMOKE_NAMESPACES: usize = 20;

/// `cargo bench` passes `--bench`; `cargo test --all-targets` runs the same program without it.
pub fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

pub fn target_namespace(i: usize) -> String {
    format!("team-{i:04}")
}

fn namespace(name: &str, selected: bool) -> Value {
    let labels = if selected {
        json!({ SELECT_LABEL: "yes" })
    } else {
        json!({})
    };
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

/// A fake cluster: the source namespace with the source ConfigMap, `count` selected
/// namespaces, and the Mirror when `with_mirror`.
pub fn cluster(count: usize, with_mirror: bool) -> FakeServer {
    let server = FakeServer::start();
    server.insert(namespace(SOURCE_NAMESPACE, false));
    for i in 0..count {
        server.insert(namespace(&target_namespace(i), true));
    }
    server.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": SOURCE, "namespace": SOURCE_NAMESPACE},
        "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n"}}));
    if with_mirror {
        server.insert(json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {"name": MIRROR, "namespace": SOURCE_NAMESPACE},
            "spec": {"source": {"kind": "ConfigMap", "name": SOURCE},
                     "namespaceSelector": {"matchLabels": { SELECT_LABEL: "yes" }}}}));
    }
    server
}

/// A skiff process started against a server, and when it was started.
pub struct Run {
    pub skiff: Skiff,
    pub started: Instant,
    _dir: TempDir,
}

impl Run {
    pub fn start(server: &FakeServer, tag: &str, args: &[&str]) -> Run {
        let dir = TempDir::new(tag);
        let kubeconfig = write_kubeconfig(&dir, &server.url(), None, None, SOURCE_NAMESPACE);
        let started = Instant::now();
        let skiff = Skiff::start(&kubeconfig, dir.0.join("skiff.log"), args);
        Run {
            skiff,
            started,
            _dir: dir,
        }
    }

    pub fn pid(&self) -> u32 {
        self.skiff.child.id()
    }

    /// Panics with the log when the process has already exited.
    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.skiff.child.try_wait() {
            panic!("skiff exited ({status}); log:\n{}", self.skiff.logs());
        }
    }
}

fn mirror_path() -> String {
    format!("/apis/skiff.dev/v1alpha1/namespaces/{SOURCE_NAMESPACE}/mirrors/{MIRROR}")
}

/// The Mirror's `status.synced`, if reported.
pub fn synced(server: &FakeServer) -> Option<u64> {
    server.get(&mirror_path())?["status"]["synced"].as_u64()
}

/// Copies of the source present outside the source namespace.
pub fn copies(server: &FakeServer) -> usize {
    server
        .list("/api/v1/configmaps")
        .iter()
        .filter(|cm| {
            cm["metadata"]["name"] == SOURCE && cm["metadata"]["namespace"] != SOURCE_NAMESPACE
        })
        .count()
}

/// Waits until the Mirror reports `count` synced and `count` copies exist.
pub fn wait_converged(server: &FakeServer, run: &mut Run, count: usize, limit: Duration) {
    let start = Instant::now();
    let reported = eventually(limit, || synced(server) == Some(count as u64));
    run.assert_running();
    assert!(
        reported,
        "Mirror status not synced={count} after {limit:?} (is {:?}); log:\n{}",
        synced(server),
        run.skiff.logs()
    );
    let left = limit.saturating_sub(start.elapsed());
    let present = eventually(left, || copies(server) == count);
    assert!(
        present,
        "{} of {count} copies present; log:\n{}",
        copies(server),
        run.skiff.logs()
    );
}

/// Waits until skiff has opened `watches` watch requests (its caches are being fed).
pub fn wait_watching(server: &FakeServer, run: &mut Run, watches: usize, limit: Duration) {
    let watching = eventually(limit, || {
        server.requests().iter().filter(|r| r.watch).count() >= watches
    });
    run.assert_running();
    assert!(
        watching,
        "skiff opened no watches; log:\n{}",
        run.skiff.logs()
    );
}

/// What the request log says about skiff's writes.
#[derive(Debug, Default)]
pub struct Writes {
    /// Successful POSTs of copies (ConfigMaps outside the source namespace).
    pub copy_creates: usize,
    /// Successful updates of copies (PATCH; PUT by older builds).
    pub copy_updates: usize,
    /// Successful writes of the Mirror's status subresource.
    pub status_writes: usize,
    /// Successful writes of the Mirror itself (the finalizer).
    pub mirror_writes: usize,
    /// Successful Event creates.
    pub events: usize,
    /// Any other successful write.
    pub other_writes: usize,
    /// Writes answered with an error (or not at all).
    pub failed_writes: usize,
    /// Reads: GETs, lists and watches.
    pub reads: usize,
    /// Requests (reads and writes) that arrived before the first copy write: each took a
    /// token from the bucket the copies then share.
    pub before_first_copy: usize,
    /// When the first copy write arrived.
    pub first_copy_write: Option<Instant>,
    /// When the last successful copy create was answered.
    pub last_copy_create: Option<Instant>,
    /// When the status write reporting `synced` = the expected count was answered.
    pub synced_reported: Option<Instant>,
}

fn is_write(method: &str) -> bool {
    matches!(method, "POST" | "PUT" | "PATCH" | "DELETE")
}

fn is_copy(record: &RequestRecord) -> bool {
    record.path.starts_with("/api/v1/namespaces/")
        && !record
            .path
            .starts_with(&format!("/api/v1/namespaces/{SOURCE_NAMESPACE}/"))
        && record.path.contains("/configmaps")
}

impl Writes {
    /// Tallies the request log; `count` is the synced figure that marks convergence.
    pub fn of(records: &[RequestRecord], count: usize) -> Writes {
        let mut writes = Writes {
            before_first_copy: records
                .iter()
                .position(|r| is_write(&r.method) && is_copy(r))
                .unwrap_or(records.len()),
            ..Writes::default()
        };
        for record in records {
            if !is_write(&record.method) {
                writes.reads += 1;
                continue;
            }
            if is_copy(record) && writes.first_copy_write.is_none() {
                writes.first_copy_write = Some(record.received);
            }
            if !(200..300).contains(&record.status) {
                writes.failed_writes += 1;
                continue;
            }
            writes.tally(record, count);
        }
        writes
    }

    fn tally(&mut self, record: &RequestRecord, count: usize) {
        let mirror = mirror_path();
        match record.method.as_str() {
            "POST" if is_copy(record) => {
                self.copy_creates += 1;
                self.last_copy_create = record.answered.max(self.last_copy_create);
            }
            "PUT" | "PATCH" if is_copy(record) => self.copy_updates += 1,
            "PUT" if record.path == format!("{mirror}/status") => {
                self.status_writes += 1;
                let body_synced = record.body.as_ref().map(|b| &b["status"]["synced"]);
                if body_synced.and_then(Value::as_u64) == Some(count as u64)
                    && self.synced_reported.is_none()
                {
                    self.synced_reported = record.answered;
                }
            }
            _ if record.path == mirror => self.mirror_writes += 1,
            "POST" if record.path.ends_with("/events") => self.events += 1,
            _ => self.other_writes += 1,
        }
    }
}

/// Seconds between two instants, if both are known and in order.
pub fn seconds(from: Option<Instant>, to: Option<Instant>) -> Option<f64> {
    Some(to?.checked_duration_since(from?)?.as_secs_f64())
}

/// `12.34 s` or `n/a`.
pub fn show_seconds(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_owned(), |s| format!("{s:.2} s"))
}
