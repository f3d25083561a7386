//! e2e: skiff keeps its Lease for a full minute while the API server rejects its other requests.
//!
//! Why: this is skiff's reason to exist. A PriorityLevelConfiguration with one concurrency
//! share that rejects instead of queuing takes every non-Lease request of skiff's
//! ServiceAccount (through a FlowSchema matched before skiff's own), and load in that level
//! (a fan-out to 200 namespaces, plus a test client listing ConfigMaps as the same user) makes
//! the server answer 429. The shipped FlowSchema still routes the Lease requests to
//! `leader-election`, and skiff's separate lease client must renew on time throughout.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use support::control_plane::{ControlPlane, e2e_enabled};
use support::keepalive::KeepAliveGet;
use support::lease::{LEASE_PATH, LeasePoller, LeaseRecord, renew_gaps};
use support::scrape::{scrape, sum_samples};
use support::skiff::{Skiff, TempDir};
use support::watchdog::free_ports;

/// How long the lease must be kept under throttling (issue 5: "a full minute").
const THROTTLED_FOR: Duration = Duration::from_secs(60);
const RETRY_PERIOD: Duration = Duration::from_secs(1);
const LEASE_FLAGS: [&str; 3] = [
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=1s",
];
/// Namespaces the Mirror fans out to.
const FAN_OUT: usize = 200;
/// Test clients listing ConfigMaps as the operator, keeping the throttled level's seats busy.
const LOAD_THREADS: usize = 6;
/// Once the load stops: the longest watch backoff (30 s) plus the fan-out itself.
const RECOVERY_TIMEOUT: Duration = Duration::from_secs(45);
const STEP_TIMEOUT: Duration = Duration::from_secs(30);
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

fn control_plane() -> &'static ControlPlane {
    ControlPlane::shared().install_manifests()
}

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
    let deadline = Instant::now() + STEP_TIMEOUT;
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

/// Threads listing every ConfigMap as the operator until stopped; counts their 429s.
struct Load {
    stop: Arc<AtomicBool>,
    rejected: Arc<AtomicUsize>,
    threads: Vec<JoinHandle<()>>,
}

impl Load {
    fn start(cp: &'static ControlPlane) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let rejected = Arc::new(AtomicUsize::new(0));
        let threads = (0..LOAD_THREADS)
            .map(|_| {
                let (stop, rejected) = (stop.clone(), rejected.clone());
                let mut client = KeepAliveGet::new(cp.url(), cp.ca_pem(), cp.operator_token());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        match client.get("/api/v1/configmaps") {
                            Ok((429, _)) => {
                                rejected.fetch_add(1, Ordering::Relaxed);
                                std::thread::sleep(Duration::from_millis(5));
                            }
                            Ok(_) => {}
                            Err(_) => std::thread::sleep(Duration::from_millis(50)),
                        }
                    }
                })
            })
            .collect();
        Load {
            stop,
            rejected,
            threads,
        }
    }

    /// Stops the threads; returns how many of their requests were rejected.
    fn stop(mut self) -> usize {
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

impl Drop for Load {
    fn drop(&mut self) {
        self.halt();
    }
}

/// How long the last reading had shown the same renewTime (the gap still open at the end).
fn unrenewed_at_end(records: &[LeaseRecord]) -> Duration {
    let Some(last) = records.last() else {
        return THROTTLED_FOR;
    };
    let first_seen = records.iter().find(|r| r.renew_time == last.renew_time);
    first_seen.map_or(THROTTLED_FOR, |r| last.at.duration_since(r.at))
}

#[test]
fn keeps_the_lease_for_a_minute_while_controller_requests_get_429() {
    if !e2e_enabled() {
        return;
    }
    let cp = control_plane();
    throttle_the_operator(cp);
    fan_out_namespaces(cp);
    let dir = TempDir::new("e2e-throttled");
    let [metrics_port, ..] = free_ports().expect("free port");
    let metrics_flag = format!("--metrics-bind-address=127.0.0.1:{metrics_port}");
    let mut args = vec![
        "--leader-elect",
        "--leader-election-namespace=skiff-system",
        "--source-namespaces=skiff-system",
        "--kube-api-qps=200",
        "--kube-api-burst=200",
        "--log-level=debug",
        &metrics_flag,
    ];
    args.extend(LEASE_FLAGS);
    let log = dir.0.join("skiff.log");
    let env = [("POD_NAME", "throttled")];
    let mut skiff = Skiff::start_with_env(&cp.operator_kubeconfig(), log, &args, &env);
    let poller = LeasePoller::start(cp, Duration::from_millis(100));
    let started = Instant::now();
    let leading = poller.wait_for(started, STEP_TIMEOUT, |r| {
        r.holder.starts_with("throttled_")
    });
    let leader = leading
        .unwrap_or_else(|| panic!("skiff never held the Lease; log:\n{}", skiff.logs()))
        .holder;

    let load = Load::start(cp);
    mirror_to_every_namespace(cp, "one");
    let throttled_from = Instant::now();
    std::thread::sleep(THROTTLED_FOR / 2);
    mirror_to_every_namespace(cp, "two");
    std::thread::sleep(THROTTLED_FOR / 2);
    let running = skiff.is_running();
    let metrics = if running {
        scrape(metrics_port)
    } else {
        String::new()
    };
    let load_rejected = load.stop();
    let records: Vec<_> = poller
        .stop()
        .into_iter()
        .filter(|r| r.at >= throttled_from)
        .collect();

    let rejected_main = sum_samples(
        &metrics,
        "rest_client_requests_total",
        &[("client", "main"), ("code", "429")],
    );
    let rejected_lease = sum_samples(
        &metrics,
        "rest_client_requests_total",
        &[("client", "leader-election"), ("code", "429")],
    );
    let renewed_ok = sum_samples(
        &metrics,
        "rest_client_requests_total",
        &[("client", "leader-election"), ("code", "200")],
    );
    let synced = cp.kubectl_ok(&[
        "get",
        "mirror",
        "wide",
        "-n",
        "skiff-system",
        "-o",
        "jsonpath={.status.synced}/{.status.selected}",
    ]);
    let copies = cp
        .kubectl_ok(&[
            "get",
            "cm",
            "-A",
            "-l",
            "skiff.dev/mirror-name=wide",
            "--no-headers",
        ])
        .lines()
        .count();
    let logged_429 = skiff.logs().lines().filter(|l| l.contains(" 429")).count();
    let gaps = renew_gaps(&records, &leader);
    let longest = gaps
        .iter()
        .copied()
        .chain([unrenewed_at_end(&records)])
        .max()
        .unwrap_or(THROTTLED_FOR);
    eprintln!(
        "throttled: {} s; skiff main client 429s: {} (log lines: {logged_429}); \
         lease client: {} ok, {} 429s; test load 429s: {load_rejected}; \
         {} renewals, longest gap {} ms; Mirror synced {synced}, {copies} copies",
        throttled_from.elapsed().as_secs(),
        rejected_main as u64,
        renewed_ok as u64,
        rejected_lease as u64,
        gaps.len(),
        longest.as_millis()
    );

    assert!(
        running,
        "skiff exited under throttling; log:\n{}",
        skiff.logs()
    );
    assert!(
        rejected_main > 0.0,
        "no request of skiff's main client was rejected: the test throttled nothing"
    );
    assert!(renewed_ok > 0.0, "no lease client requests in the metrics");
    assert_eq!(rejected_lease as u64, 0, "a Lease request was throttled");
    let strangers: Vec<_> = records.iter().filter(|r| r.holder != leader).collect();
    assert!(strangers.is_empty(), "skiff lost the Lease: {strangers:?}");
    assert!(
        longest <= RETRY_PERIOD + Duration::from_secs(1),
        "renewals {longest:?} apart: {gaps:?}"
    );
    assert!(
        gaps.len() as u64 >= THROTTLED_FOR.as_secs() / 2,
        "too few renewals observed: {}",
        gaps.len()
    );

    let recovering = Instant::now();
    let recovered = support::skiff::eventually(RECOVERY_TIMEOUT, || {
        let row = cp.kubectl_ok(&[
            "get",
            "mirror",
            "wide",
            "-n",
            "skiff-system",
            "--no-headers",
        ]);
        row.split_whitespace()
            .skip(2)
            .take(3)
            .eq(["200", "200", "True"])
    });
    assert!(
        recovered,
        "the Mirror did not sync once the load stopped; log:\n{}",
        skiff.logs()
    );
    eprintln!(
        "throttled: load stopped; all {FAN_OUT} copies synced {} ms later",
        recovering.elapsed().as_millis()
    );

    skiff.signal("TERM");
    assert_eq!(
        skiff.wait_exit(STEP_TIMEOUT),
        Some(0),
        "skiff exit; log:\n{}",
        skiff.logs()
    );
}
