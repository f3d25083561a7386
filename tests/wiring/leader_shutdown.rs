//! How the built binary ends, observed from the server: on SIGTERM the controllers' last
//! write comes before the lease release, the release is the last thing it sends, and it exits;
//! without release-on-cancel nothing is released; a lost lease stops every write and exits 1;
//! with --stop-on-pod-deletion its own Pod marked for deletion is the same as SIGTERM.
//!
//! Real time, as the binary runs: the tests assert what happened and in what order; the waits
//! they bound are liveness bounds (10 s for an exit that takes about a second) and say so. How
//! fast a handover is belongs to the benchmarks (`make compare`).

use crate::support::fake::{FakeServer, Fault, RequestClass, RequestRecord};
use crate::support::lease::LEASE_PATH;
use crate::support::skiff::{
    HOME_NS, SHORT_LEASE, SHORT_RENEW_DEADLINE, Skiff, TempDir, eventually, fan_out_world,
    is_controller_write, is_lease_hold, is_lease_release, write_kubeconfig,
};
use serde_json::json;
use std::time::{Duration, Instant};

const NAMESPACES: usize = 1000;
/// Allowance for a write the fence let through just before its deadline to reach the server:
/// loopback takes well under a millisecond, so this is a liveness bound for a busy machine,
/// and still a third of the 1.5 s renew deadline. The fence's check itself is pinned in
/// virtual time by `lease_renewals::a_fenced_main_client_refuses_writes_past_the_renew_deadline_while_the_elector_is_stuck`.
const TRANSIT: Duration = Duration::from_millis(500);
/// How long a process may take to exit after the step that ends it (about a second, with
/// `--graceful-shutdown-timeout=1s`): a liveness bound.
const EXIT_LIVENESS: Duration = Duration::from_secs(10);

/// A leader over a 1,000-namespace fan-out at the default QPS (20): it is still writing
/// copies (about 50 s of work) when the test acts.
fn writing_leader(tag: &str, extra: &[&str]) -> (FakeServer, TempDir, Skiff) {
    crate::support::skiff::leader_under_load(tag, NAMESPACES, extra, 40)
}

fn last_index(records: &[RequestRecord], test: impl Fn(&RequestRecord) -> bool) -> Option<usize> {
    records.iter().rposition(test)
}

#[test]
fn sigterm_stops_controllers_then_releases_then_exits_at_once() {
    let (server, _dir, mut skiff) = writing_leader("sigterm", &["--graceful-shutdown-timeout=1s"]);
    skiff.signal("TERM");
    let (code, exited) = skiff
        .wait_exit_at(EXIT_LIVENESS)
        .expect("still running long after SIGTERM");
    assert_eq!(code, 0, "log:\n{}", skiff.logs());
    // Bytes the process sent before it exited may still be on their way to the server.
    std::thread::sleep(Duration::from_millis(200));
    let records = server.requests();
    let release = last_index(&records, is_lease_release).expect("no release written");
    let last_write = last_index(&records, is_controller_write).expect("no controller write");
    assert!(
        last_write < release,
        "a controller write ({} {}) arrived after the release",
        records[last_write].method,
        records[last_write].path
    );
    assert_eq!(records[release].status, 200);
    let after: Vec<String> = records[release + 1..]
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(after.is_empty(), "sent after the release: {after:?}");
    let answered = records[release].answered.expect("release answered");
    eprintln!(
        "last controller write {:?} before the release; exit {:?} after its reply",
        records[release]
            .received
            .saturating_duration_since(records[last_write].received),
        exited.saturating_duration_since(answered)
    );
    let lease = server.get(LEASE_PATH).expect("lease");
    assert_eq!(lease["spec"]["holderIdentity"], "");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 1);
}

#[test]
fn without_release_on_cancel_nothing_is_released_and_it_exits_0() {
    let (server, _dir, mut skiff) = writing_leader(
        "no-release",
        &[
            "--graceful-shutdown-timeout=1s",
            "--leader-elect-release-on-cancel=false",
        ],
    );
    skiff.signal("TERM");
    let code = skiff.wait_exit(EXIT_LIVENESS);
    assert_eq!(code, Some(0), "log:\n{}", skiff.logs());
    let records = server.requests();
    assert!(
        !records.iter().any(is_lease_release),
        "a release was written"
    );
    let lease = server.get(LEASE_PATH).expect("lease");
    let holder = lease["spec"]["holderIdentity"].as_str().unwrap_or_default();
    assert!(!holder.is_empty(), "holder cleared: {lease}");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 2);
}

#[test]
fn a_lost_lease_stops_every_write_at_the_renew_deadline_and_exits_1() {
    let (server, _dir, mut skiff) = writing_leader("lost", &[]);
    server.set_fault(RequestClass::Lease, Fault::ServerError);
    let faulted = Instant::now();
    // Exits at the renew deadline, 1.5 s on: a liveness bound.
    let code = skiff.wait_exit(EXIT_LIVENESS);
    assert_eq!(code, Some(1), "log:\n{}", skiff.logs());
    assert!(
        skiff.logs().contains("leader election lost"),
        "log:\n{}",
        skiff.logs()
    );
    let records = server.requests();
    let last_renewal = records
        .iter()
        .filter(|r| is_lease_hold(r))
        .map(|r| r.received)
        .max()
        .expect("a renewal");
    // No renewal succeeds once the fault is set (a request read just before it is stamped a
    // moment before `faulted`).
    assert!(last_renewal <= faulted + Duration::from_millis(50));
    // The fence measures from when the renewal was sent, before the server received it; a
    // write let through just before the deadline still needs a moment to arrive.
    let fence_closed = last_renewal + SHORT_RENEW_DEADLINE + TRANSIT;
    let late: Vec<String> = records
        .iter()
        .filter(|r| is_controller_write(r) && r.received > fence_closed)
        .map(|r| {
            let after = r.received - fence_closed;
            format!("{} {} {after:?} after the deadline", r.method, r.path)
        })
        .collect();
    let writes_after_fault = records
        .iter()
        .filter(|r| is_controller_write(r) && r.received > faulted)
        .count();
    let last_write = records
        .iter()
        .filter(|r| is_controller_write(r))
        .map(|r| r.received)
        .max()
        .expect("a write");
    eprintln!(
        "{writes_after_fault} writes after the fault; the last {:?} before the deadline",
        (fence_closed - TRANSIT).saturating_duration_since(last_write)
    );
    assert!(writes_after_fault >= 1, "the controller was not writing");
    assert!(
        late.is_empty(),
        "writes after the renew deadline: {late:#?}"
    );
}

#[test]
fn a_pod_marked_for_deletion_stops_releases_and_exits_without_a_signal() {
    let server = FakeServer::start();
    fan_out_world(&server, 3);
    // A finalizer holds the Pod after the DELETE, marked for deletion, as the kubelet's
    // graceful termination does.
    server.insert(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "skiff-a", "namespace": HOME_NS, "finalizers": ["test/hold"]}}));
    let dir = TempDir::new("pod-deleted");
    let kubeconfig = write_kubeconfig(&dir, &server.url(), None, None, HOME_NS);
    let mut args: Vec<&str> = SHORT_LEASE.to_vec();
    args.push("--stop-on-pod-deletion=true");
    let log = dir.0.join("skiff.log");
    let mut skiff = Skiff::start_with_env(&kubeconfig, log, &args, &[("POD_NAME", "skiff-a")]);
    let leading = eventually(Duration::from_secs(20), || {
        server.requests().iter().any(is_lease_hold)
    });
    assert!(leading, "not leading; log:\n{}", skiff.logs());
    // Gives a replica that stops on anything but the mark a second to do so.
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        skiff.is_running(),
        "stopped before its Pod was marked: {}",
        skiff.logs()
    );
    let marked = Instant::now();
    server.remove(&format!("/api/v1/namespaces/{HOME_NS}/pods/skiff-a"));
    let Some((code, exited)) = skiff.wait_exit_at(EXIT_LIVENESS) else {
        panic!(
            "still running 10 s after its Pod was marked for deletion; log:\n{}",
            skiff.logs()
        )
    };
    assert_eq!(code, 0, "log:\n{}", skiff.logs());
    let lease = server.get(LEASE_PATH).expect("lease");
    assert_eq!(lease["spec"]["holderIdentity"], "", "not released: {lease}");
    assert!(
        skiff.logs().contains("is being deleted"),
        "{}",
        skiff.logs()
    );
    eprintln!(
        "released and exited {:?} after the Pod was marked for deletion",
        exited.saturating_duration_since(marked)
    );
}

#[test]
fn a_pod_that_cannot_be_read_leaves_sigterm_as_the_signal() {
    let server = FakeServer::start();
    fan_out_world(&server, 1);
    let dir = TempDir::new("pod-missing");
    let kubeconfig = write_kubeconfig(&dir, &server.url(), None, None, HOME_NS);
    let mut args: Vec<&str> = SHORT_LEASE.to_vec();
    args.push("--stop-on-pod-deletion=true");
    let log = dir.0.join("skiff.log");
    let mut skiff = Skiff::start_with_env(&kubeconfig, log, &args, &[("POD_NAME", "no-such-pod")]);
    let warned = eventually(Duration::from_secs(20), || {
        skiff
            .logs()
            .contains("--stop-on-pod-deletion is off for this process")
    });
    assert!(warned, "no warning; log:\n{}", skiff.logs());
    assert!(
        skiff.is_running(),
        "a missing Pod stopped skiff: {}",
        skiff.logs()
    );
    skiff.signal("TERM");
    assert_eq!(skiff.wait_exit(EXIT_LIVENESS), Some(0));
}
