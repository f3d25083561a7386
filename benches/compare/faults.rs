//! The network misbehaving between an operator and the API server, the same way for each
//! operator (a fault proxy in between, as in the e2e suite):
//! - dead connections: every open connection of the leader goes silent for good (a load
//!   balancer or NAT losing its flows); new ones pass;
//! - partition: the leader is cut off for 25 s while a standby reaches the API server directly.
//!
//! What counts is what the API server saw: the Lease from the admin's watch, the copies from
//! kubectl, and every request of the operators from the audit log, by the credential that sent
//! it, so a write that lands late after the partition heals is counted too.

use std::time::{Duration, Instant, SystemTime};

use serde_json::json;

use crate::lease_watch::{LeaseWatch, Seen, holder_changes, renewals};
use crate::lifecycle::wait_leading;
use crate::operator::{Launch, Operator, Replica};
use crate::support::audit::AuditEvent;
use crate::support::control_plane::ControlPlane;
use crate::support::fault_proxy::{FaultProxy, kubeconfig_through};
use crate::world::{self, Identity};

/// Label of the namespaces the fault scenarios copy to.
pub const FAULTS: &str = "compare.skiff.dev/faults";
/// How many there are.
pub const NAMESPACES: usize = 20;
/// How long the scenarios wait for an operator to hear again after the connections died.
const HEAR_LIMIT: Duration = Duration::from_secs(180);
const PARTITION: Duration = Duration::from_secs(25);
const STEP: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Default)]
pub struct DeadConnections {
    /// Fault → the copy of a namespace created 1 s after it; `None`: not within 180 s.
    pub new_namespace: Option<Duration>,
    /// Fault → the source edit made 1 s after it in every copy.
    pub source_edit: Option<Duration>,
    /// Longest time between observed renewals, from the last one before the fault.
    pub max_renew_gap: Duration,
    /// The Lease changed holder or was released.
    pub lease_lost: bool,
    /// Times the leader process exited (it was started again at once, as a kubelet would).
    pub exits: usize,
    /// Connections the operator opened after the fault.
    pub new_connections: usize,
    /// Relists after the fault: LISTs, and watches that stream the initial state (client-go's
    /// WatchList); a watch resumed from its resourceVersion is neither.
    pub lists: usize,
}

#[derive(Debug, Clone, Default)]
pub struct Partition {
    /// The old leader's last observed renewal → its exit; `None`: it did not exit.
    pub old_stopped: Option<Duration>,
    /// The old leader's last observed renewal → the standby holds the Lease.
    pub standby_led: Option<Duration>,
    /// Writes of the old leader the API server received after the standby led.
    pub late_writes: usize,
    /// Connections of the old leader reset with writes still held by the partition.
    pub resets: usize,
    /// Connections whose held bytes were delivered when the partition healed.
    pub delivered_on_heal: usize,
}

/// The namespaces of the fault scenarios, labelled [`FAULTS`].
pub fn create_namespaces(cp: &ControlPlane) {
    let items: Vec<serde_json::Value> = (0..NAMESPACES)
        .map(|i| {
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": format!("fault-{i:02}"), "labels": {FAULTS: "true"}}})
        })
        .collect();
    cp.apply(&json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string());
}

/// One replica behind a fault proxy, leading and converged on the fault namespaces; every
/// open connection then dies, and 1 s later a namespace is added and the source edited.
pub fn dead_connections(
    cp: &ControlPlane,
    operator: &Operator,
    identity: &Identity,
) -> DeadConnections {
    let (proxy, proxied) = behind_proxy(cp, operator, identity, "dead");
    let launch = Launch::new(cp, operator, &proxied, FAULTS, "dead");
    world::free_lease(cp, operator);
    let (namespace, name) = operator.lease();
    let watch = LeaseWatch::start(cp, namespace, name);
    let mut leader = launch.start("dead");
    wait_leading(&watch, &mut leader, operator);
    world::create_source(cp, &launch);
    wait_for(STEP, || world::count_copies(cp, &launch) >= NAMESPACES)
        .unwrap_or_else(|| panic!("{}: no copies; log:\n{}", operator.label, leader.logs()));
    std::thread::sleep(Duration::from_secs(5));

    let opened_before = proxy.stats().opened;
    let (fault, fault_wall) = (Instant::now(), SystemTime::now());
    proxy.kill_open();
    std::thread::sleep(Duration::from_secs(1));
    let late = format!("fault-late-{}", operator.slug);
    cp.apply(
        &json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": late, "labels": {FAULTS: "true"}}})
        .to_string(),
    );
    world::edit_source(cp, &launch, "edited");
    let mut exits = 0;
    let mut new_namespace = None;
    let mut source_edit = None;
    while fault.elapsed() < HEAR_LIMIT && (new_namespace.is_none() || source_edit.is_none()) {
        if leader.exited().is_some() {
            exits += 1;
            leader = launch.start(&format!("dead-{exits}"));
        }
        if new_namespace.is_none() && world::copy_exists(cp, &launch, &late) {
            new_namespace = Some(fault.elapsed());
        }
        let (edited, all) = world::copies_with(cp, &launch, "edited");
        if source_edit.is_none() && all > NAMESPACES && edited == all {
            source_edit = Some(fault.elapsed());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(3));
    let seen = watch.seen();
    let user = world::user(operator);
    let lists = count(&cp.audit(), |e| {
        e.user == user && e.is_relist() && e.received > fault_wall
    });
    DeadConnections {
        new_namespace,
        source_edit,
        max_renew_gap: max_gap_from(&seen, fault),
        lease_lost: holder_changes(&seen) > 0 || exits > 0,
        exits,
        new_connections: proxy.stats().opened - opened_before,
        lists,
    }
}

/// The leader behind a fault proxy, mid fan-out, cut off for 25 s while a standby reaches the
/// API server directly.
pub fn partition(
    cp: &ControlPlane,
    operator: &Operator,
    identity: &Identity,
    standby_identity: &Identity,
) -> Partition {
    let (proxy, proxied) = behind_proxy(cp, operator, identity, "part");
    let launch = Launch::new(cp, operator, &proxied, crate::world::WIDE, "part");
    let standby_launch = Launch::new(cp, operator, standby_identity, crate::world::WIDE, "part");
    world::free_lease(cp, operator);
    let (namespace, name) = operator.lease();
    let watch = LeaseWatch::start(cp, namespace, name);
    let mut old = launch.start("part-old");
    wait_leading(&watch, &mut old, operator);
    let old_holder = watch.holder();
    let _standby: Replica = standby_launch.start("part-standby");
    world::create_source(cp, &launch);
    wait_for(STEP, || world::count_copies(cp, &launch) >= 20)
        .unwrap_or_else(|| panic!("{}: not writing; log:\n{}", operator.label, old.logs()));

    let cut = Instant::now();
    proxy.partition();
    let mut exited_at = None;
    while cut.elapsed() < PARTITION {
        if exited_at.is_none() && old.exited().is_some() {
            exited_at = Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let led = watch.wait_for(cut, Duration::ZERO, |s| {
        !s.holder.is_empty() && s.holder != old_holder
    });
    proxy.heal();
    std::thread::sleep(Duration::from_secs(5));
    let seen = watch.seen();
    let last = renewals(&seen)
        .into_iter()
        .rfind(|s| s.holder == old_holder && s.at <= cut)
        .map_or(cut, |s| s.at);
    let late_writes = match &led {
        Some(led) => {
            let led_wall = SystemTime::now() - led.at.elapsed();
            let old_credential = credential(operator, &identity.token);
            count(&cp.audit(), |e| {
                e.credential == old_credential && e.is_write() && e.received >= led_wall
            })
        }
        None => 0,
    };
    let stats = proxy.stats();
    Partition {
        old_stopped: exited_at.map(|at| at.saturating_duration_since(last)),
        standby_led: led.map(|s| s.at.saturating_duration_since(last)),
        late_writes,
        resets: stats.reset_with_held_bytes,
        delivered_on_heal: stats.delivered_on_heal,
    }
}

/// A fault proxy to the API server, and `identity` reaching it through the proxy.
pub fn behind_proxy(
    cp: &ControlPlane,
    operator: &Operator,
    identity: &Identity,
    scenario: &str,
) -> (FaultProxy, Identity) {
    let proxy = FaultProxy::start(cp.url().trim_start_matches("https://"));
    let kubeconfig = cp
        .dir()
        .join(format!("compare/{}-{scenario}.kubeconfig", operator.slug));
    kubeconfig_through(&identity.kubeconfig, &proxy.address(), &kubeconfig);
    let proxied = Identity {
        kubeconfig,
        token: identity.token.clone(),
    };
    (proxy, proxied)
}

/// How the audit log names the credential an operator runs with: the static token's uid for
/// skiff, the bound token's id for the peer.
fn credential(operator: &Operator, token: &str) -> String {
    if operator.is_skiff() {
        return crate::support::control_plane::OPERATOR_UID.to_owned();
    }
    crate::support::audit::token_credential(token).unwrap_or_default()
}

fn count(events: &[AuditEvent], wanted: impl Fn(&AuditEvent) -> bool) -> usize {
    events.iter().filter(|e| wanted(e)).count()
}

/// The longest time between renewals seen, from the last one before `from`.
fn max_gap_from(seen: &[Seen], from: Instant) -> Duration {
    let renewed = renewals(seen);
    let start = renewed
        .iter()
        .filter(|s| s.at <= from)
        .map(|s| s.at)
        .next_back();
    let times: Vec<Instant> = renewed
        .iter()
        .map(|s| s.at)
        .filter(|t| Some(*t) >= start)
        .collect();
    let mut gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    if let Some(last) = times.last() {
        gaps.push(last.elapsed());
    }
    gaps.into_iter().max().unwrap_or_default()
}

fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if done() {
            return Some(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    None
}
