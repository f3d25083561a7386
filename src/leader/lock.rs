//! The Lease lock: client-go's `tryAcquireOrRenew`, renew and release over a [`LeaseApi`].
//!
//! The lock never talks HTTP itself; the manager implements [`LeaseApi`] for the dedicated
//! lease client. Every request carries a deadline, and the lock also enforces it on its clock,
//! so even a stuck implementation cannot hold the elector past its renew deadline.

use super::record::{ObservedLease, holder_of};
use crate::clock::Clock;
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
    /// Reads observation times and enforces deadlines.
    clock: Clock,
}

impl<A: LeaseApi> LeaseLock<A> {
    pub fn new(
        api: A,
        identity: String,
        lease_duration_seconds: i32,
        clock: Clock,
    ) -> LeaseLock<A> {
        LeaseLock {
            api,
            identity,
            lease_duration_seconds,
            observed: None,
            clock,
        }
    }

    pub fn api(&self) -> &A {
        &self.api
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
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
        let current = match self
            .clock
            .before(deadline, "lease get", self.api.get(deadline))
            .await
        {
            Ok(lease) => lease,
            Err(e) if e.is_not_found() => return self.create(deadline).await,
            Err(e) => return Err(e),
        };
        let now = self.clock.now();
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
            let current = match self
                .clock
                .before(deadline, "lease get", self.api.get(deadline))
                .await
            {
                Ok(lease) => lease,
                Err(e) if e.is_not_found() => return Ok(false),
                Err(e) => return Err(e),
            };
            self.observe(current.clone(), self.clock.now());
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
        let created = self
            .clock
            .before(deadline, "lease create", self.api.create(&lease, deadline))
            .await?;
        self.observe(created, self.clock.now());
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
        match self
            .clock
            .before(deadline, "lease update", self.api.replace(&lease, deadline))
            .await
        {
            Ok(stored) => {
                self.observe(stored, self.clock.now());
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
        let current = self
            .clock
            .before(deadline, "lease get", self.api.get(deadline))
            .await?;
        let ours = current.spec.holder_identity == spec.holder_identity
            && current.spec.renew_time.is_some()
            && current.spec.renew_time == spec.renew_time;
        self.observe(current, self.clock.now());
        if ours {
            log::debug!("a 409 to a lease write whose first copy had already landed; it stands");
            return Ok(());
        }
        Err(conflict)
    }
}

#[cfg(test)]
mod tests;
