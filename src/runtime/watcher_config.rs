//! What a watcher watches and how patiently: its selectors and page size, its watch timeout and
//! backoff, the clock it waits on, how far a relist after 410 Gone is spread, and what cuts a
//! backoff short.

use std::time::Duration;

use super::backoff::{WATCH_BACKOFF_INITIAL, WATCH_BACKOFF_MAX};
use super::recovery::Recovery;
use crate::clock::Clock;
use crate::kube::Selectors;
use crate::kube::client::DEFAULT_PAGE_SIZE;

/// Server-side watch timeout before jitter (+ up to [`WATCH_TIMEOUT_JITTER`]): 45 s, so 45 to
/// 54 s. The server's clean end of a watch is
/// its one heartbeat that is sure to come: kube-apiserver sends a bookmark every minute only
/// while the resource version moves, so a watch of a quiet resource may otherwise hear nothing
/// for minutes, and its connection's silence (`--watch-idle-timeout`, 70 s) would mean
/// nothing. The cost is one watch request per watch per minute (kube-runtime's 290 s: one per
/// five minutes).
pub const WATCH_TIMEOUT: Duration = Duration::from_secs(45);
/// What to watch and how patiently. Only policy: each watcher keeps its own backoff state and
/// random jitter, so watchers made from one config never retry in lockstep.
#[derive(Debug, Clone)]
pub struct WatcherConfig {
    pub selectors: Selectors,
    /// Items per LIST page: the most decoded objects a relist holds at once.
    pub page_size: u32,
    pub watch_timeout: Duration,
    /// First retry delay after a failure, doubling up to `backoff_max` (both jittered).
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
    /// Where the backoff is waited out and a watch's age and silence are measured.
    pub clock: Clock,
    /// A relist after 410 Gone waits a uniform random delay up to this long: many clients of
    /// one server (a hub's members, after its API server restarted and its watch cache began
    /// anew) then relist spread over it, not at once. Zero: the usual backoff.
    pub relist_spread: Duration,
    /// The watched server's [`Recovery`]: once it answers again after failing, a retry waiting
    /// out its backoff comes after a uniform random part of `recovery_spread` instead, if that
    /// is sooner. `None`: the backoff alone.
    pub recovery: Option<Recovery>,
    pub recovery_spread: Duration,
}

impl Default for WatcherConfig {
    fn default() -> Self {
        WatcherConfig {
            selectors: Selectors::default(),
            page_size: DEFAULT_PAGE_SIZE,
            watch_timeout: WATCH_TIMEOUT,
            backoff_initial: WATCH_BACKOFF_INITIAL,
            backoff_max: WATCH_BACKOFF_MAX,
            clock: Clock::real(),
            relist_spread: Duration::ZERO,
            recovery: None,
            recovery_spread: Duration::ZERO,
        }
    }
}

impl WatcherConfig {
    pub fn labels(mut self, selector: &str) -> Self {
        self.selectors.labels = Some(selector.to_owned());
        self
    }

    pub fn fields(mut self, selector: &str) -> Self {
        self.selectors.fields = Some(selector.to_owned());
        self
    }
}
