//! Two built binaries on one Lease: the standby takes over within 300 ms of a release, and
//! after the lease duration when the leader is frozen; the frozen leader, resumed, writes
//! nothing and exits 1.

use crate::support::fake::{FakeServer, RequestClass, RequestRecord};
use crate::support::lease::LEASE_PATH;
use crate::support::skiff::{
    SHORT_LEASE, Skiff, TempDir, eventually, fan_out_world, is_controller_write, is_lease_hold,
    is_lease_release, lease_write_holder, write_kubeconfig,
};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn holder(server: &FakeServer) -> String {
    server
        .get(LEASE_PATH)
        .and_then(|lease| lease["spec"]["holderIdentity"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn start(dir: &TempDir, kubeconfig: &PathBuf, pod: &str, args: &[&str]) -> Skiff {
    let log = dir.0.join(format!("{pod}.log"));
    Skiff::start_with_env(kubeconfig, log, args, &[("POD_NAME", pod)])
}

/// The first successful lease write by `pod` (an acquire), if any.
fn first_hold_by<'a>(records: &'a [RequestRecord], pod: &str) -> Option<&'a RequestRecord> {
    let prefix = format!("{pod}_");
    records
        .iter()
        .find(|r| is_lease_hold(r) && lease_write_holder(r).is_some_and(|h| h.starts_with(&prefix)))
}

/// Waits until a second watch on the Lease is open: the standby waits on it.
fn standby_is_watching(server: &FakeServer) -> bool {
    eventually(Duration::from_secs(10), || {
        server.requests().iter().any(|r| {
            r.class == RequestClass::Lease
                && r.watch
                && r.status == 200
                && r.query
                    .contains("fieldSelector=metadata.name%3Dskiff-leader")
        })
    })
}

/// Waits until `pod` holds the Lease: the fake's Lease names it and the write that made it so
/// is answered in the request log. The fake applies a write before it logs the answer, so on a
/// busy machine the Lease alone can name the pod while that record has no answer yet.
fn leads(server: &FakeServer, pod: &str) -> bool {
    eventually(Duration::from_secs(10), || {
        holder(server).starts_with(&format!("{pod}_"))
            && first_hold_by(&server.requests(), pod).is_some_and(|r| r.answered.is_some())
    })
}

/// Retry period 2 s (jittered to 2–4.4 s): a takeover within 300 ms can only come from the
/// standby's watch.
#[test]
fn the_standby_leads_within_300ms_of_the_leaders_release() {
    let server = FakeServer::start();
    fan_out_world(&server, 20);
    let dir = TempDir::new("handover");
    let kubeconfig = write_kubeconfig(&dir, &server.url(), None, None, "skiff-system");
    let args = [
        "--leader-elect",
        "--leader-elect-lease-duration=6s",
        "--leader-elect-renew-deadline=5s",
        "--leader-elect-retry-period=2s",
    ];
    let mut a = start(&dir, &kubeconfig, "replica-a", &args);
    assert!(leads(&server, "replica-a"), "log:\n{}", a.logs());
    let b = start(&dir, &kubeconfig, "replica-b", &args);
    assert!(standby_is_watching(&server), "log:\n{}", b.logs());
    std::thread::sleep(Duration::from_millis(200));
    a.terminate(Duration::from_secs(10));
    assert!(leads(&server, "replica-b"), "log:\n{}", b.logs());
    let records = server.requests();
    let release = records
        .iter()
        .find(|r| is_lease_release(r))
        .expect("no release");
    let acquired = first_hold_by(&records, "replica-b").expect("replica-b never acquired");
    let released_at = release.answered.expect("release answered");
    let took = acquired.answered.expect("acquire answered") - released_at;
    eprintln!("handover took {took:?} after the release reply");
    assert!(took <= Duration::from_millis(300), "handover took {took:?}");
}

#[test]
fn a_frozen_leader_is_replaced_after_the_lease_duration_and_writes_nothing_when_resumed() {
    let server = FakeServer::start();
    fan_out_world(&server, 300);
    let dir = TempDir::new("frozen");
    let kubeconfig = write_kubeconfig(&dir, &server.url(), None, None, "skiff-system");
    // The frozen leader has writes queued on a slow bucket; the new one finishes at once.
    let slow: Vec<&str> = [
        &SHORT_LEASE[..],
        &["--kube-api-qps=10", "--kube-api-burst=1"],
    ]
    .concat();
    let fast: Vec<&str> = [
        &SHORT_LEASE[..],
        &["--kube-api-qps=1000", "--kube-api-burst=1000"],
    ]
    .concat();
    let mut a = start(&dir, &kubeconfig, "replica-a", &slow);
    assert!(leads(&server, "replica-a"), "log:\n{}", a.logs());
    let b = start(&dir, &kubeconfig, "replica-b", &fast);
    assert!(standby_is_watching(&server), "log:\n{}", b.logs());
    let writing = eventually(Duration::from_secs(10), || {
        server
            .requests()
            .iter()
            .filter(|r| is_controller_write(r))
            .count()
            >= 10
    });
    assert!(writing, "replica-a is not writing; log:\n{}", a.logs());

    a.signal("STOP");
    assert!(leads(&server, "replica-b"), "log:\n{}", b.logs());
    let records = server.requests();
    let a_last_renewal = records
        .iter()
        .filter(|r| {
            is_lease_hold(r) && lease_write_holder(r).is_some_and(|h| h.starts_with("replica-a_"))
        })
        .filter_map(|r| r.answered)
        .max()
        .expect("replica-a renewed");
    let b_acquired = first_hold_by(&records, "replica-b")
        .and_then(|r| r.answered)
        .expect("replica-b acquired");
    let after = b_acquired - a_last_renewal;
    eprintln!("replica-b led {after:?} after replica-a's last renewal");
    assert!(
        after >= Duration::from_millis(1900) && after <= Duration::from_millis(3000),
        "took over {after:?} after the last renewal (lease duration 2 s)"
    );

    // Let the new leader finish the fan-out and go quiet: from here on it writes nothing.
    let quiet = eventually(Duration::from_secs(20), || {
        let records = server.requests();
        server.list("/api/v1/configmaps").len() > 300
            && records
                .iter()
                .rev()
                .find(|r| is_controller_write(r))
                .is_some_and(|r| r.received.elapsed() > Duration::from_millis(700))
    });
    assert!(quiet, "replica-b did not settle; log:\n{}", b.logs());
    let mark = server.requests().len();
    let resumed = Instant::now();
    a.signal("CONT");
    let code = a.wait_exit(Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(code, Some(1), "log:\n{}", a.logs());
    assert!(
        a.logs().contains("leader election lost"),
        "log:\n{}",
        a.logs()
    );
    let written: Vec<String> = server.requests()[mark..]
        .iter()
        .filter(|r| {
            is_controller_write(r)
                || (is_lease_hold(r)
                    && !lease_write_holder(r).is_some_and(|h| h.starts_with("replica-b_")))
        })
        .map(|r| {
            format!(
                "{} {} {:?} after SIGCONT",
                r.method,
                r.path,
                r.received - resumed
            )
        })
        .collect();
    assert!(
        written.is_empty(),
        "writes after the frozen leader resumed: {written:#?}"
    );
    assert!(holder(&server).starts_with("replica-b_"));
}
