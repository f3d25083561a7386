//! The standby's wait between acquire attempts: a jittered retry period, cut short when the
//! observed lease expires or the watch shows the holder cleared.
//!
//! client-go only polls; watching lets a standby lead within milliseconds of a release. When
//! the watch cannot be opened or ends, the standby falls back to polling (and reopens the
//! watch at most once per wait, so a failing watch never becomes a hot loop).

use super::lock::{LeaseApi, LeaseLock};
use super::timing::{JITTER_FACTOR, Timing};
use crate::kube::api::Lease;
use crate::kube::{Error, WatchEvent};
use crate::random::{self, Rng};
use smol::stream::StreamExt;
use std::pin::Pin;
use std::time::Duration;

/// EXPIRY_MARGIN: wake this long after the observed expiry, so the lease is strictly expired.
const EXPIRY_MARGIN: Duration = Duration::from_millis(1);

pub struct Standby<A: LeaseApi> {
    random: Rng,
    /// `None` while leading, or after the watch failed (then we poll).
    watch: Option<Pin<Box<A::Events>>>,
}

impl<A: LeaseApi> Standby<A> {
    pub fn new() -> Standby<A> {
        Standby {
            random: random::rng(),
            watch: None,
        }
    }

    /// Stops watching (we lead, or are shutting down).
    pub fn stop_watching(&mut self) {
        self.watch = None;
    }

    /// Waits until the next acquire attempt is worth making: the jittered retry period
    /// (client-go's wait.JitterUntil: period × (1 + rand × 1.2)) passed, the observed lease
    /// expired, or the watch shows the holder cleared or the lease deleted.
    pub async fn wait(&mut self, lock: &mut LeaseLock<A>, timing: &Timing) {
        let clock = lock.clock().clone();
        let retry_at =
            clock.now() + random::jitter(timing.retry_period, JITTER_FACTOR, &mut self.random);
        if self.watch.is_none() {
            self.open_watch(lock, timing).await;
        }
        loop {
            let wake_at = match lock.observed() {
                Some(seen) if seen.holder().is_some() => {
                    retry_at.min(seen.expires_at() + EXPIRY_MARGIN)
                }
                _ => retry_at,
            };
            let Some(events) = self.watch.as_mut() else {
                clock.sleep_until(wake_at).await;
                return;
            };
            let next = smol::future::or(async { Some(events.next().await) }, async {
                clock.sleep_until(wake_at).await;
                None
            })
            .await;
            let Some(event) = next else { return };
            if self.on_watch_event(lock, event) {
                return;
            }
        }
    }

    /// Applies one watch item; returns whether to try to acquire at once.
    fn on_watch_event(
        &mut self,
        lock: &mut LeaseLock<A>,
        event: Option<Result<WatchEvent<Lease>, Error>>,
    ) -> bool {
        match event {
            Some(Ok(WatchEvent::Added(lease) | WatchEvent::Modified(lease))) => {
                let now = lock.clock().now();
                lock.observe(lease, now);
                lock.observed().is_some_and(|o| o.holder().is_none())
            }
            Some(Ok(WatchEvent::Deleted(_))) => {
                lock.forget();
                true
            }
            Some(Ok(WatchEvent::Bookmark { .. })) => false,
            Some(Err(e)) => {
                log::debug!("lease watch failed, polling instead: {e}");
                self.watch = None;
                false
            }
            None => {
                log::debug!("lease watch ended, polling instead");
                self.watch = None;
                false
            }
        }
    }

    async fn open_watch(&mut self, lock: &LeaseLock<A>, timing: &Timing) {
        let clock = lock.clock();
        let deadline = clock.now() + timing.retry_period;
        match clock
            .before(deadline, "lease watch", lock.api().watch())
            .await
        {
            Ok(events) => self.watch = Some(Box::pin(events)),
            Err(e) => log::debug!("cannot watch the lease, polling instead: {e}"),
        }
    }
}

/// `period` × (1 + `unit` × [`JITTER_FACTOR`]) for `unit` in [0, 1), as wait.JitterUntil.
impl<A: LeaseApi> Default for Standby<A> {
    fn default() -> Self {
        Standby::new()
    }
}

#[cfg(test)]
mod tests {
    use crate::leader::fake::{FakeApi, FakeStore};
    use crate::leader::{Elector, Timing};
    use crate::testing::{ms, secs};
    use std::time::Duration;

    fn other_holds(store: &FakeStore) {
        store.write_as_other(|spec| {
            spec.holder_identity = Some("other_xyz".into());
            spec.lease_duration_seconds = Some(15);
        });
    }

    fn elector(store: &FakeStore, timing: Timing) -> Elector<FakeApi> {
        Elector::new(store.api(), "me_abc".into(), timing, store.clock()).unwrap()
    }

    /// Runs `acquire` in virtual time while another replica does `act` after 100 ms; returns how
    /// long after `act` this replica led, or `None` if it did not lead within `limit`.
    fn lead_after(
        store: &FakeStore,
        timing: Timing,
        act: impl FnOnce(&FakeStore),
        limit: Duration,
    ) -> Option<Duration> {
        let mut e = elector(store, timing);
        let clock = store.clock();
        let acquired = async {
            e.acquire().await;
            clock.now()
        };
        let acted = async {
            clock.sleep(ms(100)).await;
            act(store);
            clock.now()
        };
        let both = smol::future::zip(acquired, acted);
        let (acquired, acted) = store.time().run_for(limit, both)?;
        Some(acquired.saturating_duration_since(acted))
    }

    #[test]
    fn retry_waits_are_jittered_up_to_2_2_retry_periods() {
        let jittered = |u| crate::random::jitter_at(ms(2000), super::JITTER_FACTOR, u);
        assert_eq!(jittered(0.0), ms(2000));
        assert_eq!(jittered(0.5), ms(3200));
        assert!(jittered(0.999_999) < ms(4400));
    }

    /// Retry period 2 s, lease 15 s: leading when the holder is cleared, with no time passed,
    /// can only come from the watch.
    #[test]
    fn leads_at_once_when_a_watch_event_shows_the_holder_cleared() {
        let store = FakeStore::default();
        other_holds(&store);
        let clear =
            |s: &FakeStore| s.write_as_other(|spec| spec.holder_identity = Some(String::new()));
        let took = lead_after(&store, Timing::default(), clear, secs(60)).expect("did not lead");
        assert_eq!(took, Duration::ZERO);
        assert_eq!(store.holder().as_deref(), Some("me_abc"));
        assert_eq!(store.count("WATCH"), 1);
    }

    #[test]
    fn leads_at_once_when_the_lease_is_deleted() {
        let store = FakeStore::default();
        other_holds(&store);
        let took = lead_after(
            &store,
            Timing::default(),
            FakeStore::delete_as_other,
            secs(60),
        );
        assert_eq!(took, Some(Duration::ZERO));
        assert_eq!(store.lease().unwrap().spec.lease_transitions, Some(0));
    }

    /// Within the first retry period (2 s, jittered to at least that), a renewal seen on the
    /// watch must not make the standby try again.
    #[test]
    fn a_renewal_seen_on_the_watch_does_not_wake_the_standby() {
        let store = FakeStore::default();
        other_holds(&store);
        let renew = |s: &FakeStore| s.write_as_other(|spec| spec.renew_time = Some("x".into()));
        let led = lead_after(&store, Timing::default(), renew, ms(1999));
        assert_eq!(led, None);
        assert_eq!(store.count("GET"), 1, "{:?}", store.requests());
    }

    /// Without a watch, the next attempt comes at the jittered retry period: 50 ms × (1 + u ×
    /// 1.2) after the last, so within 110 ms of the holder being cleared.
    #[test]
    fn falls_back_to_polling_when_the_watch_fails() {
        let store = FakeStore::default();
        store.fail_watch(true);
        other_holds(&store);
        let short = Timing::new(ms(300), ms(200), ms(50)).unwrap();
        let clear =
            |s: &FakeStore| s.write_as_other(|spec| spec.holder_identity = Some(String::new()));
        let took = lead_after(&store, short, clear, secs(60)).expect("did not lead by polling");
        assert!(took > Duration::ZERO && took < ms(110), "{took:?}");
        let (gets, watches) = (store.count("GET"), store.count("WATCH"));
        assert!(gets >= 2 && watches <= gets, "{:?}", store.requests());
    }
}
