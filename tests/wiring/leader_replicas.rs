//! Two built binaries on one Lease: the standby takes over on seeing the leader's release
//! (its watch, not its polling), and once the lease duration has passed when the leader is
//! frozen; the frozen leader, resumed, writes nothing and exits 1.
//!
//! Real time, as the binary runs: the tests assert causes and order; the waits they bound are
//! liveness bounds of 10× or more and say so. How fast a handover is belongs to the benchmarks
//! (`make compare`).

use crate::support::fake::{FakeServer, RequestClass, RequestRecord};
use crate::support::lease::LEASE_PATH;
use crate::support::skiff::{
    SHORT_LEASE, Skiff, TempDir, count_requests, eventually, fan_out_world, is_controller_write,
    is_lease_hold, is_lease_release, lease_write_holder, write_kubeconfig,
};
use std::path::PathBuf;
use std::time::Duration;

/// How long a test waits for a replica to lead, or to exit: a liveness bound, 10× the few
/// seconds (a lease duration at most) each takes.
const LIVENESS: Duration = Duration::from_secs(30);

fn holder(server: &FakeServer) -> String {
    server
        .get(LEASE_PATH)
        .and_then(|lease| lease["spec"]["holderIdentity"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Starts replica `pod` against the TLS `server`, presenting the bearer token `token-<pod>`,
/// which tells its requests apart in the server's log.
fn start(dir: &TempDir, server: &FakeServer, pod: &str, args: &[&str]) -> Skiff {
    let token = token_of(pod);
    let ca = server.ca_pem();
    let written = write_kubeconfig(
        dir,
        &server.url(),
        ca.as_deref(),
        Some(&token),
        "skiff-system",
    );
    let kubeconfig: PathBuf = dir.0.join(format!("{pod}.kubeconfig"));
    std::fs::rename(written, &kubeconfig).expect("name the kubeconfig");
    let log = dir.0.join(format!("{pod}.log"));
    Skiff::start_with_env(&kubeconfig, log, args, &[("POD_NAME", pod)])
}

fn token_of(pod: &str) -> String {
    format!("token-{pod}")
}

/// Whether `r` was sent by replica `pod`.
fn by(r: &RequestRecord, pod: &str) -> bool {
    r.token.as_deref() == Some(token_of(pod).as_str())
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
    eventually(LIVENESS, || {
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
    eventually(LIVENESS, || {
        holder(server).starts_with(&format!("{pod}_"))
            && first_hold_by(&server.requests(), pod).is_some_and(|r| r.answered.is_some())
    })
}

/// Retry period 100 s, lease 300 s: after its first look, the standby polls again no sooner
/// than 100 s later, and the lease does not expire for 300 s. A takeover within the liveness
/// bound (30 s) after the release can only come from the standby's watch.
#[test]
fn the_standby_leads_on_seeing_the_leaders_release() {
    let server = FakeServer::start_tls();
    fan_out_world(&server, 20);
    let dir = TempDir::new("handover");
    let args = [
        "--leader-elect",
        "--leader-elect-lease-duration=300s",
        "--leader-elect-renew-deadline=200s",
        "--leader-elect-retry-period=100s",
    ];
    let mut a = start(&dir, &server, "replica-a", &args);
    assert!(leads(&server, "replica-a"), "log:\n{}", a.logs());
    let b = start(&dir, &server, "replica-b", &args);
    assert!(standby_is_watching(&server), "log:\n{}", b.logs());
    a.terminate(LIVENESS);
    assert!(leads(&server, "replica-b"), "log:\n{}", b.logs());
    let records = server.requests();
    let release = records
        .iter()
        .position(is_lease_release)
        .expect("no release");
    let is_lease_get = |r: &RequestRecord| {
        by(r, "replica-b") && r.class == RequestClass::Lease && r.method == "GET" && !r.watch
    };
    let watching = (records.iter())
        .position(|r| by(r, "replica-b") && r.class == RequestClass::Lease && r.watch)
        .expect("replica-b's watch");
    let polls: Vec<&RequestRecord> = records[watching..release]
        .iter()
        .filter(|r| is_lease_get(r))
        .collect();
    let acquired = (records.iter())
        .position(|r| is_lease_hold(r) && holder_is(r, "replica-b"))
        .expect("replica-b never acquired");
    assert!(release < acquired, "replica-b led before the release");
    let released_at = records[release].answered.expect("release answered");
    let took = records[acquired].answered.expect("acquire answered") - released_at;
    eprintln!("handover took {took:?} after the release reply");
    assert!(polls.is_empty(), "replica-b polled the lease: {polls:?}");
    assert!(
        records[release..acquired].iter().any(is_lease_get),
        "replica-b took the lease without reading it"
    );
}

fn holder_is(r: &RequestRecord, pod: &str) -> bool {
    lease_write_holder(r).is_some_and(|h| h.starts_with(&format!("{pod}_")))
}

#[test]
fn a_frozen_leader_is_replaced_after_the_lease_duration_and_writes_nothing_when_resumed() {
    let server = FakeServer::start_tls();
    fan_out_world(&server, 300);
    let dir = TempDir::new("frozen");
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
    let mut a = start(&dir, &server, "replica-a", &slow);
    assert!(leads(&server, "replica-a"), "log:\n{}", a.logs());
    let b = start(&dir, &server, "replica-b", &fast);
    assert!(standby_is_watching(&server), "log:\n{}", b.logs());
    let writing = eventually(LIVENESS, || {
        count_requests(&server, is_controller_write) >= 10
    });
    assert!(writing, "replica-a is not writing; log:\n{}", a.logs());

    a.signal("STOP");
    assert!(leads(&server, "replica-b"), "log:\n{}", b.logs());
    let records = server.requests();
    let a_last_renewal = records
        .iter()
        .filter(|r| is_lease_hold(r) && holder_is(r, "replica-a"))
        .map(|r| r.received)
        .max()
        .expect("replica-a renewed");
    let b_acquired = first_hold_by(&records, "replica-b")
        .and_then(|r| r.answered)
        .expect("replica-b acquired");
    // replica-b saw the last renewal no sooner than the server received it, and judges the
    // lease expired a lease duration after it saw it: never sooner, however fast or slow.
    let after = b_acquired - a_last_renewal;
    eprintln!("replica-b led {after:?} after replica-a's last renewal");
    assert!(
        after >= Duration::from_secs(2),
        "took over {after:?} after the last renewal, before the 2 s lease expired"
    );

    let mark = server.requests().len();
    let resumed = std::time::Instant::now();
    a.signal("CONT");
    let code = a.wait_exit(LIVENESS);
    // Bytes replica-a sent before it exited may still be on their way to the server.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(code, Some(1), "log:\n{}", a.logs());
    assert!(
        a.logs().contains("leader election lost"),
        "log:\n{}",
        a.logs()
    );
    let written: Vec<String> = server.requests()[mark..]
        .iter()
        .filter(|r| by(r, "replica-a") && (is_controller_write(r) || is_lease_hold(r)))
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
