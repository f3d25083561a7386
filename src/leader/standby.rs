//! The standby's wait between acquire attempts: a jittered retry period, cut short when the
//! observed lease expires or the watch shows the holder cleared.
//!
//! client-go only polls; watching lets a standby lead within milliseconds of a release. When
//! the watch cannot be opened or ends, the standby falls back to polling (and reopens the
//! watch at most once per wait, so a failing watch never becomes a hot loop).

use super::lock::{LeaseApi, LeaseLock, before};
use super::random::Random;
use super::timing::{JITTER_FACTOR, Timing};
use crate::kube::api::Lease;
use crate::kube::{Error, Event};
use smol::Timer;
use smol::stream::StreamExt;
use std::pin::Pin;
use std::time::{Duration, Instant};

/// EXPIRY_MARGIN: wake this long after the observed expiry, so the lease is strictly expired.
const EXPIRY_MARGIN: Duration = Duration::from_millis(1);

pub struct Standby<A: LeaseApi> {
    random: Random,
    /// `None` while leading, or after the watch failed (then we poll).
    watch: Option<Pin<Box<A::Events>>>,
}

impl<A: LeaseApi> Standby<A> {
    pub fn new() -> Standby<A> {
        Standby {
            random: Random::from_entropy(),
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
        let jitter = 1.0 + self.random.next_f64() * JITTER_FACTOR;
        let retry_at = Instant::now() + timing.retry_period.mul_f64(jitter);
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
                Timer::at(wake_at).await;
                return;
            };
            let next = smol::future::or(async { Some(events.next().await) }, async {
                Timer::at(wake_at).await;
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
        event: Option<Result<Event<Lease>, Error>>,
    ) -> bool {
        match event {
            Some(Ok(Event::Added(lease) | Event::Modified(lease))) => {
                lock.observe(lease, Instant::now());
                lock.observed().is_some_and(|o| o.holder().is_none())
            }
            Some(Ok(Event::Deleted(_))) => {
                lock.forget();
                true
            }
            Some(Ok(Event::Bookmark { .. })) => false,
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
        let deadline = Instant::now() + timing.retry_period;
        match before(deadline, "watch", lock.api().watch()).await {
            Ok(events) => self.watch = Some(Box::pin(events)),
            Err(e) => log::debug!("cannot watch the lease, polling instead: {e}"),
        }
    }
}

impl<A: LeaseApi> Default for Standby<A> {
    fn default() -> Self {
        Standby::new()
    }
}
