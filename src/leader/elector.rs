//! The Elector: acquire the lease (watching it while standing by), keep renewing it, release it.
//!
//! Shaped for a short manager: `acquire().await` returns once leading; race
//! `keep_renewing()` (returns [`LeaderLost`] when the renew deadline is missed, after closing
//! the fence) against the shutdown signal; on shutdown stop the controllers, then `release()`.

use super::fence::Fence;
use super::lock::{Attempt, LeaseApi, LeaseLock, before};
use super::standby::Standby;
use super::timing::{InvalidTiming, Timing};
use crate::kube::Error;
use crate::metrics::{self, Gauge, Histogram};
use smol::Timer;
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

pub struct Elector<A: LeaseApi> {
    lock: LeaseLock<A>,
    timing: Timing,
    fence: Fence,
    standby: Standby<A>,
    metrics: LeaseMetrics,
}

impl<A: LeaseApi> Elector<A> {
    pub fn new(api: A, identity: String, timing: Timing) -> Result<Elector<A>, InvalidTiming> {
        timing.validate()?;
        let seconds = timing.lease_duration_seconds().unwrap_or(i32::MAX);
        let metrics = LeaseMetrics::new(api.name());
        Ok(Elector {
            lock: LeaseLock::new(api, identity, seconds),
            fence: Fence::new(&timing),
            timing,
            standby: Standby::new(),
            metrics,
        })
    }

    pub fn identity(&self) -> &str {
        self.lock.identity()
    }

    pub fn timing(&self) -> Timing {
        self.timing
    }

    /// The fence for the main client (and the `/healthz` check, [`Fence::healthy`]).
    pub fn fence(&self) -> Fence {
        self.fence.clone()
    }

    /// Returns once this replica leads (fence open). Cancel by dropping the future.
    pub async fn acquire(&mut self) {
        loop {
            let sent = Instant::now();
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
            Timer::at(deadline.min(Instant::now() + self.timing.retry_period)).await;
            if Instant::now() >= deadline {
                return self.lost(format!(
                    "no successful renewal within the renew deadline {:?}",
                    self.timing.renew_deadline
                ));
            }
            let sent = Instant::now();
            let outcome = self.renew_once(fast_path, deadline).await;
            self.metrics
                .renew_duration
                .observe(sent.elapsed().as_secs_f64());
            match outcome {
                Ok(Attempt::Acquired | Attempt::Renewed) => {
                    self.fence.renewed(sent);
                    let wall = super::clock::unix_seconds(SystemTime::now());
                    self.metrics.last_renew.set(wall);
                    fast_path = true;
                }
                Ok(Attempt::HeldBy(holder)) => {
                    return self.lost(format!("the lease is now held by {holder}"));
                }
                Err(e) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    log::warn!(
                        "lease renewal failed ({left:?} left before the renew deadline): {e}"
                    );
                    fast_path = false;
                }
            }
        }
    }

    /// Closes the fence, then gives the lease up if a fresh GET shows we still hold it, within
    /// [`Timing::release_timeout`]. Call after the controllers stopped. Returns whether a
    /// release was written.
    pub async fn release(&mut self) -> Result<bool, Error> {
        let was_leading = self.fence.is_leading();
        self.fence.close();
        self.metrics.master_status.set(0.0);
        self.standby.stop_watching();
        if !was_leading {
            return Ok(false);
        }
        let deadline = Instant::now() + self.timing.release_timeout();
        let released = self.lock.release(deadline).await;
        match &released {
            Ok(true) => log::info!("released lease {}", self.lock.api().name()),
            Ok(false) => log::info!(
                "lease {} no longer held; nothing to release",
                self.lock.api().name()
            ),
            Err(e) => log::warn!("could not release lease {}: {e}", self.lock.api().name()),
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
            .set(super::clock::unix_seconds(SystemTime::now()));
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
        let message = format!("{} became leader", self.identity());
        let event = self.lock.api().record_event("LeaderElection", &message);
        let deadline = Instant::now() + self.timing.retry_period;
        let bounded = before(deadline, "event", async {
            event.await;
            Ok(())
        });
        if let Err(e) = bounded.await {
            log::debug!("leader event not recorded: {e}");
        }
    }

    fn lost(&mut self, reason: String) -> LeaderLost {
        self.fence.close();
        self.metrics.master_status.set(0.0);
        let lost = LeaderLost { reason };
        log::info!("{lost}");
        lost
    }
}

/// The lease series of DESIGN §7, looked up once.
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
                &[],
            ),
            last_renew: metrics::gauge(
                "skiff_lease_last_renew_timestamp_seconds",
                "Unix time of the last successful lease renewal.",
                &[],
            ),
        }
    }
}
