//! The built binary under real controller load (a Mirror fanning out to 1,000 namespaces):
//! the lease client's connections carry Lease requests only (the "became leader" Event goes
//! through the main client), and the leader keeps its lease, renewing, while every other
//! request is delayed 5 s or answered 429.
//!
//! Real time, as the binary runs. A renewal that waited behind the controllers' requests would
//! miss the 1.5 s renew deadline and the binary would exit 1: keeping the lease through a
//! window four times the deadline is the verdict, not how evenly the renewals came (that is
//! `make compare`'s figure).

use crate::support::fake::{FakeServer, Fault, RequestClass, RequestRecord};
use crate::support::lease::LEASE_PATH;
use crate::support::skiff::{
    SHORT_RENEW_DEADLINE, SHORT_RETRY, Skiff, TempDir, eventually, is_controller_write,
    is_lease_hold, longest_gap,
};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const NAMESPACES: usize = 1000;
const LEASE_UA: &str = "skiff/leader-election";

fn leader_under_load(tag: &str, extra: &[&str], writes: usize) -> (FakeServer, TempDir, Skiff) {
    crate::support::skiff::leader_under_load(tag, NAMESPACES, extra, writes)
}

fn holder(server: &FakeServer) -> String {
    let lease = server.get(LEASE_PATH).expect("the lease exists");
    lease["spec"]["holderIdentity"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn the_lease_connections_carry_lease_requests_only() {
    let (server, _dir, skiff) = leader_under_load(
        "isolation",
        &["--kube-api-qps=400", "--kube-api-burst=400"],
        50,
    );
    let done = eventually(Duration::from_secs(30), || {
        server.list("/api/v1/configmaps").len() > NAMESPACES
    });
    assert!(done, "fan-out unfinished; log:\n{}", skiff.logs());
    // Two more renewals, so the lease connections are seen after the fan-out too.
    std::thread::sleep(SHORT_RETRY * 2);
    let records = server.requests();
    // The lease client's connections: every one that carried a Lease request or a request
    // with the lease client's User-Agent.
    let lease_conns: BTreeSet<u64> = records
        .iter()
        .filter(|r| r.class == RequestClass::Lease || r.user_agent.as_deref() == Some(LEASE_UA))
        .map(|r| r.conn_id)
        .collect();
    let writes = records.iter().filter(|r| is_controller_write(r)).count();
    let renewals = records.iter().filter(|r| is_lease_hold(r)).count();
    eprintln!(
        "{} requests, {writes} controller writes, {renewals} lease holds on {} lease connections",
        records.len(),
        lease_conns.len()
    );
    assert!(writes >= NAMESPACES && renewals >= 3);
    let strangers: Vec<String> = records
        .iter()
        .filter(|r| lease_conns.contains(&r.conn_id) && !is_lease_request(r))
        .map(|r| {
            format!(
                "{} {} ({:?}) on conn {}",
                r.method, r.path, r.user_agent, r.conn_id
            )
        })
        .collect();
    assert!(
        strangers.is_empty(),
        "the lease client's connections carried other requests: {strangers:#?}"
    );
    let leader_events: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/events"))
        .filter(|r| {
            r.body
                .as_ref()
                .is_some_and(|b| b["reason"] == "LeaderElection")
        })
        .collect();
    assert_eq!(leader_events.len(), 1, "the \"became leader\" Event");
    assert_ne!(leader_events[0].user_agent.as_deref(), Some(LEASE_UA));
}

/// A Lease GET, PUT, POST or watch (GET with `watch`): all the lease client may send.
fn is_lease_request(r: &RequestRecord) -> bool {
    r.class == RequestClass::Lease && ["GET", "PUT", "POST"].contains(&r.method.as_str())
}

/// Sets `fault` on every non-lease request once the fan-out is under way, then watches the
/// leader for four renew deadlines: it must renew and keep the lease throughout.
fn renewals_while_other_requests_suffer(tag: &str, fault: Fault) {
    let (server, _dir, mut skiff) = leader_under_load(tag, &[], 20);
    let leader = holder(&server);
    server.set_fault(RequestClass::Other, fault);
    let faulted_at = Instant::now();
    // The window opens once the controller's requests meet the fault (a liveness bound: they
    // come every 50 ms at the default QPS).
    let suffering = eventually(Duration::from_secs(30), || {
        (server.requests().iter())
            .any(|r| r.class == RequestClass::Other && r.received > faulted_at)
    });
    assert!(suffering, "the controller sent nothing after the fault");
    let from = Instant::now();
    std::thread::sleep(SHORT_RENEW_DEADLINE * 4);
    let to = Instant::now();
    let records = server.requests();
    let renewed: Vec<Instant> = records
        .iter()
        .filter(|r| is_lease_hold(r) && r.method == "PUT")
        .filter_map(|r| r.answered)
        .collect();
    let gap = longest_gap(from, &renewed, to);
    let faulted = records
        .iter()
        .filter(|r| r.class == RequestClass::Other && r.received > faulted_at)
        .count();
    eprintln!("{tag}: longest gap between renewals {gap:?}; {faulted} faulted requests");
    let renewals = renewed.iter().filter(|at| **at > from).count();
    assert!(
        renewals >= 1,
        "no renewal during the fault; log:\n{}",
        skiff.logs()
    );
    assert!(skiff.is_running(), "exited; log:\n{}", skiff.logs());
    assert_eq!(holder(&server), leader);
    assert!(!skiff.logs().contains("leader election lost"));
}

#[test]
fn renews_every_retry_period_while_other_requests_are_delayed_5s() {
    renewals_while_other_requests_suffer("delay", Fault::Delay(Duration::from_secs(5)));
}

#[test]
fn renews_every_retry_period_while_other_requests_get_429() {
    let fault = Fault::TooManyRequests {
        retry_after_secs: 1,
    };
    renewals_while_other_requests_suffer("throttled", fault);
}
