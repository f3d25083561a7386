//! e2e: leader election of two skiff replicas on a real Lease, as the operator's ServiceAccount.
//!
//! Why: the point of skiff is a leader that renews reliably and hands over at once on SIGTERM.
//! Only a real API server shows that the Lease writes pass RBAC, keep resourceVersions straight,
//! and that a standby watching the Lease takes it as soon as it is released. The Lease is read
//! every 100 ms throughout, so a moment with two leaders would show as a holder change that is
//! neither a release nor an expiry.

use std::time::{Duration, Instant};

use crate::support::control_plane::{ControlPlane, require_e2e_binaries};
use crate::support::lease::{LeasePoller, LeaseRecord, one_leader_violations, renew_gaps};
use crate::support::skiff::{Skiff, TempDir, eventually};

/// Short timings, so an expiry-based takeover (≥ 3 s) is told apart from a release (well under).
const LEASE_DURATION: Duration = Duration::from_secs(4);
const TIMING_FLAGS: [&str; 3] = [
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=1s",
];
/// How often the Lease is read.
const POLL: Duration = Duration::from_millis(100);
/// Starting, acquiring and exiting are quick; the machine may be busy compiling.
const STEP_TIMEOUT: Duration = Duration::from_secs(20);

fn start_replica(cp: &ControlPlane, dir: &TempDir, name: &str) -> Skiff {
    let kubeconfig = cp.operator_kubeconfig();
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
    let code = replica.wait_exit(STEP_TIMEOUT);
    (code, signalled.elapsed())
}

/// Starts replica-a, waits until it holds the Lease, starts replica-b as a standby and checks
/// that replica-a keeps renewing; returns both.
fn first_replica_leads(cp: &ControlPlane, dir: &TempDir, poller: &LeasePoller) -> [Skiff; 2] {
    let started = Instant::now();
    let a = start_replica(cp, dir, "replica-a");
    let acquired = poller.wait_for(started, STEP_TIMEOUT, held_by("replica-a"));
    let acquired =
        acquired.unwrap_or_else(|| panic!("replica-a never held the Lease:\n{}", a.logs()));
    eprintln!(
        "leader: replica-a acquired in {} ms",
        acquired.at.duration_since(started).as_millis()
    );
    let b = start_replica(cp, dir, "replica-b");
    let later = Instant::now() + Duration::from_secs(3);
    let kept = poller.wait_for(later, STEP_TIMEOUT, |r| r.holder == acquired.holder);
    assert!(
        kept.is_some(),
        "replica-a lost the Lease while replica-b stood by"
    );
    let gaps = renew_gaps(&poller.records(), &acquired.holder);
    assert!(gaps.len() >= 2, "replica-a did not renew: {gaps:?}");
    eprintln!("leader: replica-a renewal gaps {gaps:?}");
    [a, b]
}

/// SIGTERM to the leader: it exits 0 and the standby holds the Lease within the handover bound,
/// with nobody but them (or a released Lease) in between. Returns the standby's first reading
/// and when the leader was signalled.
fn standby_takes_over(poller: &LeasePoller, a: &mut Skiff, b: &Skiff) -> (LeaseRecord, Instant) {
    let a_id = poller.latest().map(|r| r.holder).unwrap_or_default();
    let signalled = Instant::now();
    let (code, exit_after) = terminate(a);
    assert_eq!(code, Some(0), "replica-a exit; log:\n{}", a.logs());
    let b_leads = poller.wait_for(signalled, STEP_TIMEOUT, held_by("replica-b"));
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
    assert!(
        handover < LEASE_DURATION - Duration::from_secs(1),
        "handover took {handover:?}: the standby waited for expiry instead of the release"
    );
    (b_leads, signalled)
}

fn assert_leader_event_names(cp: &ControlPlane, id: &str) {
    let named = |e: &serde_json::Value| e["message"].as_str().unwrap_or("").contains(id);
    let recorded = eventually(STEP_TIMEOUT, || {
        leader_election_events(cp).iter().any(named)
    });
    assert!(
        recorded,
        "no LeaderElection event on the Lease naming {id}: {:#?}",
        leader_election_events(cp)
    );
}

/// The last replica renews, then on SIGTERM exits 0 leaving the Lease released.
fn last_replica_releases(poller: &LeasePoller, b: &mut Skiff, leading: &LeaseRecord) {
    let b_renews = poller.wait_for(leading.at, STEP_TIMEOUT, |r| {
        r.holder == leading.holder && r.renew_time != leading.renew_time
    });
    assert!(b_renews.is_some(), "replica-b did not renew the Lease");
    let signalled = Instant::now();
    let (code, _) = terminate(b);
    assert_eq!(code, Some(0), "replica-b exit; log:\n{}", b.logs());
    let cleared = poller.wait_for(signalled, Duration::from_secs(5), |r| {
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
    let (b_leads, a_signalled) = standby_takes_over(&poller, &mut a, &b);
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
