//! e2e: skiff keeps its Lease for a full minute while the API server rejects its other requests.
//!
//! Why: this is skiff's reason to exist. A PriorityLevelConfiguration with one concurrency
//! share that rejects instead of queuing takes every non-Lease request of skiff's
//! ServiceAccount (through a FlowSchema matched before skiff's own), and load in that level
//! (a fan-out to 200 namespaces, plus a test client listing ConfigMaps as the same user) makes
//! the server answer 429. The shipped FlowSchema still routes the Lease requests to
//! `leader-election`, and skiff's separate lease client must renew on time throughout.
//!
//! Real time, as the binary runs: "on time" is judged as skiff judges it. A leader that misses
//! its renew deadline gives the Lease up and exits 1, so the test asserts the Lease kept (never
//! lost, no other holder, renewed after the minute) and no Lease request throttled; how long
//! the gaps between renewals were is printed (and measured by `make compare`'s squeeze).

use std::collections::BTreeSet;
use std::time::{Duration, Instant, SystemTime};

use crate::support::control_plane::{ControlPlane, OPERATOR_UID, require_e2e_binaries};
use crate::support::lease::{LEASE_PATH, LeasePoller, LeaseRecord, renew_gaps};
use crate::support::load::ListLoad;
use crate::support::scrape::{scrape, sum_samples};
use crate::support::skiff::{Skiff, TempDir, free_port};

/// How long the lease must be kept under throttling (a full minute).
const THROTTLED_FOR: Duration = Duration::from_secs(60);
const LEASE_FLAGS: [&str; 3] = [
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=1s",
];
/// Namespaces the Mirror fans out to.
const FAN_OUT: usize = 200;
/// Test clients listing ConfigMaps as the operator, keeping the throttled level's seats busy.
const LOAD_THREADS: usize = 4;
/// skiff's graceful-shutdown timeout here: far longer than [`LIVENESS`]. The controller's client
/// is cancelled at the stop, so no reconcile waits out 429 back-offs (which once took the whole
/// graceful-shutdown timeout, keeping a standby from leading) or sends another write: only
/// requests already on the wire are waited for. The test reads the copy writes the API server
/// received after the signal: at most [`WRITES_IN_FLIGHT`], and none twice (a retry after a
/// 429 would be sent after the signal).
const GRACEFUL_SHUTDOWN: &str = "--graceful-shutdown-timeout=5m";
/// The copy writes one namespace's Mirrors have in flight at most (`MAX_IN_FLIGHT` of
/// `src/mirror/apply.rs`).
const WRITES_IN_FLIGHT: usize = 16;
/// Leading, exiting, releasing: each takes a second or two. A liveness bound, 10× or more.
const LIVENESS: Duration = Duration::from_secs(30);
const THROTTLED_LEVEL: &str = "skiff-e2e-throttled";

/// One concurrency share (a few seats of the server's limit), nothing lent or borrowed, and
/// no queues: whatever does not fit is rejected with 429 at once.
const PRIORITY_LEVEL: &str = r#"{
  "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
  "metadata": {"name": "skiff-e2e-throttled"},
  "spec": {"type": "Limited", "limited": {
    "nominalConcurrencyShares": 1, "lendablePercent": 0, "borrowingLimitPercent": 0,
    "limitResponse": {"type": "Reject"}}}}"#;

/// Every request of skiff's ServiceAccount outside `coordination.k8s.io` (so not its Lease),
/// matched before the shipped `skiff-leader-election` (200) and the built-in schemas.
const FLOW_SCHEMA: &str = r#"{
  "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
  "metadata": {"name": "skiff-e2e-throttled"},
  "spec": {
    "priorityLevelConfiguration": {"name": "skiff-e2e-throttled"},
    "matchingPrecedence": 150,
    "distinguisherMethod": {"type": "ByUser"},
    "rules": [{
      "subjects": [{"kind": "ServiceAccount",
                    "serviceAccount": {"name": "skiff", "namespace": "skiff-system"}}],
      "resourceRules": [{"apiGroups": ["", "skiff.dev", "events.k8s.io"], "resources": ["*"],
                         "verbs": ["*"], "clusterScope": true, "namespaces": ["*"]}]}]}}"#;

fn uid(cp: &ControlPlane, kind: &str, name: &str) -> String {
    cp.kubectl_ok(&["get", kind, name, "-o", "jsonpath={.metadata.uid}"])
}

/// The priority level an operator GET of `path` was put in.
fn priority_level_of(cp: &ControlPlane, path: &str) -> String {
    let response = cp.raw_get(path, cp.operator_token());
    let level = response.header("X-Kubernetes-PF-PriorityLevel-UID");
    level.unwrap_or_default().to_owned()
}

/// Installs the throttling level and waits until the server classifies by it.
fn throttle_the_operator(cp: &ControlPlane) {
    cp.apply(PRIORITY_LEVEL);
    cp.apply(FLOW_SCHEMA);
    let throttled = uid(cp, "prioritylevelconfiguration", THROTTLED_LEVEL);
    let configmaps = "/api/v1/namespaces/skiff-system/configmaps";
    let deadline = Instant::now() + LIVENESS;
    while priority_level_of(cp, configmaps) != throttled {
        assert!(
            Instant::now() < deadline,
            "{configmaps} never reached the throttled level"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let leader_election = uid(cp, "prioritylevelconfiguration", "leader-election");
    assert_eq!(
        priority_level_of(cp, LEASE_PATH),
        leader_election,
        "the throttling FlowSchema must not take the Lease requests"
    );
}

fn fan_out_namespaces(cp: &ControlPlane) {
    let items: Vec<serde_json::Value> = (0..FAN_OUT)
        .map(|i| {
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": format!("throttled-{i}"), "labels": {"fan-out": "wide"}}})
        })
        .collect();
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    cp.apply(&list.to_string());
}

fn mirror_to_every_namespace(cp: &ControlPlane, payload: &str) {
    cp.apply(&format!(
        r#"{{"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {{"name": "wide", "namespace": "skiff-system"}},
            "data": {{"payload": "{payload}"}}}}"#
    ));
    cp.apply(
        r#"{"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {"name": "wide", "namespace": "skiff-system"},
            "spec": {"source": {"kind": "ConfigMap", "name": "wide"},
                     "namespaceSelector": {"matchLabels": {"fan-out": "wide"}}}}"#,
    );
}

/// How long the last reading had shown the same renewTime (the gap still open at the end).
fn unrenewed_at_end(records: &[LeaseRecord]) -> Duration {
    let Some(last) = records.last() else {
        return THROTTLED_FOR;
    };
    let first_seen = records.iter().find(|r| r.renew_time == last.renew_time);
    first_seen.map_or(THROTTLED_FOR, |r| last.at.duration_since(r.at))
}

fn start_skiff(cp: &ControlPlane, dir: &TempDir, metrics_port: u16) -> Skiff {
    let metrics_flag = format!("--metrics-bind-address=127.0.0.1:{metrics_port}");
    let mut args = vec![
        "--leader-elect",
        "--leader-election-namespace=skiff-system",
        "--source-namespaces=skiff-system",
        "--kube-api-qps=200",
        "--kube-api-burst=200",
        "--log-level=debug",
        &metrics_flag,
        "--metrics-secure=false",
        GRACEFUL_SHUTDOWN,
    ];
    args.extend(LEASE_FLAGS);
    let log = dir.0.join("skiff.log");
    let env = [("POD_NAME", "throttled")];
    Skiff::start_with_env(&cp.operator_kubeconfig(), log, &args, &env)
}

/// skiff's copy writes the API server received from `since` on (those it refused with 429
/// too), from its audit log: (verb, URI, status).
fn copy_writes_since(cp: &ControlPlane, since: SystemTime) -> Vec<(String, String, Option<u64>)> {
    (cp.audit().into_iter())
        .filter(|e| e.uid == OPERATOR_UID && e.is_write() && e.uri.contains("/configmaps"))
        .filter(|e| e.received >= since)
        .map(|e| (e.verb, e.uri, e.code))
        .collect()
}

/// `rest_client_requests_total` of `client` with status `code`.
fn requests(metrics: &str, client: &str, code: &str) -> u64 {
    let labels = [("client", client), ("code", code)];
    sum_samples(metrics, "rest_client_requests_total", &labels) as u64
}

/// What the Mirror got done while throttled: "synced/selected" and the copies that exist.
fn fan_out_progress(cp: &ControlPlane) -> String {
    let status = "jsonpath={.status.synced}/{.status.selected}";
    let synced = cp.kubectl_ok(&["get", "mirror", "wide", "-n", "skiff-system", "-o", status]);
    let copies = [
        "get",
        "cm",
        "-A",
        "-l",
        "skiff.dev/mirror-name=wide",
        "--no-headers",
    ];
    let copies = cp.kubectl_ok(&copies).lines().count();
    format!("status synced/selected {synced}, {copies} copies")
}

/// The longest time the Lease went without an observed renewal, including the gap still open
/// at the end, and how many renewals were seen.
fn longest_unrenewed(records: &[LeaseRecord], leader: &str) -> (Duration, usize) {
    let gaps = renew_gaps(records, leader);
    let longest = gaps
        .iter()
        .copied()
        .chain([unrenewed_at_end(records)])
        .max();
    (longest.unwrap_or(THROTTLED_FOR), gaps.len())
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn keeps_the_lease_for_a_minute_while_controller_requests_get_429() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    throttle_the_operator(cp);
    fan_out_namespaces(cp);
    let dir = TempDir::new("e2e-throttled");
    let metrics_port = free_port();
    let mut skiff = start_skiff(cp, &dir, metrics_port);
    let poller = LeasePoller::start(cp, Duration::from_millis(100));
    let leading = poller.wait_for(Instant::now(), LIVENESS, |r| {
        r.holder.starts_with("throttled_")
    });
    let leader = leading
        .unwrap_or_else(|| panic!("skiff never held the Lease; log:\n{}", skiff.logs()))
        .holder;

    let load = ListLoad::start(cp, cp.operator_token(), LOAD_THREADS);
    mirror_to_every_namespace(cp, "one");
    let throttled_from = Instant::now();
    std::thread::sleep(THROTTLED_FOR / 2);
    mirror_to_every_namespace(cp, "two");
    std::thread::sleep(THROTTLED_FOR / 2);
    // No other holder all minute, and renewed after it (liveness: renewals come every second).
    let kept = (poller.kept_by(&leader, throttled_from, LIVENESS))
        .and_then(|()| poller.kept_by(&leader, Instant::now(), LIVENESS));
    let log = skiff.logs();
    assert!(
        skiff.is_running() && !log.contains("leader election lost"),
        "skiff lost the Lease under throttling; log:\n{log}"
    );
    let metrics = scrape(metrics_port);
    let records: Vec<_> = poller
        .records()
        .into_iter()
        .filter(|r| r.at >= throttled_from)
        .collect();
    let (longest, renewals) = longest_unrenewed(&records, &leader);
    let rejected = requests(&metrics, "main", "429");
    let lease_ok = requests(&metrics, "leader-election", "200");
    let lease_rejected = requests(&metrics, "leader-election", "429");
    eprintln!(
        "throttled: {} s; skiff's main client got {rejected} 429s; lease client {lease_ok} \
         ok, {lease_rejected} 429s; {renewals} renewals, longest gap {} ms; {}",
        throttled_from.elapsed().as_secs(),
        longest.as_millis(),
        fan_out_progress(cp)
    );
    assert!(
        rejected > 0,
        "skiff's main client got no 429: nothing was throttled"
    );
    assert!(lease_ok > 0, "no lease client requests in the metrics");
    assert_eq!(lease_rejected, 0, "a Lease request was throttled");
    if let Err(why) = kept {
        panic!("{why}; log:\n{log}");
    }

    let (signalled, signalled_wall) = (Instant::now(), SystemTime::now());
    skiff.signal("TERM");
    let code = skiff.wait_exit(LIVENESS);
    let exited_after = signalled.elapsed();
    let released = poller.wait_for(signalled, LIVENESS, |r| {
        r.holder.is_empty() && r.duration_seconds == 1
    });
    let load_rejected = load.stop();
    eprintln!(
        "throttled: SIGTERM under throttling: exit {code:?} after {} ms; \
         test load got {load_rejected} 429s",
        exited_after.as_millis()
    );
    assert_eq!(code, Some(0), "skiff exit; log:\n{}", skiff.logs());
    let log = skiff.logs();
    assert!(
        !log.contains("did not stop within"),
        "a controller waited out the graceful-shutdown timeout; log:\n{log}"
    );
    let late = copy_writes_since(cp, signalled_wall);
    eprintln!("throttled: copy writes the API server received after SIGTERM: {late:?}");
    let once: BTreeSet<(&String, &String)> = late.iter().map(|(v, uri, _)| (v, uri)).collect();
    assert!(
        late.len() <= WRITES_IN_FLIGHT && once.len() == late.len(),
        "copy writes sent after SIGTERM, not only those on the wire: {late:?}; log:\n{log}"
    );
    assert!(
        released.is_some(),
        "Lease not released: {:?}",
        poller.latest()
    );
}
