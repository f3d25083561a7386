//! What the unit tests share, so each test module reads the same way.

use std::time::Duration;

/// `n` milliseconds: timings in tests read as `ms(250)`.
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `n` seconds, as [`ms`] for longer timings.
pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}
