//! The lock over the in-memory store, on the store's manual clock.

use super::*;
use crate::leader::fake::FakeStore;
use std::time::Duration;

const ME: &str = "me_abc";

fn lock(store: &FakeStore) -> LeaseLock<crate::leader::fake::FakeApi> {
    LeaseLock::new(store.api(), ME.to_owned(), 15, store.clock())
}

/// A deadline no request of these tests meets unless the store is told to delay it.
fn soon(store: &FakeStore) -> Instant {
    store.clock().now() + Duration::from_secs(5)
}

fn held_by_other(spec: &mut LeaseSpec) {
    spec.holder_identity = Some("other_xyz".into());
    spec.lease_duration_seconds = Some(15);
    spec.lease_transitions = Some(4);
    spec.acquire_time = Some("2026-01-01T00:00:00.000000Z".into());
}

/// [`held_by_other`]'s lease with `holder` in its place (`""`: nobody holds it).
fn held_by(holder: &'static str) -> impl FnOnce(&mut LeaseSpec) {
    move |spec| {
        held_by_other(spec);
        spec.holder_identity = Some(holder.into());
    }
}

#[test]
fn creates_the_lease_on_404_as_holder_with_zero_transitions() {
    let store = FakeStore::default();
    let attempt = smol::block_on(lock(&store).try_acquire_or_renew(soon(&store)));
    assert_eq!(attempt, Ok(Attempt::Acquired));
    let spec = store.lease().unwrap().spec;
    assert_eq!(spec.holder_identity.as_deref(), Some(ME));
    assert_eq!(spec.lease_duration_seconds, Some(15));
    assert_eq!(spec.lease_transitions, Some(0));
    assert_eq!(spec.acquire_time, spec.renew_time);
    assert_eq!(spec.renew_time.map(|t| t.len()), Some(27), "MicroTime");
    assert_eq!(store.requests(), ["GET", "POST"]);
}

#[test]
fn does_not_take_a_held_unexpired_lease() {
    let store = FakeStore::default();
    store.write_as_other(held_by_other);
    let attempt = smol::block_on(lock(&store).try_acquire_or_renew(soon(&store)));
    assert_eq!(attempt, Ok(Attempt::HeldBy("other_xyz".into())));
    assert_eq!(store.requests(), ["GET"]);
}

#[test]
fn takes_a_free_lease_with_one_more_transition_and_a_new_acquire_time() {
    let store = FakeStore::default();
    store.write_as_other(held_by(""));
    let attempt = smol::block_on(lock(&store).try_acquire_or_renew(soon(&store)));
    assert_eq!(attempt, Ok(Attempt::Acquired));
    let spec = store.lease().unwrap().spec;
    assert_eq!(spec.holder_identity.as_deref(), Some(ME));
    assert_eq!(spec.lease_transitions, Some(5));
    assert_ne!(
        spec.acquire_time.as_deref(),
        Some("2026-01-01T00:00:00.000000Z")
    );
}

#[test]
fn renewing_keeps_acquire_time_and_transitions_and_skips_the_get() {
    let store = FakeStore::default();
    let mut lock = lock(&store);
    smol::block_on(lock.try_acquire_or_renew(soon(&store))).unwrap();
    let first = store.lease().unwrap();
    std::thread::sleep(Duration::from_millis(2));
    smol::block_on(lock.renew(soon(&store))).unwrap();
    let renewed = store.lease().unwrap();
    assert_eq!(renewed.spec.acquire_time, first.spec.acquire_time);
    assert_eq!(renewed.spec.lease_transitions, Some(0));
    assert_ne!(renewed.spec.renew_time, first.spec.renew_time);
    assert_eq!(store.requests(), ["GET", "POST", "PUT"]);
}

#[test]
fn a_conflicting_write_means_the_race_is_lost() {
    let store = FakeStore::default();
    store.write_as_other(|spec| spec.holder_identity = Some(String::new()));
    store.race_next_put(held_by_other);
    let attempt = smol::block_on(lock(&store).try_acquire_or_renew(soon(&store)));
    assert!(attempt.is_err_and(|e| e.is_conflict()));
    assert_eq!(store.holder().as_deref(), Some("other_xyz"));
}

#[test]
fn a_409_to_a_write_that_already_landed_is_a_renewal_not_a_loss() {
    let store = FakeStore::default();
    let mut lock = lock(&store);
    smol::block_on(lock.try_acquire_or_renew(soon(&store))).unwrap();
    store.clear_requests();
    store.conflict_after_next_put();
    assert_eq!(smol::block_on(lock.renew(soon(&store))), Ok(()));
    assert_eq!(
        store.requests(),
        ["PUT", "GET"],
        "checked with one GET, not a second PUT"
    );
    let seen = lock.observed().expect("observed").lease().clone();
    assert_eq!(
        seen,
        store.lease().unwrap(),
        "the lock caches what the server holds"
    );
    store.clear_requests();
    smol::block_on(lock.renew(soon(&store))).expect("the next renewal uses the fresh version");
    assert_eq!(store.requests(), ["PUT"]);
}

#[test]
fn release_clears_the_holder_sets_duration_one_and_keeps_transitions() {
    let store = FakeStore::default();
    store.write_as_other(held_by(ME));
    let mut lock = lock(&store);
    assert_eq!(smol::block_on(lock.release(soon(&store))), Ok(true));
    let spec = store.lease().unwrap().spec;
    assert_eq!(spec.holder_identity.as_deref(), Some(""));
    assert_eq!(spec.lease_duration_seconds, Some(1));
    assert_eq!(spec.lease_transitions, Some(4));
}

#[test]
fn release_retries_a_409_with_a_fresh_get() {
    let store = FakeStore::default();
    store.write_as_other(|spec| spec.holder_identity = Some(ME.into()));
    store.race_next_put(|spec| spec.renew_time = Some("2026-01-01T00:00:01.000000Z".into()));
    assert_eq!(smol::block_on(lock(&store).release(soon(&store))), Ok(true));
    // GET, PUT (409), GET (not our write: the race was lost), then a fresh try.
    assert_eq!(store.requests(), ["GET", "PUT", "GET", "GET", "PUT"]);
    assert_eq!(store.holder().as_deref(), Some(""));
}

#[test]
fn release_writes_nothing_when_another_replica_holds_the_lease() {
    let store = FakeStore::default();
    store.write_as_other(held_by_other);
    assert_eq!(
        smol::block_on(lock(&store).release(soon(&store))),
        Ok(false)
    );
    assert_eq!(store.requests(), ["GET"]);
    assert_eq!(store.holder().as_deref(), Some("other_xyz"));
}

#[test]
fn release_of_a_deleted_lease_writes_nothing() {
    let store = FakeStore::default();
    assert_eq!(
        smol::block_on(lock(&store).release(soon(&store))),
        Ok(false)
    );
    assert_eq!(store.requests(), ["GET"]);
}

#[test]
fn a_stuck_request_fails_at_its_deadline() {
    let store = FakeStore::default();
    store.delay(Duration::from_secs(30));
    let started = store.clock().now();
    let deadline = started + Duration::from_millis(50);
    let attempt = store
        .time()
        .run(lock(&store).try_acquire_or_renew(deadline));
    assert!(matches!(attempt, Err(Error::Timeout(_))), "{attempt:?}");
    assert_eq!(
        store.clock().now(),
        deadline,
        "gave up at its deadline, not when the request ended 30 s later"
    );
}
