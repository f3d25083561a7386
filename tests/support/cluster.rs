//! A fake cluster for the Mirror tests: seeds namespaces, sources and Mirrors on the fake API
//! server, runs the built binary against it, and reads back copies, status and writes.

use super::fake::{FakeServer, RequestRecord};
use super::skiff::{Skiff, TempDir, write_kubeconfig};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The namespace skiff "runs in" (the kubeconfig context's), where sources and Mirrors live.
pub const HOME: &str = "skiff-system";
/// How long a wait lets skiff send no write before it fails the test: a liveness bound, 10× a
/// quiet convergence of the small fan-outs (0.1–2 s). A wait does not fail while skiff is still
/// writing, so a large fan-out on a loaded machine is slow, not red ([`Cluster::wait_for`]).
pub const CONVERGE: Duration = Duration::from_secs(20);
/// The longest any wait may take while skiff keeps writing (a skiff writing in a loop fails
/// here): 100× the largest fan-out's quiet convergence (1,500 copies in about 3 s).
pub const CONVERGE_CAP: Duration = Duration::from_secs(300);
/// Flags every Mirror test passes: no client-side throttling, so fan-outs are quick.
pub const FAST: &[&str] = &["--kube-api-qps=1000", "--kube-api-burst=1000"];

pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const MIRROR_NAMESPACE: &str = "skiff.dev/mirror-namespace";
pub const MIRROR_NAME: &str = "skiff.dev/mirror-name";
pub const SOURCE_HASH: &str = "skiff.dev/source-hash";
pub const FINALIZER: &str = "skiff.dev/cleanup";

/// A fake API server holding `skiff-system`, and a kubeconfig pointing at it.
pub struct Cluster {
    pub server: FakeServer,
    pub dir: TempDir,
    pub kubeconfig: PathBuf,
    runs: u32,
}

impl Cluster {
    pub fn new(tag: &str) -> Cluster {
        let server = FakeServer::start();
        let dir = TempDir::new(tag);
        let kubeconfig = write_kubeconfig(&dir, &server.url(), None, None, HOME);
        let cluster = Cluster {
            server,
            dir,
            kubeconfig,
            runs: 0,
        };
        cluster.namespace(HOME, json!({}));
        cluster
    }

    /// Starts `skiff` (no leader election, unthrottled unless `extra` sets the QPS flags)
    /// with `extra` flags.
    pub fn start(&mut self, extra: &[&str]) -> Skiff {
        self.runs += 1;
        let log = self.dir.0.join(format!("skiff-{}.log", self.runs));
        let flag = |arg: &str| arg.split('=').next().unwrap_or_default().to_owned();
        let mut args: Vec<&str> = FAST
            .iter()
            .filter(|fast| !extra.iter().any(|e| flag(e) == flag(fast)))
            .copied()
            .collect();
        args.extend_from_slice(extra);
        Skiff::start(&self.kubeconfig, log, &args)
    }

    pub fn namespace(&self, name: &str, labels: Value) -> Value {
        self.server
            .insert(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels}}))
    }

    /// Namespaces `{prefix}-0` … `{prefix}-{n-1}` with `labels`.
    pub fn namespaces(&self, prefix: &str, n: usize, labels: Value) -> Vec<String> {
        (0..n)
            .map(|i| {
                let name = format!("{prefix}-{i}");
                self.namespace(&name, labels.clone());
                name
            })
            .collect()
    }

    /// Replaces a namespace's labels (server side, emits MODIFIED).
    pub fn relabel_namespace(&self, name: &str, labels: Value) {
        let mut ns = self
            .server
            .get(&format!("/api/v1/namespaces/{name}"))
            .expect("namespace to relabel");
        ns["metadata"]["labels"] = labels;
        self.server.update(ns);
    }

    pub fn configmap(&self, ns: &str, name: &str, data: Value) -> Value {
        self.server
            .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns}, "data": data}))
    }

    /// A Mirror in `ns` of source `kind`/`source` selecting namespaces by `selector`.
    pub fn mirror(&self, ns: &str, name: &str, kind: &str, source: &str, selector: Value) -> Value {
        self.server
            .insert(json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"source": {"kind": kind, "name": source}, "namespaceSelector": selector}}))
    }

    /// A Mirror in [`HOME`] of `kind`/`source` selecting the namespaces labelled `team: yes`.
    pub fn mirror_to_teams(&self, name: &str, kind: &str, source: &str) -> Value {
        self.mirror(HOME, name, kind, source, teams())
    }

    /// The common scenario: source ConfigMap `app-ca` (`ca.crt: PEM`) in [`HOME`] and the
    /// Mirror `ca` copying it into every namespace labelled `team: yes`.
    pub fn team_ca_mirror(&self) {
        self.team_ca_mirror_in(HOME);
    }

    /// [`Cluster::team_ca_mirror`] with the source and the Mirror in `ns`.
    pub fn team_ca_mirror_in(&self, ns: &str) {
        self.configmap(ns, "app-ca", json!({"ca.crt": "PEM"}));
        self.mirror(ns, "ca", "ConfigMap", "app-ca", teams());
    }

    pub fn mirror_object(&self, ns: &str, name: &str) -> Option<Value> {
        self.server.get(&format!(
            "/apis/skiff.dev/v1alpha1/namespaces/{ns}/mirrors/{name}"
        ))
    }

    /// The Mirror's `Ready` condition (`Null` until there is one).
    pub fn ready(&self, ns: &str, name: &str) -> Value {
        self.mirror_object(ns, name)
            .map(|m| {
                m["status"]["conditions"]
                    .as_array()
                    .and_then(|c| c.iter().find(|c| c["type"] == "Ready").cloned())
                    .unwrap_or(Value::Null)
            })
            .unwrap_or(Value::Null)
    }

    pub fn configmap_at(&self, ns: &str, name: &str) -> Option<Value> {
        self.server
            .get(&format!("/api/v1/namespaces/{ns}/configmaps/{name}"))
    }

    pub fn secret_at(&self, ns: &str, name: &str) -> Option<Value> {
        self.server
            .get(&format!("/api/v1/namespaces/{ns}/secrets/{name}"))
    }

    /// Waits until `check` holds; fails the test with `what` and the binary's log once skiff
    /// has sent no write for [`CONVERGE`], or after [`CONVERGE_CAP`]. The verdict is whether
    /// skiff gets there, not how fast: a fan-out still under way on a busy machine is waited for.
    pub fn wait_for(&self, skiff: &Skiff, what: &str, mut check: impl FnMut() -> bool) {
        let mut progress = Progress::new(Instant::now(), self.server.writes_received());
        while !check() {
            if let Err(stalled) = progress.observe(Instant::now(), self.server.writes_received()) {
                panic!(
                    "timed out waiting for {what} ({stalled}); log:\n{}",
                    skiff.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the Mirror's `Ready` condition has `reason` (and the status `status`).
    pub fn wait_ready(&self, skiff: &Skiff, ns: &str, name: &str, status: &str, reason: &str) {
        self.wait_for(
            skiff,
            &format!("{ns}/{name} Ready={status} {reason}"),
            || {
                let ready = self.ready(ns, name);
                ready["status"] == status && ready["reason"] == reason
            },
        );
    }

    /// Every request since index `from` of the request log.
    pub fn requests_since(&self, from: usize) -> Vec<RequestRecord> {
        self.server.requests().into_iter().skip(from).collect()
    }

    /// The mutating requests (POST/PUT/PATCH/DELETE) since index `from`.
    pub fn writes_since(&self, from: usize) -> Vec<RequestRecord> {
        self.requests_since(from)
            .into_iter()
            .filter(RequestRecord::is_mutating)
            .collect()
    }

    /// Waits until the binary, started without `--secret-target-names`, has its caches filled
    /// and its watches open: one each for Mirrors, Namespaces and ConfigMap copies, and for
    /// ConfigMap sources in each of `source_namespaces` (no Secret watch: Secret copies are off).
    pub fn wait_watching(&self, skiff: &Skiff, source_namespaces: usize) {
        self.wait_caches_filled(skiff);
        let watches = 3 + source_namespaces;
        self.wait_for(skiff, &format!("{watches} open watches"), || {
            let open = self
                .server
                .requests()
                .iter()
                .filter(|r| r.watch && r.status == 200)
                .count();
            open >= watches
        });
    }

    /// Waits until the binary has filled its caches (it logs so once they are).
    pub fn wait_caches_filled(&self, skiff: &Skiff) {
        self.wait_for(skiff, "the caches to fill", || {
            skiff.logs().contains("mirror caches filled")
        });
    }
}

/// "METHOD path" lines, for assertion messages.
pub fn describe(records: &[RequestRecord]) -> String {
    records
        .iter()
        .map(|r| format!("{} {}?{} -> {}", r.method, r.path, r.query, r.status))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Hex sha256 of a ConfigMap payload in skiff's canonical form (`{"kind","data","binaryData"}`,
/// keys sorted), computed here independently of the crate.
pub fn configmap_hash(data: &Value, binary_data: &Value) -> String {
    use sha2::{Digest, Sha256};
    let canonical = format!(r#"{{"kind":"ConfigMap","data":{data},"binaryData":{binary_data}}}"#);
    Sha256::digest(canonical.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The selector of the namespaces labelled `team: yes`.
fn teams() -> Value {
    json!({"matchLabels": {"team": "yes"}})
}

/// Skiff's progress during a wait, from the fake server's count of writes: the wait goes on
/// while skiff writes, and ends once it has been silent for [`CONVERGE`] or the wait has lasted
/// [`CONVERGE_CAP`].
struct Progress {
    start: Instant,
    writes: usize,
    last_write: Instant,
}

impl Progress {
    fn new(now: Instant, writes: usize) -> Progress {
        Progress {
            start: now,
            writes,
            last_write: now,
        }
    }

    /// Notes the write count seen at `now`; `Err` says why the wait is over.
    fn observe(&mut self, now: Instant, writes: usize) -> Result<(), String> {
        if writes != self.writes {
            (self.writes, self.last_write) = (writes, now);
        }
        let (silent, waited) = (now - self.last_write, now - self.start);
        if silent >= CONVERGE || waited >= CONVERGE_CAP {
            return Err(format!(
                "no write from skiff for {silent:?}, {waited:?} in all"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod progress_tests {
    use super::*;

    #[test]
    fn a_wait_ends_once_skiff_is_silent_for_converge() {
        let t = Instant::now();
        let mut progress = Progress::new(t, 3);
        assert!(
            progress
                .observe(t + CONVERGE - Duration::from_millis(1), 3)
                .is_ok()
        );
        assert!(progress.observe(t + CONVERGE, 3).is_err());
    }

    #[test]
    fn a_wait_goes_on_while_skiff_writes() {
        let t = Instant::now();
        let mut progress = Progress::new(t, 0);
        for step in 1..=10 {
            let now = t + CONVERGE / 2 * step;
            assert!(
                progress.observe(now, step as usize).is_ok(),
                "ended at step {step}"
            );
        }
    }

    #[test]
    fn a_wait_ends_at_the_cap_however_busy_skiff_is() {
        let t = Instant::now();
        let mut progress = Progress::new(t, 0);
        let mut writes = 0;
        let mut now = t;
        while now < t + CONVERGE_CAP - Duration::from_secs(1) {
            now += Duration::from_secs(1);
            writes += 1;
            assert!(progress.observe(now, writes).is_ok());
        }
        assert!(progress.observe(t + CONVERGE_CAP, writes + 1).is_err());
    }
}
