//! Backoff: how long to wait before trying again, for the watcher and for work-queue keys.
//!
//! Two policies, both from the Kubernetes Go libraries so skiff behaves as operators expect:
//! the watcher's jittered exponential backoff (client-go's reflector), and the work queue's
//! per-key exponential failure delay (controller-runtime's default rate limiter). The jitter
//! comes from a tiny PRNG seeded from the clock; it spreads retries, it is not cryptography.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
    jitter: Jitter,
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial,
            max,
            failures: 0,
            jitter: Jitter::from_clock(),
        }
    }

    /// Records one more failure and returns how long to wait before the next attempt.
    pub fn next_delay(&mut self) -> Duration {
        let nominal = exponential(self.initial, self.max, self.failures);
        self.failures = self.failures.saturating_add(1);
        nominal.mul_f64(1.0 + self.jitter.next_unit())
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

/// A small splitmix64 generator for spreading retries and timeouts.
#[derive(Debug, Clone)]
pub struct Jitter(u64);

impl Jitter {
    /// A generator seeded from the wall clock and a process-wide counter, so two generators
    /// created in the same instant still differ.
    pub fn from_clock() -> Jitter {
        static CREATED: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let count = CREATED.fetch_add(1, Ordering::Relaxed);
        Jitter(nanos ^ count.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    pub fn seeded(seed: u64) -> Jitter {
        Jitter(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
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
    fn jitter_is_spread_over_the_unit_interval() {
        let mut j = Jitter::seeded(7);
        let samples: Vec<f64> = (0..1000).map(|_| j.next_unit()).collect();
        assert!(samples.iter().all(|u| (0.0..1.0).contains(u)));
        let low = samples.iter().filter(|u| **u < 0.5).count();
        assert!((400..600).contains(&low), "{low} of 1000 below 0.5");
    }

    #[test]
    fn generators_created_together_differ() {
        assert_ne!(
            Jitter::from_clock().next_u64(),
            Jitter::from_clock().next_u64()
        );
    }
}
