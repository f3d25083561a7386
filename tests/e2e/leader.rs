//! e2e: leader election of two skiff replicas on a real Lease, as the operator's ServiceAccount.
//!
//! Why: the point of skiff is a leader that renews reliably and hands over at once on SIGTERM.
//! Only a real API server shows that the Lease writes pass RBAC, keep resourceVersions straight,
//! and that a standby takes the Lease because it was released. The Lease is read every 100 ms
//! throughout, so a moment with two leaders would show as a holder change that is neither a
//! release nor an expiry.
//!
//! Real time, as the binaries run: the test asserts causes and order; its waits are liveness
//! bounds of 10× or more. How fast a handover is belongs to the benchmarks (`make compare`).

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use crate::support::control_plane::{
    ControlPlane, OPERATOR_B_UID, OPERATOR_UID, require_e2e_binaries,
};
use crate::support::lease::{LeasePoller, LeaseRecord, one_leader_violations, renew_gaps};
use crate::support::skiff::{Skiff, TempDir, eventually};

/// A lease of 5 min: no takeover within [`LIVENESS`] can be by expiry, only by a release. The
/// holder renews every second, and steps down 3 s after its last successful renewal.
const TIMING_FLAGS: [&str; 3] = [
    "--leader-elect-lease-duration=5m",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=1s",
];
/// How often the Lease is read.
const POLL: Duration = Duration::from_millis(100);
/// Starting, acquiring, renewing, exiting and taking a released Lease each take a second or
/// two (a standby polls every 1–2.2 s, and watches). A liveness bound, 10× that, and a tenth of
/// the lease: a standby that waited for the Lease to expire fails it.
const LIVENESS: Duration = Duration::from_secs(30);

/// Starts replica `name` with the operator's `kubeconfig`.
fn start_replica(dir: &TempDir, kubeconfig: PathBuf, name: &str) -> Skiff {
    let mut args = vec![
        "--leader-elect",
        "--leader-election-namespace=skiff-system",
        "--source-namespaces=skiff-system",
        "--log-level=debug",
    ];
    args.extend(TIMING_FLAGS);
    let log = dir.0.join(format!("{name}.log"));
    Skiff::start_with_env(&kubeconfig, log, &args, &[("POD_NAME", name)])
}

fn held_by(replica: &str) -> impl Fn(&LeaseRecord) -> bool + '_ {
    move |r: &LeaseRecord| r.holder.starts_with(&format!("{replica}_"))
}

fn leader_election_events(cp: &ControlPlane) -> Vec<serde_json::Value> {
    let list = cp
        .get_json(&["events", "-n", "skiff-system"])
        .expect("kubectl get events");
    let items = list["items"].as_array().cloned().unwrap_or_default();
    items
        .into_iter()
        .filter(|e| e["involvedObject"]["kind"] == "Lease" && e["reason"] == "LeaderElection")
        .collect()
}

/// Sends SIGTERM; returns (exit code, time from signal to exit).
fn terminate(replica: &mut Skiff) -> (Option<i32>, Duration) {
    let signalled = Instant::now();
    replica.signal("TERM");
    let code = replica.wait_exit(LIVENESS);
    (code, signalled.elapsed())
}

/// Starts replica-a, waits until it holds the Lease, starts replica-b as a standby (with the
/// operator's second token, so the audit log tells the two apart) and checks that replica-a
/// renews twice and keeps the Lease meanwhile; returns both.
fn first_replica_leads(cp: &ControlPlane, dir: &TempDir, poller: &LeasePoller) -> [Skiff; 2] {
    let started = Instant::now();
    let a = start_replica(dir, cp.operator_kubeconfig(), "replica-a");
    let acquired = poller.wait_for(started, LIVENESS, held_by("replica-a"));
    let acquired =
        acquired.unwrap_or_else(|| panic!("replica-a never held the Lease:\n{}", a.logs()));
    eprintln!(
        "leader: replica-a acquired in {} ms",
        acquired.at.duration_since(started).as_millis()
    );
    let b = start_replica(dir, cp.operator_b_kubeconfig(), "replica-b");
    let b_started = Instant::now();
    let renewed_twice = eventually(LIVENESS, || {
        let since: Vec<LeaseRecord> = (poller.records().into_iter())
            .filter(|r| r.at >= b_started)
            .collect();
        renew_gaps(&since, &acquired.holder).len() >= 2
    });
    assert!(
        renewed_twice,
        "replica-a did not renew while replica-b stood by: {:?}",
        poller.latest()
    );
    if let Err(why) = poller.kept_by(&acquired.holder, b_started, LIVENESS) {
        panic!("while replica-b stood by: {why}");
    }
    let gaps = renew_gaps(&poller.records(), &acquired.holder);
    eprintln!("leader: replica-a renewal gaps {gaps:?}");
    [a, b]
}

/// SIGTERM to the leader: it exits 0 and the standby holds the Lease, with nobody but them (or
/// a released Lease) in between, and because it was released: its 5 min lease cannot have
/// expired within the liveness bound, and the audit log shows the leader's last Lease write
/// (the release) before the standby's first. Returns the standby's first reading and when the
/// leader was signalled.
fn standby_takes_over(
    cp: &ControlPlane,
    poller: &LeasePoller,
    a: &mut Skiff,
    b: &Skiff,
) -> (LeaseRecord, Instant) {
    let a_id = poller.latest().map(|r| r.holder).unwrap_or_default();
    let (signalled, signalled_wall) = (Instant::now(), SystemTime::now());
    let (code, exit_after) = terminate(a);
    assert_eq!(code, Some(0), "replica-a exit; log:\n{}", a.logs());
    let b_leads = poller.wait_for(signalled, LIVENESS, held_by("replica-b"));
    let b_leads =
        b_leads.unwrap_or_else(|| panic!("replica-b never took over; log:\n{}", b.logs()));
    let handover = b_leads.at.duration_since(signalled);
    eprintln!(
        "leader: replica-a exited 0 {} ms after SIGTERM; replica-b held the Lease {} ms after it",
        exit_after.as_millis(),
        handover.as_millis()
    );
    let between: Vec<LeaseRecord> = poller
        .records()
        .into_iter()
        .filter(|r| r.at >= signalled && r.at <= b_leads.at)
        .collect();
    let expected = |r: &LeaseRecord| [&a_id, &b_leads.holder, ""].contains(&r.holder.as_str());
    assert!(
        between.iter().all(expected),
        "unexpected holder during handover: {between:?}"
    );
    let audit = cp.audit();
    let lease_writes = |uid: &'static str| {
        (audit.iter())
            .filter(move |e| e.uid == uid && e.is_lease() && e.verb == "update")
            .filter(move |e| e.code == Some(200) && e.received >= signalled_wall)
            .map(|e| e.received)
    };
    let released = lease_writes(OPERATOR_UID)
        .max()
        .expect("replica-a's release");
    let acquired = lease_writes(OPERATOR_B_UID)
        .min()
        .expect("replica-b's acquisition");
    assert!(
        released < acquired,
        "replica-b took the Lease before replica-a released it"
    );
    (b_leads, signalled)
}

fn assert_leader_event_names(cp: &ControlPlane, id: &str) {
    let named = |e: &serde_json::Value| e["message"].as_str().unwrap_or("").contains(id);
    let recorded = eventually(LIVENESS, || leader_election_events(cp).iter().any(named));
    assert!(
        recorded,
        "no LeaderElection event on the Lease naming {id}: {:#?}",
        leader_election_events(cp)
    );
}

/// The last replica renews, then on SIGTERM exits 0 leaving the Lease released.
fn last_replica_releases(poller: &LeasePoller, b: &mut Skiff, leading: &LeaseRecord) {
    let b_renews = poller.wait_for(leading.at, LIVENESS, |r| {
        r.holder == leading.holder && r.renew_time != leading.renew_time
    });
    assert!(b_renews.is_some(), "replica-b did not renew the Lease");
    let signalled = Instant::now();
    let (code, _) = terminate(b);
    assert_eq!(code, Some(0), "replica-b exit; log:\n{}", b.logs());
    let cleared = poller.wait_for(signalled, LIVENESS, |r| {
        r.holder.is_empty() && r.duration_seconds == 1
    });
    assert!(
        cleared.is_some(),
        "replica-b did not release the Lease: {:?}",
        poller.latest()
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn two_replicas_hand_over_the_lease_on_sigterm_with_one_leader_throughout() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    let dir = TempDir::new("e2e-leader");
    let poller = LeasePoller::start(cp, POLL);
    let [mut a, mut b] = first_replica_leads(cp, &dir, &poller);
    let a_id = poller.latest().map(|r| r.holder).unwrap_or_default();
    let (b_leads, a_signalled) = standby_takes_over(cp, &poller, &mut a, &b);
    assert_leader_event_names(cp, &a_id);
    assert_leader_event_names(cp, &b_leads.holder);
    last_replica_releases(&poller, &mut b, &b_leads);

    let records = poller.stop();
    // Only replica-a was told to release while another replica could take over.
    let violations = one_leader_violations(&records, &[(a_id, a_signalled)]);
    assert!(
        violations.is_empty(),
        "one-leader rule broken:\n{}",
        violations.join("\n")
    );
    eprintln!(
        "leader: {} Lease readings, no overlap; transitions {} -> {}",
        records.len(),
        records.first().map_or(0, |r| r.transitions),
        records.last().map_or(0, |r| r.transitions)
    );
}
