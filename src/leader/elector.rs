//! The Elector: acquire the lease (watching it while standing by), keep renewing it, release it.
//!
//! Shaped for a short manager: `acquire().await` returns once leading; race
//! `keep_renewing()` (returns [`LeaderLost`] when the renew deadline is missed, after closing
//! the fence) against the shutdown signal; on shutdown stop the controllers, then `release()`.

use super::announce::Announcer;
use super::deletion_cost::DeletionCost;
use super::fence::Fence;
use super::lock::{Attempt, LeaseApi, LeaseLock};
use super::standby::Standby;
use super::timing::{InvalidTiming, Timing};
use crate::clock::Clock;
use crate::kube::Error;
use crate::metrics::{self, Gauge, Histogram};
use std::fmt;
use std::time::{Instant, SystemTime};

/// Leadership is over: the renew deadline passed or another replica holds the lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderLost {
    pub reason: String,
}

impl fmt::Display for LeaderLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "leader election lost: {}", self.reason)
    }
}

impl std::error::Error for LeaderLost {}

/// One replica's side of the election. Lives for the whole process: the lock keeps the last
/// observed lease (its resourceVersion is the renew fast path; its observation time is the
/// expiry clock), and the fence it hands out stays shared with the main client. Every wait and
/// deadline of the election, the fence's included, reads one clock.
pub struct Elector<A: LeaseApi> {
    lock: LeaseLock<A>,
    clock: Clock,
    timing: Timing,
    fence: Fence,
    standby: Standby<A>,
    metrics: LeaseMetrics,
    /// Posts the "became leader" Event in the background (never on the lease client).
    announcer: Announcer,
    cost: DeletionCost,
}

impl<A: LeaseApi> Elector<A> {
    pub fn new(
        api: A,
        identity: String,
        timing: Timing,
        clock: Clock,
    ) -> Result<Elector<A>, InvalidTiming> {
        timing.validate()?;
        let seconds = timing.lease_duration_seconds().unwrap_or(i32::MAX);
        let metrics = LeaseMetrics::new(api.name());
        Ok(Elector {
            lock: LeaseLock::new(api, identity, seconds, clock.clone()),
            fence: Fence::new(&timing, clock.clone()),
            clock,
            timing,
            standby: Standby::new(),
            metrics,
            announcer: Announcer::silent(),
            cost: DeletionCost::none(),
        })
    }

    /// Who announces this replica's leadership (by default nobody).
    pub fn announce_with(&mut self, announcer: Announcer) {
        self.announcer = announcer;
    }

    /// Who marks this replica's Pod while it leads (by default nobody).
    pub fn mark_pod_with(&mut self, cost: DeletionCost) {
        self.cost = cost;
    }

    pub fn identity(&self) -> &str {
        self.lock.identity()
    }

    pub fn timing(&self) -> Timing {
        self.timing
    }

    /// The clock the election reads.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The fence for the main client (and the `/healthz` check, [`Fence::healthy`]).
    pub fn fence(&self) -> Fence {
        self.fence.clone()
    }

    /// Returns once this replica leads (fence open). Cancel by dropping the future.
    pub async fn acquire(&mut self) {
        loop {
            let sent = self.clock.now();
            let deadline = sent + self.timing.renew_deadline;
            match self.lock.try_acquire_or_renew(deadline).await {
                Ok(Attempt::Acquired | Attempt::Renewed) => return self.became_leader(sent).await,
                Ok(Attempt::HeldBy(holder)) => log::debug!("lease held by {holder}; standing by"),
                Err(e) if e.is_conflict() => log::debug!("lost the race for the lease: {e}"),
                Err(e) => log::warn!("could not acquire lease {}: {e}", self.lock.api().name()),
            }
            self.standby.wait(&mut self.lock, &self.timing).await;
        }
    }

    /// Renews every retry period while leading. Returns when leadership is lost, with the fence
    /// already closed: the renew deadline (from the last successful renewal) passed, or another
    /// replica holds the lease.
    pub async fn keep_renewing(&mut self) -> LeaderLost {
        let mut fast_path = true;
        loop {
            let Some(deadline) = self.fence.deadline().filter(|_| self.fence.is_leading()) else {
                return self.lost("not leading".into());
            };
            let next_try = self.clock.now() + self.timing.retry_period;
            self.clock.sleep_until(deadline.min(next_try)).await;
            if self.clock.now() >= deadline {
                return self.lost(format!(
                    "no successful renewal within the renew deadline {:?}",
                    self.timing.renew_deadline
                ));
            }
            let sent = self.clock.now();
            // One attempt may use half the time left: a stuck connection is then dropped while
            // a retry on a fresh one can still make the deadline.
            let attempt_deadline = sent + deadline.saturating_duration_since(sent) / 2;
            let outcome = self.renew_once(fast_path, attempt_deadline).await;
            self.metrics
                .renew_duration
                .observe((self.clock.now() - sent).as_secs_f64());
            match outcome {
                Ok(Attempt::Acquired | Attempt::Renewed) => {
                    self.fence.renewed(sent);
                    let wall = crate::time::unix_seconds(SystemTime::now());
                    self.metrics.last_renew.set(wall);
                    fast_path = true;
                }
                Ok(Attempt::HeldBy(holder)) => {
                    return self.lost(format!("the lease is now held by {holder}"));
                }
                Err(e) => {
                    let left = deadline.saturating_duration_since(self.clock.now());
                    log::warn!(
                        "lease renewal failed ({left:?} left before the renew deadline): {e}"
                    );
                    fast_path = false;
                }
            }
        }
    }

    /// Closes the fence, then gives the lease up if a fresh GET shows we still hold it, within
    /// [`Timing::release_timeout`]. Call after the controllers stopped. Sends nothing unless we
    /// led or last saw the lease as ours (an acquire cancelled just after its write). Returns
    /// whether a release was written.
    pub async fn release(&mut self) -> Result<bool, Error> {
        let was_leading = self.fence.is_leading();
        self.fence.close();
        self.metrics.master_status.set(0.0);
        self.standby.stop_watching();
        self.announcer.cancel();
        self.cost.follow();
        let seen_as_ours = self
            .lock
            .observed()
            .is_some_and(|o| o.is_held_by(self.lock.identity()));
        if !was_leading && !seen_as_ours {
            return Ok(false);
        }
        let deadline = self.clock.now() + self.timing.release_timeout();
        let released = self.lock.release(deadline).await;
        match &released {
            Ok(true) => log::info!("released lease {}", self.lock.api().name()),
            Ok(false) => log::info!(
                "lease {} no longer held; nothing to release",
                self.lock.api().name()
            ),
            Err(e) => log::warn!(
                "could not release lease {}, it will expire instead: {e}",
                self.lock.api().name()
            ),
        }
        released
    }

    /// One renewal: PUT with the cached version; after a failure (or at once on a 409, whose
    /// cache is stale) GET and PUT again.
    async fn renew_once(&mut self, fast_path: bool, deadline: Instant) -> Result<Attempt, Error> {
        if fast_path {
            match self.lock.renew(deadline).await {
                Ok(()) => return Ok(Attempt::Renewed),
                Err(e) if !e.is_conflict() => return Err(e),
                Err(_) => {}
            }
        }
        self.lock.try_acquire_or_renew(deadline).await
    }

    async fn became_leader(&mut self, sent: Instant) {
        self.fence.renewed(sent);
        self.standby.stop_watching();
        self.metrics.master_status.set(1.0);
        self.metrics
            .last_renew
            .set(crate::time::unix_seconds(SystemTime::now()));
        let name = self.lock.api().name().to_owned();
        let transitions = self
            .lock
            .observed()
            .and_then(|o| o.lease().spec.lease_transitions);
        log::info!(
            "acquired lease {name} as {} (leaseTransitions {})",
            self.identity(),
            transitions.unwrap_or(0)
        );
        // Not awaited: the Event goes out through the main client in the background.
        self.announcer
            .announce(format!("{} became leader", self.identity()));
        self.cost.lead();
    }

    fn lost(&mut self, reason: String) -> LeaderLost {
        self.fence.close();
        self.announcer.cancel();
        self.cost.follow();
        self.metrics.master_status.set(0.0);
        LeaderLost { reason }
    }
}

/// The lease series (README, "Probes, metrics and logs"), looked up once.
struct LeaseMetrics {
    master_status: Gauge,
    renew_duration: Histogram,
    last_renew: Gauge,
}

impl LeaseMetrics {
    fn new(name: &str) -> LeaseMetrics {
        LeaseMetrics {
            master_status: metrics::gauge(
                "leader_election_master_status",
                "1 when this replica is the leader of the named lease, else 0.",
                &[("name", name)],
            ),
            renew_duration: metrics::histogram(
                "skiff_lease_renew_duration_seconds",
                "Duration of lease renewal attempts.",
                &[("name", name)],
            ),
            last_renew: metrics::gauge(
                "skiff_lease_last_renew_timestamp_seconds",
                "Unix time of the last successful lease renewal.",
                &[("name", name)],
            ),
        }
    }
}

#[cfg(test)]
mod tests;
