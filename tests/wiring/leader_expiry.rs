//! Expiry as the built binary judges it: by its own observation plus leaseDurationSeconds,
//! whatever renewTime the lease carries; and lease timings that cannot work refused at start.

use crate::support::fake::FakeServer;
use crate::support::lease::LEASE_PATH;
use crate::support::skiff::{
    HOME_NS, SHORT_LEASE, Skiff, TempDir, eventually, is_lease_hold, write_kubeconfig,
};
use serde_json::json;
use std::time::Duration;

/// A lease held by a replica that stopped renewing, claiming `renew_time`; returns how long
/// after its first look at the lease the binary took it over.
fn takeover_after_first_look(tag: &str, renew_time: &str) -> Duration {
    let server = FakeServer::start();
    server.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HOME_NS}}));
    server.insert(
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "skiff-leader", "namespace": HOME_NS},
        "spec": {"holderIdentity": "ghost_x", "leaseDurationSeconds": 1,
                 "acquireTime": renew_time, "renewTime": renew_time, "leaseTransitions": 4}}),
    );
    let dir = TempDir::new(tag);
    let kubeconfig = write_kubeconfig(&dir, &server.url(), None, None, HOME_NS);
    let skiff = Skiff::start(&kubeconfig, dir.0.join("skiff.log"), &SHORT_LEASE);
    // A liveness bound, 30× the ghost's 1 s lease: a binary that believed the renewTime of
    // 2999 would never take it.
    let taken = eventually(Duration::from_secs(30), || {
        server.requests().iter().any(is_lease_hold)
    });
    assert!(
        taken,
        "{renew_time}: never taken over; log:\n{}",
        skiff.logs()
    );
    let records = server.requests();
    let first_look = records
        .iter()
        .find(|r| r.path == LEASE_PATH && r.method == "GET")
        .and_then(|r| r.answered)
        .expect("a GET of the lease");
    let taken_at = records
        .iter()
        .find(|r| is_lease_hold(r))
        .map(|r| r.received)
        .expect("a takeover");
    let lease = server.get(LEASE_PATH).expect("lease");
    assert_eq!(lease["spec"]["leaseTransitions"], 5, "{lease}");
    assert_eq!(
        lease["spec"]["leaseDurationSeconds"], 2,
        "our own duration: {lease}"
    );
    taken_at - first_look
}

#[test]
fn a_renew_time_far_in_the_past_or_future_does_not_change_when_the_lease_expires() {
    let (past, future) = std::thread::scope(|s| {
        let past = s.spawn(|| takeover_after_first_look("past", "1970-01-01T00:00:00.000000Z"));
        let future = s.spawn(|| takeover_after_first_look("future", "2999-12-31T23:59:59.999999Z"));
        (past.join().expect("past"), future.join().expect("future"))
    });
    eprintln!("taken over after {past:?} (renewTime 1970) and {future:?} (renewTime 2999)");
    // The binary looked at the lease no sooner than the server answered, and waits out the
    // lease's own 1 s from its look: never sooner, however fast or slow the machine. One that
    // believed the renewTime of 1970 would take it at once.
    for took in [past, future] {
        assert!(
            took >= Duration::from_millis(1000),
            "taken over {took:?} after the first look; the ghost's lease lasts 1 s"
        );
    }
}

#[test]
fn a_renew_deadline_within_the_jittered_retry_period_is_refused_naming_the_flag() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_skiff"))
        .args([
            "--leader-elect",
            "--leader-elect-lease-duration=2s",
            "--leader-elect-renew-deadline=500ms",
            "--leader-elect-retry-period=500ms",
        ])
        .output()
        .expect("the skiff binary runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--leader-elect-renew-deadline"), "{stderr}");
    assert!(stderr.contains("--leader-elect-retry-period"), "{stderr}");
}
