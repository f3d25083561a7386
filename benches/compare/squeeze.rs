//! The Lease under controller load with API Priority and Fairness: while an operator fans out
//! to every namespace, the priority level its requests land in is squeezed to one concurrency
//! share that rejects instead of queuing, and kept full by clients listing ConfigMaps as the
//! same user. Renewals are recorded from the server side, by watching the Lease.
//!
//! The squeeze is the same for each operator: one FlowSchema takes every request of either
//! ServiceAccount that no more specific FlowSchema claims (precedence 1000, before the
//! built-in `service-accounts` at 9000). skiff's shipped FlowSchema (200) claims its Lease
//! requests for the `leader-election` level; a peer as scaffolded has none, so its Lease
//! requests wait in the squeezed level with its controller traffic.

use std::time::{Duration, Instant};

use crate::lease_watch::{LeaseWatch, holder_changes, renewals};
use crate::operator::{Launch, Operator, RENEW_DEADLINE, RETRY_PERIOD};
use crate::support::control_plane::ControlPlane;
use crate::support::load::ListLoad;
use crate::world::{self, Identity, WIDE};

const LEVEL: &str = "compare-squeezed";
const SCHEMA: &str = "compare-squeeze";
const STEP_TIMEOUT: Duration = Duration::from_secs(60);

const PRIORITY_LEVEL: &str = r#"{
  "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
  "metadata": {"name": "compare-squeezed"},
  "spec": {"type": "Limited", "limited": {
    "nominalConcurrencyShares": 1, "lendablePercent": 0, "borrowingLimitPercent": 0,
    "limitResponse": {"type": "Reject"}}}}"#;

const FLOW_SCHEMA: &str = r#"{
  "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
  "metadata": {"name": "compare-squeeze"},
  "spec": {
    "priorityLevelConfiguration": {"name": "compare-squeezed"},
    "matchingPrecedence": 1000,
    "distinguisherMethod": {"type": "ByUser"},
    "rules": [{
      "subjects": [
        {"kind": "ServiceAccount", "serviceAccount": {"name": "skiff", "namespace": "skiff-system"}},
        {"kind": "ServiceAccount", "serviceAccount": {"name": "skiff-peer", "namespace": "skiff-peer"}}],
      "resourceRules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"],
                         "clusterScope": true, "namespaces": ["*"]}]}]}}"#;

/// What one operator did under the squeeze.
#[derive(Debug, Clone, Default)]
pub struct Squeezed {
    pub renewals: usize,
    pub max_gap: Duration,
    /// Gaps between renewals longer than the renew deadline: each time, the leader gave up
    /// (client-go and skiff both stop leading at the renew deadline).
    pub losses: usize,
    /// Times the holder changed (to another replica or to none).
    pub holder_changes: usize,
    /// Replicas that exited (non-zero) and were started again, as a Deployment would.
    pub restarts: usize,
    /// (seconds into the squeeze, seconds since the previous renewal): at the start, at each
    /// renewal, and at the end.
    pub gaps: Vec<(f64, f64)>,
    pub copies: usize,
    pub load_rejected: usize,
}

pub fn run(
    cp: &ControlPlane,
    operator: &Operator,
    identity: &Identity,
    squeeze: Duration,
    load_threads: usize,
) -> Squeezed {
    let launch = Launch::new(cp, operator, identity, WIDE, "wide");
    if operator.with_flowschema {
        world::apply_peer_flowschema(cp, true);
    }
    let (namespace, name) = operator.lease();
    let watch = LeaseWatch::start(cp, namespace, name);
    let mut replica = launch.start("squeezed-0");
    crate::lifecycle::wait_leading(&watch, &mut replica, operator);
    std::thread::sleep(RETRY_PERIOD * 2);
    install(cp, identity);
    world::create_source(cp, &launch);
    let load = ListLoad::start(cp, &identity.token, load_threads);
    let from = Instant::now();
    let mut restarts = 0;
    while from.elapsed() < squeeze {
        if let Some(code) = replica.exited() {
            eprintln!(
                "compare: {} exited {code} under the squeeze; restarted",
                operator.label
            );
            restarts += 1;
            replica = launch.start(&format!("squeezed-{restarts}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let to = Instant::now();
    let load_rejected = load.stop();
    remove(cp);
    let copies = world::count_copies(cp, &launch);
    let _ = replica.terminate(Duration::from_secs(40));
    if operator.with_flowschema {
        world::apply_peer_flowschema(cp, false);
    }
    let mut result = judge(&watch, from, to);
    result.restarts = restarts;
    result.copies = copies;
    result.load_rejected = load_rejected;
    result
}

/// Renewals, gaps and holder changes between `from` and `to`. The gaps start with the time
/// since the last renewal before `from` (the sawtooth's starting height).
fn judge(watch: &LeaseWatch, from: Instant, to: Instant) -> Squeezed {
    let all = watch.seen();
    let every_renewal = renewals(&all);
    let before = every_renewal.iter().rfind(|r| r.at < from).cloned();
    let in_window = |at: Instant| at >= from && at <= to;
    let renewed: Vec<_> = every_renewal
        .into_iter()
        .filter(|r| in_window(r.at))
        .collect();
    let seen: Vec<_> = all.into_iter().filter(|s| in_window(s.at)).collect();
    let mut previous = before.map_or(from, |r| r.at);
    let mut gaps = vec![(0.0, secs(from - previous))];
    for r in &renewed {
        gaps.push((secs(r.at - from), secs(r.at - previous)));
        previous = r.at;
    }
    gaps.push((secs(to - from), secs(to - previous)));
    let max_gap = gaps.iter().map(|g| g.1).fold(0.0, f64::max);
    let deadline = RENEW_DEADLINE.as_secs_f64();
    Squeezed {
        renewals: renewed.len(),
        max_gap: Duration::from_secs_f64(max_gap),
        losses: gaps.iter().filter(|g| g.1 > deadline).count(),
        holder_changes: holder_changes(&seen),
        gaps,
        ..Squeezed::default()
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// The squeezed level, once; then the FlowSchema, waiting until the server classifies the
/// operator's requests by it.
fn install(cp: &ControlPlane, identity: &Identity) {
    cp.apply(PRIORITY_LEVEL);
    cp.apply(FLOW_SCHEMA);
    let uid = cp.kubectl_ok(&[
        "get",
        "prioritylevelconfiguration",
        LEVEL,
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    let path = "/api/v1/namespaces/default/configmaps";
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        let response = cp.raw_get(path, &identity.token);
        if response.header("X-Kubernetes-PF-PriorityLevel-UID") == Some(uid.trim()) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{path} never reached the squeezed level"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn remove(cp: &ControlPlane) {
    cp.kubectl_ok(&["delete", "flowschema", SCHEMA, "--ignore-not-found"]);
}
