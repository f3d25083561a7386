//! A lease connection that stops answering (a half-open socket) costs one attempt, not the
//! lease: the attempt is dropped with time left, and the retry dials a fresh connection.
//!
//! Real time, as the binary runs: the verdict is the order (a renewal on another connection
//! after the stalled request) and the lease kept; the waits are liveness bounds.

use crate::support::fake::{FakeServer, Fault, RequestClass, RequestRecord};
use crate::support::skiff::{
    Skiff, TempDir, count_requests, eventually, fan_out_world, is_lease_hold, longest_gap,
    write_kubeconfig,
};
use std::time::{Duration, Instant};

/// How long the test waits for leading and for the renewal after the stall (each a second or
/// less): a liveness bound.
const LIVENESS: Duration = Duration::from_secs(30);

#[test]
fn a_stalled_lease_request_is_dropped_and_redialed_before_the_renew_deadline() {
    let server = FakeServer::start();
    fan_out_world(&server, 5);
    let dir = TempDir::new("stall");
    let kubeconfig = write_kubeconfig(&dir, &server.url(), None, None, "skiff-system");
    let args = [
        "--leader-elect",
        "--leader-elect-lease-duration=4s",
        "--leader-elect-renew-deadline=3s",
        "--leader-elect-retry-period=500ms",
    ];
    let mut skiff = Skiff::start(&kubeconfig, dir.0.join("skiff.log"), &args);
    // Leading, with a renewal done: the lease connection is pooled.
    let leading = eventually(LIVENESS, || count_requests(&server, is_lease_hold) >= 2);
    assert!(leading, "log:\n{}", skiff.logs());
    server.set_fault_times(RequestClass::Lease, Fault::Stall, 1);
    let from = Instant::now();
    let stalled_request = |records: &[RequestRecord]| {
        (records.iter())
            .find(|r| r.class == RequestClass::Lease && r.received > from && r.status == 0)
            .cloned()
    };
    let renewed_elsewhere = eventually(LIVENESS, || {
        let records = server.requests();
        stalled_request(&records).is_some_and(|stalled| {
            records.iter().any(|r| {
                is_lease_hold(r) && r.received > stalled.received && r.conn_id != stalled.conn_id
            })
        })
    });
    let records = server.requests();
    let stalled = stalled_request(&records).expect("no stalled lease request");
    let renewed: Vec<Instant> = records
        .iter()
        .filter(|r| is_lease_hold(r))
        .filter_map(|r| r.answered)
        .collect();
    let after = renewed
        .iter()
        .find(|t| **t > stalled.received)
        .expect("never renewed after the stall");
    assert!(renewed_elsewhere, "no renewal on a fresh connection");
    eprintln!(
        "renewed {:?} after the stalled request; longest gap {:?}",
        *after - stalled.received,
        longest_gap(from, &renewed, Instant::now())
    );
    assert!(skiff.is_running(), "log:\n{}", skiff.logs());
    assert!(
        !skiff.logs().contains("leader election lost"),
        "log:\n{}",
        skiff.logs()
    );
}
