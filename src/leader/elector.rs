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

/// One replica's side of the election. Lives for the whole process: the lock keeps the last
/// observed lease (its resourceVersion is the renew fast path; its observation time is the
/// expiry clock), and the fence it hands out stays shared with the main client.
pub struct Elector<A: LeaseApi> {
    lock: LeaseLock<A>,
    timing: Timing,
    fence: Fence,
    standby: Standby<A>,
    metrics: LeaseMetrics,
    /// Posts the "became leader" Event in the background (never on the lease client).
    announcer: Announcer,
    cost: DeletionCost,
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
            // One attempt may use half the time left: a stuck connection is then dropped while
            // a retry on a fresh one can still make the deadline.
            let attempt_deadline = sent + deadline.saturating_duration_since(sent) / 2;
            let outcome = self.renew_once(fast_path, attempt_deadline).await;
            self.metrics
                .renew_duration
                .observe(sent.elapsed().as_secs_f64());
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
        let deadline = Instant::now() + self.timing.release_timeout();
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
mod tests {
    use super::*;
    use crate::deadline::within;
    use crate::leader::fake::{FakeApi, FakeStore};
    use crate::testing::ms;
    use std::time::Duration;

    const ME: &str = "me_abc";

    /// lease 300 ms (written as 1 s), renew deadline 200 ms, retry period 50 ms.
    fn short() -> Timing {
        Timing::new(ms(300), ms(200), ms(50)).unwrap()
    }

    fn elector(store: &FakeStore, timing: Timing) -> Elector<FakeApi> {
        Elector::new(store.api(), ME.to_owned(), timing).unwrap()
    }

    fn leading(store: &FakeStore) -> Elector<FakeApi> {
        let mut e = elector(store, short());
        let acquired = smol::block_on(within(ms(1000), e.acquire()));
        assert!(acquired.is_some(), "did not acquire");
        e
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
        let err = Elector::new(FakeStore::default().api(), ME.into(), bad).err();
        assert!(err.is_some_and(|e| e.message.contains("--leader-elect-lease-duration")));
    }

    #[test]
    fn acquires_an_absent_lease_and_opens_the_fence() {
        let store = FakeStore::default();
        let e = leading(&store);
        assert_eq!(store.holder().as_deref(), Some(ME));
        assert!(e.fence().check_at(Instant::now(), "POST", "/x").is_ok());
        assert_eq!(store.requests(), ["GET", "POST"], "only Lease requests");
    }

    /// The announcement never finishes: an elector that waited for it would never lead.
    #[test]
    fn becomes_leader_without_waiting_for_the_leader_event() {
        let store = FakeStore::default();
        let (tx, rx) = smol::channel::unbounded();
        let mut e = elector(&store, short());
        e.announce_with(Announcer::new(
            move |message| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(message).await;
                    smol::future::pending::<()>().await;
                }
            },
            Duration::from_secs(3600),
        ));
        let acquired = smol::block_on(within(ms(1000), e.acquire()));
        assert!(acquired.is_some(), "acquire waited for the Event");
        let message = smol::block_on(within(ms(1000), rx.recv()));
        assert_eq!(message, Some(Ok(format!("{ME} became leader"))));
    }

    #[test]
    fn renews_every_retry_period_while_leading() {
        let store = FakeStore::default();
        let mut e = leading(&store);
        store.clear_requests();
        let lost = smol::block_on(within(ms(400), e.keep_renewing()));
        assert_eq!(lost, None);
        assert!(store.count("PUT") >= 5, "{:?}", store.requests());
        assert_eq!(store.count("GET"), 0, "renewals use the cached version");
        assert!(e.fence().check_at(Instant::now(), "PUT", "/x").is_ok());
    }

    #[test]
    fn transient_renew_failures_are_retried_with_a_get_and_leadership_kept() {
        let store = FakeStore::default();
        let mut e = leading(&store);
        store.fail_next(2);
        let lost = smol::block_on(within(ms(400), e.keep_renewing()));
        assert_eq!(lost, None);
        assert!(store.count("GET") >= 2, "{:?}", store.requests());
        assert!(e.fence().is_leading());
        assert_eq!(store.holder().as_deref(), Some(ME));
    }

    #[test]
    fn renew_failures_until_the_deadline_lose_leadership_and_close_the_fence() {
        let store = FakeStore::default();
        let mut e = leading(&store);
        store.fail_all(true);
        let started = Instant::now();
        let lost = smol::block_on(within(ms(2000), e.keep_renewing())).expect("not lost");
        let took = started.elapsed();
        assert!(took >= ms(150) && took < ms(500), "{took:?}");
        assert!(lost.reason.contains("renew deadline"), "{lost}");
        assert!(lost.to_string().starts_with("leader election lost"));
        assert!(!e.fence().is_leading());
        assert!(e.fence().check_at(Instant::now(), "POST", "/x").is_err());
    }

    #[test]
    fn a_stuck_renewal_cannot_outlive_the_renew_deadline() {
        let store = FakeStore::default();
        let mut e = leading(&store);
        store.delay(Duration::from_secs(30));
        let started = Instant::now();
        let lost = smol::block_on(within(ms(2000), e.keep_renewing()));
        assert!(lost.is_some(), "a stuck request held the elector");
        assert!(started.elapsed() < ms(400), "{:?}", started.elapsed());
    }

    #[test]
    fn loses_at_once_when_another_replica_holds_the_lease() {
        let store = FakeStore::default();
        let mut e = leading(&store);
        other_holds(&store);
        let started = Instant::now();
        let lost = smol::block_on(within(ms(2000), e.keep_renewing())).expect("not lost");
        assert!(started.elapsed() < ms(150), "{:?}", started.elapsed());
        assert!(lost.reason.contains("other_xyz"), "{lost}");
        assert!(!e.fence().is_leading());
    }

    #[test]
    fn release_clears_the_holder_keeps_transitions_and_closes_the_fence() {
        let store = FakeStore::default();
        let mut e = leading(&store);
        assert_eq!(smol::block_on(e.release()), Ok(true));
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
        smol::block_on(within(ms(2000), e.keep_renewing())).expect("not lost");
        store.clear_requests();
        assert_eq!(smol::block_on(e.release()), Ok(false));
        assert_eq!(store.count("PUT"), 0);
        assert_eq!(store.holder().as_deref(), Some("other_xyz"));
    }

    #[test]
    fn release_after_a_missed_deadline_clears_a_lease_the_server_still_shows_as_ours() {
        let store = FakeStore::default();
        let mut e = leading(&store);
        store.fail_all(true);
        smol::block_on(within(ms(2000), e.keep_renewing())).expect("not lost");
        store.fail_all(false);
        assert_eq!(smol::block_on(e.release()), Ok(true));
        assert_eq!(store.holder().as_deref(), Some(""));
    }

    #[test]
    fn master_status_and_renew_metrics_follow_leadership() {
        let status = || {
            let labels = [("name", "metrics-lease")];
            metrics::gauge("leader_election_master_status", "", &labels).get()
        };
        let store = FakeStore::default();
        let mut e = Elector::new(store.api_named("metrics-lease"), ME.into(), short()).unwrap();
        assert_eq!(status(), 0.0);
        smol::block_on(within(ms(1000), e.acquire())).expect("did not acquire");
        assert_eq!(status(), 1.0);
        let labels = [("name", "metrics-lease")];
        let renewals = || metrics::histogram("skiff_lease_renew_duration_seconds", "", &labels);
        let last = || metrics::gauge("skiff_lease_last_renew_timestamp_seconds", "", &labels);
        let (count_at_acquire, last_at_acquire) = (renewals().count(), last().get());
        assert!(last_at_acquire > 1.7e9, "{last_at_acquire}");
        smol::block_on(within(ms(120), e.keep_renewing()));
        assert!(renewals().count() > count_at_acquire);
        assert!(
            last().get() > last_at_acquire,
            "the renewals moved the timestamp"
        );
        smol::block_on(e.release()).unwrap();
        assert_eq!(status(), 0.0);
    }

    #[test]
    fn release_without_ever_leading_sends_nothing() {
        let store = FakeStore::default();
        let mut e = elector(&store, short());
        assert_eq!(smol::block_on(e.release()), Ok(false));
        assert!(store.requests().is_empty());
    }

    /// Lease duration 1 s, retry period 2 s: taking it after ~1 s shows the standby woke at the
    /// observed expiry; renewTime in the far past (taken at once) or future (never taken) would
    /// show a comparison with the local clock.
    #[test]
    fn takes_a_lease_after_local_expiry_whatever_its_renew_time() {
        let attempt = |renew_time: &'static str| async move {
            let store = FakeStore::default();
            store.write_as_other(|spec| {
                spec.holder_identity = Some("frozen_xyz".into());
                spec.lease_duration_seconds = Some(1);
                spec.renew_time = Some(renew_time.into());
            });
            let mut e = elector(&store, Timing::default());
            let started = Instant::now();
            within(ms(3000), e.acquire()).await.expect("never acquired");
            let spec = store.lease().unwrap().spec;
            assert_eq!(spec.holder_identity.as_deref(), Some(ME));
            assert_eq!(spec.lease_transitions, Some(1));
            started.elapsed()
        };
        let (past, future) = smol::block_on(smol::future::zip(
            attempt("1970-01-01T00:00:00.000000Z"),
            attempt("2999-12-31T23:59:59.999999Z"),
        ));
        for took in [past, future] {
            assert!(took >= ms(1000) && took < ms(1700), "{took:?}");
        }
    }
}
