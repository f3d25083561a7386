//! The Lease lock: client-go's `tryAcquireOrRenew`, renew and release over a [`LeaseApi`].
//!
//! The lock never talks HTTP itself; the manager implements [`LeaseApi`] for the dedicated
//! lease client. Every request carries a deadline, and the lock also enforces it, so even a
//! stuck implementation cannot hold the elector past its renew deadline.

use super::record::{ObservedLease, holder_of};
use crate::deadline::before;
use crate::kube::api::{Lease, LeaseSpec, ObjectMeta};
use crate::kube::{Error, WatchEvent};
use crate::time::now_micros;
use smol::stream::Stream;
use std::future::Future;
use std::time::Instant;

/// RELEASE_ATTEMPTS: a release that loses 409 races this many times gives up (the lease then
/// expires on its own).
pub const RELEASE_ATTEMPTS: usize = 3;

/// The operations on the one Lease that leader election needs.
pub trait LeaseApi: Send + Sync {
    /// The watch stream of [`LeaseApi::watch`].
    type Events: Stream<Item = Result<WatchEvent<Lease>, Error>> + Send;

    /// The Lease's name (the `name` label of `leader_election_master_status`).
    fn name(&self) -> &str;
    /// GET the Lease; `Error::Api { code: 404, .. }` when absent. The request, including any
    /// rate-limiter wait, must finish before `deadline`.
    fn get(&self, deadline: Instant) -> impl Future<Output = Result<Lease, Error>> + Send;
    /// POST the Lease (the implementation fills in the namespace; 409 when it exists).
    fn create(
        &self,
        lease: &Lease,
        deadline: Instant,
    ) -> impl Future<Output = Result<Lease, Error>> + Send;
    /// PUT the Lease with its `metadata.resourceVersion`; 409 when that version is stale.
    fn replace(
        &self,
        lease: &Lease,
        deadline: Instant,
    ) -> impl Future<Output = Result<Lease, Error>> + Send;
    /// WATCH this one Lease (field selector `metadata.name=<name>`).
    fn watch(&self) -> impl Future<Output = Result<Self::Events, Error>> + Send;
}

/// What an acquire attempt found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// We took the lease (created it, or it was free or expired).
    Acquired,
    /// We already held it and renewed it.
    Renewed,
    /// Someone else holds it and it has not expired by our observation.
    HeldBy(String),
}

pub struct LeaseLock<A> {
    api: A,
    identity: String,
    lease_duration_seconds: i32,
    observed: Option<ObservedLease>,
}

impl<A: LeaseApi> LeaseLock<A> {
    pub fn new(api: A, identity: String, lease_duration_seconds: i32) -> LeaseLock<A> {
        LeaseLock {
            api,
            identity,
            lease_duration_seconds,
            observed: None,
        }
    }

    pub fn api(&self) -> &A {
        &self.api
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    pub fn observed(&self) -> Option<&ObservedLease> {
        self.observed.as_ref()
    }

    /// Remembers `lease` as seen at `now`; logs when the holder changed.
    pub fn observe(&mut self, lease: Lease, now: Instant) {
        let before = self
            .observed
            .as_ref()
            .and_then(|o| o.holder().map(str::to_owned));
        let after = holder_of(&lease.spec).map(str::to_owned);
        match &mut self.observed {
            Some(seen) => {
                seen.observe(lease, now);
            }
            None => self.observed = Some(ObservedLease::new(lease, now)),
        }
        if before != after
            && let Some(holder) = after.filter(|h| *h != self.identity)
        {
            log::info!(
                "new leader observed: {holder} holds lease {}",
                self.api.name()
            );
        }
    }

    /// Forgets the observed lease (it was deleted).
    pub fn forget(&mut self) {
        self.observed = None;
    }

    /// GET, then create (404), renew (ours), take (free or expired) or report the holder.
    pub async fn try_acquire_or_renew(&mut self, deadline: Instant) -> Result<Attempt, Error> {
        let current = match before(deadline, "lease get", self.api.get(deadline)).await {
            Ok(lease) => lease,
            Err(e) if e.is_not_found() => return self.create(deadline).await,
            Err(e) => return Err(e),
        };
        let now = Instant::now();
        self.observe(current, now);
        let Some(seen) = self.observed.clone() else {
            return Err(Error::Decode("no lease observed after GET".into()));
        };
        if seen.is_held_by(&self.identity) {
            self.write(self.next_spec(seen.lease(), false), seen.lease(), deadline)
                .await?;
            return Ok(Attempt::Renewed);
        }
        if !seen.is_takeable(now) {
            return Ok(Attempt::HeldBy(
                seen.holder().unwrap_or_default().to_owned(),
            ));
        }
        self.write(self.next_spec(seen.lease(), true), seen.lease(), deadline)
            .await?;
        Ok(Attempt::Acquired)
    }

    /// The renew fast path: PUT with the cached resourceVersion, no GET first.
    pub async fn renew(&mut self, deadline: Instant) -> Result<(), Error> {
        let Some(seen) = self
            .observed
            .clone()
            .filter(|s| s.is_held_by(&self.identity))
        else {
            return Err(Error::Refused(
                "no cached lease held by this replica to renew".into(),
            ));
        };
        self.write(self.next_spec(seen.lease(), false), seen.lease(), deadline)
            .await
    }

    /// Gives the lease up if (and only if) a fresh GET shows we still hold it: holder "",
    /// leaseDurationSeconds 1, leaseTransitions kept. Retries a lost 409 race with a new GET.
    /// Returns whether a release was written.
    pub async fn release(&mut self, deadline: Instant) -> Result<bool, Error> {
        let mut last_conflict = None;
        for _ in 0..RELEASE_ATTEMPTS {
            let current = match before(deadline, "lease get", self.api.get(deadline)).await {
                Ok(lease) => lease,
                Err(e) if e.is_not_found() => return Ok(false),
                Err(e) => return Err(e),
            };
            self.observe(current.clone(), Instant::now());
            if holder_of(&current.spec) != Some(self.identity.as_str()) {
                return Ok(false);
            }
            let now = now_micros();
            let spec = LeaseSpec {
                holder_identity: Some(String::new()),
                lease_duration_seconds: Some(1),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                ..current.spec.clone()
            };
            match self.write(spec, &current, deadline).await {
                Ok(()) => return Ok(true),
                Err(e) if e.is_conflict() => last_conflict = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last_conflict.unwrap_or_else(|| Error::Refused("release was not attempted".into())))
    }

    async fn create(&mut self, deadline: Instant) -> Result<Attempt, Error> {
        let now = now_micros();
        let lease = Lease {
            metadata: ObjectMeta::named(None, self.api.name()),
            spec: LeaseSpec {
                holder_identity: Some(self.identity.clone()),
                lease_duration_seconds: Some(self.lease_duration_seconds),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            },
            ..Lease::default()
        };
        let created = before(deadline, "lease create", self.api.create(&lease, deadline)).await?;
        self.observe(created, Instant::now());
        Ok(Attempt::Acquired)
    }

    /// The spec we write to hold the lease; `taking` starts a new term for this holder.
    fn next_spec(&self, current: &Lease, taking: bool) -> LeaseSpec {
        let now = now_micros();
        let old = &current.spec;
        let holder_changes = holder_of(old) != Some(self.identity.as_str());
        let transitions = old.lease_transitions.unwrap_or(0);
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: if taking || old.acquire_time.is_none() {
                Some(now.clone())
            } else {
                old.acquire_time.clone()
            },
            renew_time: Some(now),
            lease_transitions: Some(if holder_changes {
                transitions.saturating_add(1)
            } else {
                transitions
            }),
            ..old.clone()
        }
    }

    /// PUT `spec` onto `current` (its resourceVersion) and remember what the server returned.
    /// A 409 is checked with a GET before it counts: the lease client hedges a silent PUT on a
    /// new connection, and when the first copy landed unanswered, the second gets the 409.
    async fn write(
        &mut self,
        spec: LeaseSpec,
        current: &Lease,
        deadline: Instant,
    ) -> Result<(), Error> {
        let lease = Lease {
            spec,
            ..current.clone()
        };
        match before(deadline, "lease update", self.api.replace(&lease, deadline)).await {
            Ok(stored) => {
                self.observe(stored, Instant::now());
                Ok(())
            }
            Err(e) if e.is_conflict() => self.confirm_own_write(&lease.spec, deadline, e).await,
            Err(e) => Err(e),
        }
    }

    /// After a 409 to a write of `spec`: `Ok` if the Lease holds exactly that write (same
    /// holder and renewTime, which is ours to the microsecond), else `conflict`.
    async fn confirm_own_write(
        &mut self,
        spec: &LeaseSpec,
        deadline: Instant,
        conflict: Error,
    ) -> Result<(), Error> {
        let current = before(deadline, "lease get", self.api.get(deadline)).await?;
        let ours = current.spec.holder_identity == spec.holder_identity
            && current.spec.renew_time.is_some()
            && current.spec.renew_time == spec.renew_time;
        self.observe(current, Instant::now());
        if ours {
            log::debug!("a 409 to a lease write whose first copy had already landed; it stands");
            return Ok(());
        }
        Err(conflict)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leader::fake::FakeStore;
    use std::time::Duration;

    const ME: &str = "me_abc";

    fn lock(store: &FakeStore) -> LeaseLock<crate::leader::fake::FakeApi> {
        LeaseLock::new(store.api(), ME.to_owned(), 15)
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
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
        let attempt = smol::block_on(lock(&store).try_acquire_or_renew(soon()));
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
        let attempt = smol::block_on(lock(&store).try_acquire_or_renew(soon()));
        assert_eq!(attempt, Ok(Attempt::HeldBy("other_xyz".into())));
        assert_eq!(store.requests(), ["GET"]);
    }

    #[test]
    fn takes_a_free_lease_with_one_more_transition_and_a_new_acquire_time() {
        let store = FakeStore::default();
        store.write_as_other(held_by(""));
        let attempt = smol::block_on(lock(&store).try_acquire_or_renew(soon()));
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
        smol::block_on(lock.try_acquire_or_renew(soon())).unwrap();
        let first = store.lease().unwrap();
        std::thread::sleep(Duration::from_millis(2));
        smol::block_on(lock.renew(soon())).unwrap();
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
        let attempt = smol::block_on(lock(&store).try_acquire_or_renew(soon()));
        assert!(attempt.is_err_and(|e| e.is_conflict()));
        assert_eq!(store.holder().as_deref(), Some("other_xyz"));
    }

    #[test]
    fn a_409_to_a_write_that_already_landed_is_a_renewal_not_a_loss() {
        let store = FakeStore::default();
        let mut lock = lock(&store);
        smol::block_on(lock.try_acquire_or_renew(soon())).unwrap();
        store.clear_requests();
        store.conflict_after_next_put();
        assert_eq!(smol::block_on(lock.renew(soon())), Ok(()));
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
        smol::block_on(lock.renew(soon())).expect("the next renewal uses the fresh version");
        assert_eq!(store.requests(), ["PUT"]);
    }

    #[test]
    fn release_clears_the_holder_sets_duration_one_and_keeps_transitions() {
        let store = FakeStore::default();
        store.write_as_other(held_by(ME));
        let mut lock = lock(&store);
        assert_eq!(smol::block_on(lock.release(soon())), Ok(true));
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
        assert_eq!(smol::block_on(lock(&store).release(soon())), Ok(true));
        // GET, PUT (409), GET (not our write: the race was lost), then a fresh try.
        assert_eq!(store.requests(), ["GET", "PUT", "GET", "GET", "PUT"]);
        assert_eq!(store.holder().as_deref(), Some(""));
    }

    #[test]
    fn release_writes_nothing_when_another_replica_holds_the_lease() {
        let store = FakeStore::default();
        store.write_as_other(held_by_other);
        assert_eq!(smol::block_on(lock(&store).release(soon())), Ok(false));
        assert_eq!(store.requests(), ["GET"]);
        assert_eq!(store.holder().as_deref(), Some("other_xyz"));
    }

    #[test]
    fn release_of_a_deleted_lease_writes_nothing() {
        let store = FakeStore::default();
        assert_eq!(smol::block_on(lock(&store).release(soon())), Ok(false));
        assert_eq!(store.requests(), ["GET"]);
    }

    #[test]
    fn a_stuck_request_fails_at_its_deadline() {
        let store = FakeStore::default();
        store.delay(Duration::from_secs(30));
        let started = Instant::now();
        let deadline = started + Duration::from_millis(50);
        let attempt = smol::block_on(lock(&store).try_acquire_or_renew(deadline));
        assert!(matches!(attempt, Err(Error::Timeout(_))), "{attempt:?}");
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
