//! The elector over the in-memory store, in virtual time: each test moves the store's manual
//! clock (by hand, or with `run_for`, which moves it from one wake to the next) and counts what
//! the elector sent meanwhile, so no verdict depends on how fast the machine is.

use super::*;
use crate::clock::ManualClock;
use crate::deadline::within;
use crate::leader::fake::{CLIENT_GO_TIMING as TIMING, FakeApi, FakeStore};
use crate::testing::{ms, secs};
use std::time::Duration;

const ME: &str = "me_abc";

/// How long a task of smol's executor (the "became leader" post) may take to run: a liveness
/// bound for another thread, not a speed goal.
const LIVENESS: Duration = Duration::from_secs(10);

fn elector(store: &FakeStore, timing: Timing) -> Elector<FakeApi> {
    Elector::new(store.api(), ME.to_owned(), timing, store.clock()).unwrap()
}

fn time(store: &FakeStore) -> &ManualClock {
    store.time()
}

/// An elector that has just acquired the lease, with no time passed.
fn leading(store: &FakeStore) -> Elector<FakeApi> {
    let mut e = elector(store, TIMING);
    let acquired = time(store).run_for(Duration::ZERO, e.acquire());
    assert!(acquired.is_some(), "did not acquire at once");
    e
}

/// Renews until leadership is lost (at most a minute of virtual time): the loss, and how long
/// after the call it came.
fn renew_until_lost(store: &FakeStore, e: &mut Elector<FakeApi>) -> (LeaderLost, Duration) {
    let from = store.clock().now();
    let lost = time(store).run_for(secs(60), e.keep_renewing());
    (lost.expect("not lost"), store.clock().now() - from)
}

fn other_holds(store: &FakeStore) {
    store.write_as_other(|spec| {
        spec.holder_identity = Some("other_xyz".into());
        spec.lease_duration_seconds = Some(15);
        spec.lease_transitions = Some(3);
    });
}

#[test]
fn invalid_timing_is_rejected_at_construction() {
    let bad = Timing {
        lease_duration: ms(100),
        renew_deadline: ms(200),
        retry_period: ms(50),
    };
    let store = FakeStore::default();
    let err = Elector::new(store.api(), ME.into(), bad, store.clock()).err();
    assert!(err.is_some_and(|e| e.message.contains("--leader-elect-lease-duration")));
}

#[test]
fn acquires_an_absent_lease_and_opens_the_fence() {
    let store = FakeStore::default();
    let e = leading(&store);
    assert_eq!(store.holder().as_deref(), Some(ME));
    assert!(
        e.fence()
            .check_at(store.clock().now(), "POST", "/x")
            .is_ok()
    );
    assert_eq!(store.requests(), ["GET", "POST"], "only Lease requests");
}

/// The announcement never finishes: an elector that waited for it would never lead.
#[test]
fn becomes_leader_without_waiting_for_the_leader_event() {
    let store = FakeStore::default();
    let (tx, rx) = smol::channel::unbounded();
    let mut e = elector(&store, TIMING);
    e.announce_with(Announcer::new(
        move |message| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(message).await;
                smol::future::pending::<()>().await;
            }
        },
        secs(3600),
        store.clock(),
    ));
    let acquired = time(&store).run_for(Duration::ZERO, e.acquire());
    assert!(acquired.is_some(), "acquire waited for the Event");
    let message = smol::block_on(within(LIVENESS, rx.recv()));
    assert_eq!(message, Some(Ok(format!("{ME} became leader"))));
}

#[test]
fn renews_once_per_retry_period_while_leading() {
    let store = FakeStore::default();
    let mut e = leading(&store);
    let fence = e.fence();
    store.clear_requests();
    let mut renewing = std::pin::pin!(e.keep_renewing());
    let retry = TIMING.retry_period;
    for renewals in 1..=5 {
        assert_eq!(time(&store).run_for(retry - ms(1), renewing.as_mut()), None);
        assert_eq!(store.count("PUT"), renewals - 1, "renewed early");
        assert_eq!(time(&store).run_for(ms(1), renewing.as_mut()), None);
        assert_eq!(
            store.count("PUT"),
            renewals,
            "no renewal at the retry period"
        );
    }
    assert_eq!(store.count("GET"), 0, "renewals use the cached version");
    assert!(fence.check_at(store.clock().now(), "PUT", "/x").is_ok());
}

#[test]
fn transient_renew_failures_are_retried_with_a_get_and_leadership_kept() {
    let store = FakeStore::default();
    let mut e = leading(&store);
    store.clear_requests();
    store.fail_next(2);
    let lost = time(&store).run_for(TIMING.retry_period * 3, e.keep_renewing());
    assert_eq!(lost, None);
    assert_eq!(
        store.requests(),
        ["PUT", "GET", "GET", "PUT"],
        "a failed PUT, a failed GET, then GET and PUT, one retry period apart"
    );
    assert!(e.fence().is_leading());
    assert_eq!(store.holder().as_deref(), Some(ME));
}

#[test]
fn renew_failures_until_the_deadline_lose_leadership_and_close_the_fence() {
    let store = FakeStore::default();
    let mut e = leading(&store);
    store.fail_all(true);
    let (lost, after) = renew_until_lost(&store, &mut e);
    assert_eq!(
        after, TIMING.renew_deadline,
        "lost at the renew deadline from the last successful renewal"
    );
    assert!(lost.reason.contains("renew deadline"), "{lost}");
    assert!(lost.to_string().starts_with("leader election lost"));
    assert!(!e.fence().is_leading());
    assert!(
        e.fence()
            .check_at(store.clock().now(), "POST", "/x")
            .is_err()
    );
}

#[test]
fn a_stuck_renewal_cannot_outlive_the_renew_deadline() {
    let store = FakeStore::default();
    let mut e = leading(&store);
    store.delay(secs(3600));
    let (_, after) = renew_until_lost(&store, &mut e);
    assert_eq!(
        after, TIMING.renew_deadline,
        "a stuck request held the elector"
    );
}

#[test]
fn loses_at_its_next_renewal_when_another_replica_holds_the_lease() {
    let store = FakeStore::default();
    let mut e = leading(&store);
    other_holds(&store);
    let (lost, after) = renew_until_lost(&store, &mut e);
    assert_eq!(
        after, TIMING.retry_period,
        "lost at the first renewal, not at the renew deadline"
    );
    assert!(lost.reason.contains("other_xyz"), "{lost}");
    assert!(!e.fence().is_leading());
}

#[test]
fn release_clears_the_holder_keeps_transitions_and_closes_the_fence() {
    let store = FakeStore::default();
    let mut e = leading(&store);
    assert_eq!(time(&store).run(e.release()), Ok(true));
    let spec = store.lease().unwrap().spec;
    assert_eq!(spec.holder_identity.as_deref(), Some(""));
    assert_eq!(spec.lease_duration_seconds, Some(1));
    assert_eq!(spec.lease_transitions, Some(0));
    assert!(!e.fence().is_leading());
}

#[test]
fn release_writes_nothing_after_leadership_was_lost() {
    let store = FakeStore::default();
    let mut e = leading(&store);
    other_holds(&store);
    renew_until_lost(&store, &mut e);
    store.clear_requests();
    assert_eq!(time(&store).run(e.release()), Ok(false));
    assert_eq!(store.count("PUT"), 0);
    assert_eq!(store.holder().as_deref(), Some("other_xyz"));
}

#[test]
fn release_after_a_missed_deadline_clears_a_lease_the_server_still_shows_as_ours() {
    let store = FakeStore::default();
    let mut e = leading(&store);
    store.fail_all(true);
    renew_until_lost(&store, &mut e);
    store.fail_all(false);
    assert_eq!(time(&store).run(e.release()), Ok(true));
    assert_eq!(store.holder().as_deref(), Some(""));
}

#[test]
fn master_status_and_renew_metrics_follow_leadership() {
    let status = || {
        let labels = [("name", "metrics-lease")];
        metrics::gauge("leader_election_master_status", "", &labels).get()
    };
    let store = FakeStore::default();
    let api = store.api_named("metrics-lease");
    let mut e = Elector::new(api, ME.into(), TIMING, store.clock()).unwrap();
    assert_eq!(status(), 0.0);
    time(&store).run(e.acquire());
    assert_eq!(status(), 1.0);
    let labels = [("name", "metrics-lease")];
    let renewals = || metrics::histogram("skiff_lease_renew_duration_seconds", "", &labels);
    let last = || metrics::gauge("skiff_lease_last_renew_timestamp_seconds", "", &labels);
    let (count_at_acquire, last_at_acquire) = (renewals().count(), last().get());
    assert!(last_at_acquire > 1.7e9, "{last_at_acquire}");
    // The timestamp is wall-clock time for the wire, in microseconds: let it move.
    std::thread::sleep(ms(2));
    time(&store).run_for(TIMING.retry_period, e.keep_renewing());
    assert_eq!(renewals().count(), count_at_acquire + 1);
    assert!(
        last().get() > last_at_acquire,
        "the renewal moved the timestamp"
    );
    time(&store).run(e.release()).unwrap();
    assert_eq!(status(), 0.0);
}

#[test]
fn release_without_ever_leading_sends_nothing() {
    let store = FakeStore::default();
    let mut e = elector(&store, TIMING);
    assert_eq!(time(&store).run(e.release()), Ok(false));
    assert!(store.requests().is_empty());
}

/// Lease duration 1 s, retry period 2 s: taking it after 1 s shows the standby woke at the
/// observed expiry; renewTime in the far past (taken at once) or future (never taken) would
/// show a comparison with the local clock.
#[test]
fn takes_a_lease_after_local_expiry_whatever_its_renew_time() {
    for renew_time in ["1970-01-01T00:00:00.000000Z", "2999-12-31T23:59:59.999999Z"] {
        let store = FakeStore::default();
        store.write_as_other(|spec| {
            spec.holder_identity = Some("frozen_xyz".into());
            spec.lease_duration_seconds = Some(1);
            spec.renew_time = Some(renew_time.into());
        });
        let mut e = elector(&store, TIMING);
        time(&store)
            .run_for(secs(60), e.acquire())
            .expect("never acquired");
        let spec = store.lease().unwrap().spec;
        assert_eq!(spec.holder_identity.as_deref(), Some(ME));
        assert_eq!(spec.lease_transitions, Some(1));
        let took = time(&store).elapsed();
        assert!(
            took > secs(1) && took < TIMING.retry_period,
            "{renew_time}: took {took:?}"
        );
    }
}
