//! Liveness of the connections to one API server: suspicion that both clients raise, and how
//! long each of the controllers' watches has heard nothing.
//!
//! Why: the lease client shares no connection with the controllers' client, so a Lease that
//! renews proves nothing about the watches. A load balancer or NAT that loses a flow's state
//! leaves both ends of a connection open and silent; the watches then hear nothing while the
//! lease, on connections of its own, renews. Two signals close that gap:
//!
//! - **Suspicion.** A request that got no reply in time, on either client, or a watch silent
//!   past its deadline, marks every connection opened before it as suspect: idle pooled
//!   connections are no longer reused, and open watch streams end and resume from their
//!   resourceVersion on new connections. Raising it never blocks, so the lease client can raise
//!   it without ever waiting on the main client.
//! - **Deafness.** Each watcher records whether it hears: an event, a bookmark, the clean end a
//!   live server sends at the watch's timeout, or any reply from the server, errors and 429s
//!   included. A watch abandoned for silence, or a watch that cannot be dialed, starts a
//!   deafness clock that only hearing stops. A fresh watch that merely opened does not stop
//!   it: a stalled server opens watches and then sends nothing. The manager steps a leader
//!   down when a clock passes the `--deafness-timeout`.
//!
//! Slowness is not deafness: a throttled server still answers, and a LIST waiting in a queue
//! is neither a watch nor a dial, so neither starts a clock.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use event_listener::Event;

use crate::clock::Clock;
use crate::metrics::{self, Counter};

/// A second suspicion within this long of the last is not raised again: one restart of the
/// watches per incident, not one per request that timed out during it.
pub const SUSPICION_COOLDOWN: Duration = Duration::from_secs(5);

/// Shared by every clone, and by both clients of one replica.
#[derive(Clone, Default)]
pub struct Liveness {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    /// Incremented by each suspicion; a connection opened at an older epoch is suspect.
    epoch: AtomicU64,
    raised: Event,
    last_raised: Mutex<Option<Instant>>,
    watches: Mutex<BTreeMap<u64, WatchRecord>>,
    next_watch: AtomicU64,
    /// Where the suspicion cooldown reads the time.
    clock: Clock,
}

struct WatchRecord {
    what: String,
    deaf_since: Option<Instant>,
}

/// The longest-deaf watch: which one, and since when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deafness {
    pub watch: String,
    pub since: Instant,
}

impl Deafness {
    pub fn duration(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.since)
    }
}

impl fmt::Debug for Liveness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Liveness")
            .field("epoch", &self.epoch())
            .finish()
    }
}

impl Liveness {
    pub fn new() -> Liveness {
        Liveness::with_clock(Clock::real())
    }

    /// A liveness whose suspicion cooldown reads `clock`.
    pub fn with_clock(clock: Clock) -> Liveness {
        // Exported from the start, at zero, so alerts can rely on the series existing.
        suspicions();
        Liveness {
            shared: Arc::new(Shared {
                clock,
                ..Shared::default()
            }),
        }
    }

    /// The clock the suspicions, and the watches' silence, are timed on.
    pub fn clock(&self) -> &Clock {
        &self.shared.clock
    }

    /// The current suspicion epoch.
    pub fn epoch(&self) -> u64 {
        self.shared.epoch.load(Ordering::SeqCst)
    }

    /// Marks every connection opened so far as suspect, unless a suspicion was raised within
    /// [`SUSPICION_COOLDOWN`]. Never blocks. Returns whether it was raised.
    pub fn suspect(&self, why: &str) -> bool {
        self.suspect_at(self.shared.clock.now(), why)
    }

    fn suspect_at(&self, now: Instant, why: &str) -> bool {
        {
            let mut last = lock(&self.shared.last_raised);
            if last.is_some_and(|at| now.saturating_duration_since(at) < SUSPICION_COOLDOWN) {
                log::debug!("connection suspicion already raised recently; not again for: {why}");
                return false;
            }
            *last = Some(now);
        }
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
        self.shared.raised.notify(usize::MAX);
        suspicions().inc();
        log::info!(
            "connections to the API server are suspect ({why}): idle connections will be \
             redialed and watches resumed from their resourceVersions"
        );
        true
    }

    /// Resolves once a suspicion is raised after `epoch`.
    pub async fn suspected_after(&self, epoch: u64) {
        loop {
            if self.epoch() > epoch {
                return;
            }
            let listener = self.shared.raised.listen();
            if self.epoch() > epoch {
                return;
            }
            listener.await;
        }
    }

    /// Registers a watch (`what` names it in logs); dropping the handle unregisters it.
    pub fn register(&self, what: &str) -> WatchHealth {
        let id = self.shared.next_watch.fetch_add(1, Ordering::Relaxed);
        let record = WatchRecord {
            what: what.to_owned(),
            deaf_since: None,
        };
        lock(&self.shared.watches).insert(id, record);
        WatchHealth {
            liveness: self.clone(),
            id,
        }
    }

    /// The watch that has been deaf the longest, if any is.
    pub fn deafness(&self) -> Option<Deafness> {
        lock(&self.shared.watches)
            .values()
            .filter_map(|w| {
                w.deaf_since.map(|since| Deafness {
                    watch: w.what.clone(),
                    since,
                })
            })
            .min_by_key(|d| d.since)
    }

    /// `Err` naming the watch when one has been deaf longer than `bound` at `now`.
    pub fn check_hearing(&self, bound: Duration, now: Instant) -> Result<(), String> {
        match self.deafness() {
            Some(deaf) if deaf.duration(now) > bound => Err(format!(
                "the watch of {} has heard nothing from the API server for {:.1}s (no event, \
                 no bookmark, no reply; --deafness-timeout {:.0}s)",
                deaf.watch,
                deaf.duration(now).as_secs_f64(),
                bound.as_secs_f64()
            )),
            _ => Ok(()),
        }
    }

    fn update(&self, id: u64, change: impl FnOnce(&mut WatchRecord)) {
        if let Some(record) = lock(&self.shared.watches).get_mut(&id) {
            change(record);
        }
    }
}

/// One watcher's record of whether it hears.
pub struct WatchHealth {
    liveness: Liveness,
    id: u64,
}

impl WatchHealth {
    /// The server answered: an event, a bookmark, a clean end, a list, or an error reply.
    pub fn heard(&self) {
        self.liveness.update(self.id, |w| w.deaf_since = None);
    }

    /// The watch heard nothing since `since` (it was abandoned for silence, or could not be
    /// dialed). An earlier start of deafness is kept.
    pub fn silent_since(&self, since: Instant) {
        self.liveness.update(self.id, |w| {
            w.deaf_since.get_or_insert(since);
        });
    }

    /// The liveness this watch reports to.
    pub fn liveness(&self) -> &Liveness {
        &self.liveness
    }
}

impl Drop for WatchHealth {
    fn drop(&mut self) {
        lock(&self.liveness.shared.watches).remove(&self.id);
    }
}

fn suspicions() -> Counter {
    metrics::counter(
        "skiff_connection_suspicions_total",
        "Times the connections to the API server were marked suspect (a request got no reply \
         in time, or a watch went silent), so idle ones were redialed and watches resumed.",
        &[],
    )
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain records: still valid if a holder panicked.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{now_or_never, secs};

    #[test]
    fn a_suspicion_moves_the_epoch_once_per_cooldown() {
        let time = crate::clock::ManualClock::new();
        let liveness = Liveness::with_clock(time.clock());
        assert!(liveness.suspect("first"));
        assert_eq!(liveness.epoch(), 1);
        time.advance(SUSPICION_COOLDOWN - secs(1));
        assert!(!liveness.suspect("during the cooldown"));
        assert_eq!(liveness.epoch(), 1);
        time.advance(secs(1));
        assert!(liveness.suspect("after it"));
        assert_eq!(liveness.epoch(), 2);
    }

    #[test]
    fn waiters_wake_on_a_later_suspicion_only() {
        let liveness = Liveness::new();
        let epoch = liveness.epoch();
        let mut waiter = std::pin::pin!(liveness.suspected_after(epoch));
        assert_eq!(
            now_or_never(waiter.as_mut()),
            None,
            "woke without a suspicion"
        );
        liveness.suspect("test");
        assert_eq!(now_or_never(waiter), Some(()), "the waiter did not wake");
        // Already past: returns at once.
        assert_eq!(now_or_never(liveness.suspected_after(0)), Some(()));
    }

    #[test]
    fn deafness_starts_at_silence_and_only_hearing_ends_it() {
        let liveness = Liveness::new();
        let namespaces = liveness.register("Namespace");
        let mirrors = liveness.register("Mirror");
        let t0 = Instant::now();
        assert_eq!(liveness.deafness(), None);
        namespaces.silent_since(t0);
        namespaces.silent_since(t0 + secs(30));
        let deaf = liveness.deafness().expect("deaf");
        assert_eq!((deaf.watch.as_str(), deaf.since), ("Namespace", t0));
        assert!(liveness.check_hearing(secs(90), t0 + secs(90)).is_ok());
        let err = liveness.check_hearing(secs(90), t0 + secs(91)).unwrap_err();
        assert!(err.contains("Namespace") && err.contains("91.0s"), "{err}");
        mirrors.silent_since(t0 + secs(10));
        namespaces.heard();
        assert_eq!(liveness.deafness().map(|d| d.watch), Some("Mirror".into()));
        drop(mirrors);
        assert_eq!(liveness.deafness(), None, "a dropped watch is forgotten");
    }
}
