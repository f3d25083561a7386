//! The Mirror e2e suites' shared ground: one skiff replica leading on the real control plane,
//! Mirrors and sources applied with kubectl, and waits and reads as a user would do them.
//!
//! skiff runs as in production (`--leader-elect`, the operator's ServiceAccount), installed with
//! the secret-targets component (`deploy/secret-targets`) so Secret copies of `app-tls` are
//! allowed, with the same `--secret-target-names` the component sets. Each test starts its own
//! replica, one at a time per test binary, because they all use the one Lease
//! `skiff-system/skiff-leader`; each test has its own Mirror, source and namespaces (selected by
//! a label unique to the test). Its `/metrics` is served on a port of its own, in plain HTTP,
//! so a test can count the writes skiff sent.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use super::control_plane::{ControlPlane, E2E_REPLICA_FLAGS, OPERATOR_NAMESPACE};
use super::scrape::{scrape, sum_samples};
use super::skiff::{Skiff, TempDir, eventually};

/// Each wait for the controller to act.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(20);
/// The label each test's namespaces carry to be selected: `mirror-e2e: <label>`.
pub const SELECT_LABEL: &str = "mirror-e2e";

/// The default install plus the secret-targets component, once per control plane.
pub fn control_plane() -> &'static ControlPlane {
    ControlPlane::installed().install_overlay("secret-targets")
}

/// A leading skiff replica and where its metrics are.
pub struct Replica {
    pub skiff: Skiff,
    pub metrics_port: u16,
    _dir: TempDir,
}

impl Replica {
    /// Starts a replica named `name`, with Secret copies of `app-tls` enabled.
    pub fn start(cp: &ControlPlane, name: &str) -> Replica {
        Replica::start_with(cp, name, &[])
    }

    /// As [`Replica::start`], with `extra` flags.
    pub fn start_with(cp: &ControlPlane, name: &str, extra: &[&str]) -> Replica {
        let dir = TempDir::new(&format!("e2e-mirror-{name}"));
        let mut flags = E2E_REPLICA_FLAGS.to_vec();
        flags.extend([
            "--secret-target-names=app-tls",
            "--metrics-secure=false",
            "--metrics-bind-address=127.0.0.1:0",
        ]);
        flags.extend_from_slice(extra);
        let skiff = Skiff::start_with_env(
            &cp.operator_kubeconfig(),
            dir.0.join("skiff.log"),
            &flags,
            &[("POD_NAME", name)],
        );
        let metrics_port = skiff.bound_port("--metrics-bind-address");
        Replica {
            skiff,
            metrics_port,
            _dir: dir,
        }
    }

    /// The writes (POST, PUT, PATCH, DELETE) the controllers' client sent so far, by method.
    pub fn writes(&self) -> [(&'static str, f64); 4] {
        let metrics = scrape(self.metrics_port);
        ["POST", "PUT", "PATCH", "DELETE"].map(|method| {
            let labels = [("client", "main"), ("method", method)];
            (
                method,
                sum_samples(&metrics, "rest_client_requests_total", &labels),
            )
        })
    }

    /// Stops the replica with SIGTERM, expecting exit 0 and no write of skiff's denied by an
    /// admission policy: the shipped policies must never meet skiff's own writes.
    pub fn stop(mut self) {
        self.skiff.signal("TERM");
        let code = self.skiff.wait_exit(STEP_TIMEOUT);
        let logs = self.skiff.logs();
        assert_eq!(code, Some(0), "skiff exit; log:\n{logs}");
        let denied: Vec<&str> = policy_denials(&logs).collect();
        assert!(
            denied.is_empty(),
            "an admission policy denied skiff's own writes:\n{}",
            denied.join("\n")
        );
    }
}

/// The lines of a skiff log where an admission policy denied a write, but for the dry run of
/// `--require-write-policy`, whose denial is the point.
pub fn policy_denials(logs: &str) -> impl Iterator<Item = &str> {
    logs.lines().filter(|line| {
        line.contains("ValidatingAdmissionPolicy") && !line.contains("skiff-write-policy-probe")
    })
}

/// Runs `test` while one skiff replica leads; stops it with SIGTERM after, expecting exit 0.
pub fn with_skiff(name: &str, test: impl FnOnce(&'static ControlPlane)) {
    with_replica(name, |cp, _| test(cp));
}

/// As [`with_skiff`], handing the test the replica too (to read its metrics).
pub fn with_replica(name: &str, test: impl FnOnce(&'static ControlPlane, &Replica)) {
    with_replica_flags(name, &[], test);
}

/// As [`with_replica`], the replica started with `extra` flags.
pub fn with_replica_flags(
    name: &str,
    extra: &[&str],
    test: impl FnOnce(&'static ControlPlane, &Replica),
) {
    let _turn = one_replica_at_a_time();
    let cp = control_plane();
    running(cp, (name, extra), |replica| test(cp, replica));
}

/// Runs `test` while a replica named `name`, started with `extra` flags, leads; prints its log
/// if `test` fails, and stops it with SIGTERM after, expecting exit 0. The caller holds the
/// turn ([`one_replica_at_a_time`]), perhaps for several replicas one after another.
pub fn running(cp: &ControlPlane, (name, extra): (&str, &[&str]), test: impl FnOnce(&Replica)) {
    let replica = Replica::start_with(cp, name, extra);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(&replica)));
    if outcome.is_err() {
        eprintln!("skiff log ({name}):\n{}", replica.skiff.logs());
    }
    replica.stop();
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// The turn of a test that runs replicas itself (they share one Lease).
pub fn one_replica_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits until `check` holds, polling with kubectl; panics naming `what` after the timeout.
pub fn wait_until(what: &str, check: impl FnMut() -> bool) {
    assert!(eventually(STEP_TIMEOUT, check), "timed out: {what}");
}

/// A ConfigMap in skiff's namespace with `data` (JSON).
pub fn source_configmap(cp: &ControlPlane, name: &str, data: &str) {
    source_configmap_with(cp, name, data, "");
}

/// As [`source_configmap`], with `metadata` members (`"labels": {...}`, or empty).
pub fn source_configmap_with(cp: &ControlPlane, name: &str, data: &str, metadata: &str) {
    let metadata = if metadata.is_empty() {
        String::new()
    } else {
        format!(", {metadata}")
    };
    cp.apply(&format!(
        r#"{{"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {{"name": "{name}", "namespace": "{OPERATOR_NAMESPACE}"{metadata}}},
            "data": {data}}}"#
    ));
}

/// A Mirror in skiff's namespace of `kind`/`source`, selecting the namespaces labelled
/// `mirror-e2e: <label>`, with `extra` spec members (`"targetName": "x",` or empty).
pub fn mirror(cp: &ControlPlane, name: &str, kind: &str, source: &str, extra: &str, label: &str) {
    mirror_with_source(
        cp,
        name,
        &format!(r#""kind": "{kind}", "name": "{source}""#),
        extra,
        label,
    );
}

/// As [`mirror`], with the members of `spec.source` given whole (`"kind": ..., "keys": [...]`).
pub fn mirror_with_source(cp: &ControlPlane, name: &str, source: &str, extra: &str, label: &str) {
    cp.apply(&format!(
        r#"{{"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {{"name": "{name}", "namespace": "{OPERATOR_NAMESPACE}"}},
            "spec": {{"source": {{{source}}}, {extra}
                      "namespaceSelector": {{"matchLabels": {{"{SELECT_LABEL}": "{label}"}}}}}}}}"#
    ));
}

/// A managed copy with `data` exists in `namespace`.
pub fn has_copy(
    cp: &ControlPlane,
    kind: &str,
    namespace: &str,
    target: &str,
    data: &Value,
) -> bool {
    let Some(copy) = cp.object(kind, namespace, target) else {
        return false;
    };
    let labels = &copy["metadata"]["labels"];
    copy["data"] == *data && labels["app.kubernetes.io/managed-by"] == "skiff"
}

pub fn absent(cp: &ControlPlane, kind: &str, namespace: &str, name: &str) -> bool {
    cp.object(kind, namespace, name).is_none()
}

/// The Mirror's `Ready` condition, once it has one.
pub fn ready(cp: &ControlPlane, name: &str) -> Option<Value> {
    let mirror = cp.object("mirror", OPERATOR_NAMESPACE, name)?;
    let conditions = mirror["status"]["conditions"].as_array()?.clone();
    conditions.into_iter().find(|c| c["type"] == "Ready")
}

/// Whether the Mirror's `Ready` condition has `reason` and a message containing `words`.
pub fn ready_says(cp: &ControlPlane, name: &str, reason: &str, words: &str) -> bool {
    ready(cp, name).is_some_and(|c| {
        c["reason"] == reason && c["message"].as_str().unwrap_or("").contains(words)
    })
}

/// The Events about the Mirror `name` (`kubectl describe` shows them).
pub fn mirror_events(cp: &ControlPlane, name: &str) -> Vec<Value> {
    let Some(events) = cp.get_json(&["events", "-n", OPERATOR_NAMESPACE]) else {
        return Vec::new();
    };
    let items = events["items"].as_array().cloned().unwrap_or_default();
    items
        .into_iter()
        .filter(|e| e["involvedObject"]["kind"] == "Mirror" && e["involvedObject"]["name"] == name)
        .collect()
}

/// Whether an Event about the Mirror `name` has `type_`, `reason` and `words` in its message.
pub fn has_event(cp: &ControlPlane, name: &str, type_: &str, reason: &str, words: &str) -> bool {
    mirror_events(cp, name).iter().any(|e| {
        e["type"] == type_
            && e["reason"] == reason
            && e["message"].as_str().unwrap_or("").contains(words)
    })
}
