//! A lease connection that stops answering (a half-open socket) costs one attempt, not the
//! lease: the attempt is dropped with time left, and the retry dials a fresh connection.

use crate::support::fake::{FakeServer, Fault, RequestClass};
use crate::support::skiff::{
    Skiff, TempDir, eventually, fan_out_world, is_lease_hold, longest_gap, write_kubeconfig,
};
use std::time::{Duration, Instant};

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
    let leading = eventually(Duration::from_secs(10), || {
        server.requests().iter().any(is_lease_hold)
    });
    assert!(leading, "log:\n{}", skiff.logs());
    std::thread::sleep(Duration::from_millis(700));
    server.set_fault_times(RequestClass::Lease, Fault::Stall, 1);
    let from = Instant::now();
    std::thread::sleep(Duration::from_secs(4));
    let records = server.requests();
    let stalled = records
        .iter()
        .find(|r| r.class == RequestClass::Lease && r.received > from && r.status == 0)
        .expect("no stalled lease request");
    let renewed: Vec<Instant> = records
        .iter()
        .filter(|r| is_lease_hold(r))
        .filter_map(|r| r.answered)
        .collect();
    let after = renewed
        .iter()
        .find(|t| **t > stalled.received)
        .expect("never renewed after the stall");
    assert!(
        records.iter().any(|r| is_lease_hold(r)
            && r.received > stalled.received
            && r.conn_id != stalled.conn_id),
        "no renewal on a fresh connection"
    );
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
