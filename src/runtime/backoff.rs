//! Backoff: how long to wait before trying again, for the watcher and for work-queue keys.
//!
//! Two policies, both from the Kubernetes Go libraries so skiff behaves as operators expect:
//! the watcher's jittered exponential backoff (client-go's reflector), and the work queue's
//! per-key exponential failure delay (controller-runtime's default rate limiter).

use std::time::Duration;

use crate::random::{self, Rng};

/// First retry delay of the watcher: 800 ms, client-go reflector's backoff manager.
pub const WATCH_BACKOFF_INITIAL: Duration = Duration::from_millis(800);
/// Longest nominal watcher retry delay: 30 s, client-go reflector's backoff manager.
pub const WATCH_BACKOFF_MAX: Duration = Duration::from_secs(30);
/// First per-key retry delay: 5 ms, controller-runtime's `ItemExponentialFailureRateLimiter`.
pub const ITEM_BACKOFF_BASE: Duration = Duration::from_millis(5);
/// Longest per-key retry delay: 1000 s, controller-runtime's `ItemExponentialFailureRateLimiter`.
pub const ITEM_BACKOFF_MAX: Duration = Duration::from_secs(1000);

/// The delay before retrying a work-queue key that has failed `failures` times before:
/// 5 ms doubling per failure, capped at 1000 s.
pub fn item_backoff(failures: u32) -> Duration {
    exponential(ITEM_BACKOFF_BASE, ITEM_BACKOFF_MAX, failures)
}

/// `base × 2^exponent`, capped at `max`, without overflowing.
fn exponential(base: Duration, max: Duration, exponent: u32) -> Duration {
    let factor = 2u32.checked_pow(exponent.min(31)).unwrap_or(u32::MAX);
    base.checked_mul(factor).map_or(max, |d| d.min(max))
}

/// Exponential backoff with jitter: the n-th consecutive failure waits
/// `min(max, initial × 2^(n-1)) × (1 + u)` with `u` uniform in `[0, 1)` (client-go's jitter 1.0).
/// `reset` after a success starts over.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    failures: u32,
    jitter: Rng,
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial,
            max,
            failures: 0,
            jitter: random::rng(),
        }
    }

    /// Records one more failure and returns how long to wait before the next attempt.
    pub fn next_delay(&mut self) -> Duration {
        let nominal = exponential(self.initial, self.max, self.failures);
        self.failures = self.failures.saturating_add(1);
        random::jitter(nominal, 1.0, &mut self.jitter)
    }

    /// Forgets past failures, after a success.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// Failures since the last success.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

impl Default for Backoff {
    /// The watcher's policy: 800 ms doubling to 30 s, with jitter.
    fn default() -> Backoff {
        Backoff::new(WATCH_BACKOFF_INITIAL, WATCH_BACKOFF_MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_backoff_starts_at_5ms_doubles_and_caps_at_1000s() {
        assert_eq!(item_backoff(0), Duration::from_millis(5));
        assert_eq!(item_backoff(1), Duration::from_millis(10));
        assert_eq!(item_backoff(10), Duration::from_millis(5 * 1024));
        assert_eq!(item_backoff(17), Duration::from_millis(5 << 17));
        assert_eq!(item_backoff(18), ITEM_BACKOFF_MAX);
        assert_eq!(item_backoff(u32::MAX), ITEM_BACKOFF_MAX);
    }

    #[test]
    fn backoff_grows_within_jitter_bounds_and_resets() {
        let ms = Duration::from_millis;
        let mut b = Backoff::new(ms(100), ms(1000));
        let bounds = [
            (100, 200),
            (200, 400),
            (400, 800),
            (800, 1600),
            (1000, 2000),
        ];
        for (low, high) in bounds {
            let d = b.next_delay();
            assert!(
                d >= ms(low) && d < ms(high),
                "{d:?} not in [{low}, {high}) ms"
            );
        }
        assert_eq!(b.failures(), 5);
        b.reset();
        assert_eq!(b.failures(), 0);
        assert!(b.next_delay() < ms(200));
    }

    #[test]
    fn backoffs_made_together_jitter_apart() {
        let ms = Duration::from_millis;
        let (mut a, mut b) = (
            Backoff::new(ms(100), ms(1000)),
            Backoff::new(ms(100), ms(1000)),
        );
        assert_ne!(a.next_delay(), b.next_delay());
    }
}
