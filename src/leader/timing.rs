//! The three leader-election durations and the rules that keep them consistent.
//!
//! Validated once at start so a bad combination is an error naming the flag, not a replica
//! that loses its lease under normal load.

use std::fmt;
use std::time::Duration;

use crate::duration::format_duration;

/// LEASE_DURATION: 15 s, client-go's (and controller-runtime's) default.
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
/// RENEW_DEADLINE: 10 s, client-go's default.
pub const RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// RETRY_PERIOD: 2 s, client-go's default.
pub const RETRY_PERIOD: Duration = Duration::from_secs(2);
/// JITTER_FACTOR: 1.2, client-go's `JitterFactor` for the acquire loop (wait.JitterUntil).
pub const JITTER_FACTOR: f64 = 1.2;

pub const LEASE_DURATION_FLAG: &str = "--leader-elect-lease-duration";
pub const RENEW_DEADLINE_FLAG: &str = "--leader-elect-renew-deadline";
pub const RETRY_PERIOD_FLAG: &str = "--leader-elect-retry-period";

/// How long a lease lasts, how long a leader keeps trying to renew, how often anyone tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

/// A timing combination that cannot work: the flag to change, and a message naming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidTiming {
    pub flag: &'static str,
    pub message: String,
}

impl fmt::Display for InvalidTiming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for InvalidTiming {}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            lease_duration: LEASE_DURATION,
            renew_deadline: RENEW_DEADLINE,
            retry_period: RETRY_PERIOD,
        }
    }
}

impl Timing {
    /// Checks lease > renew > 1.2 × retry > 0, as client-go's `NewLeaderElector` does.
    pub fn new(
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    ) -> Result<Timing, InvalidTiming> {
        let timing = Timing {
            lease_duration,
            renew_deadline,
            retry_period,
        };
        timing.validate()?;
        Ok(timing)
    }

    pub fn validate(&self) -> Result<(), InvalidTiming> {
        let show = format_duration;
        let invalid = |flag, message| Err(InvalidTiming { flag, message });
        if self.retry_period.is_zero() {
            return invalid(
                RETRY_PERIOD_FLAG,
                format!("{RETRY_PERIOD_FLAG} must be greater than 0 (e.g. 2s)"),
            );
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return invalid(
                RENEW_DEADLINE_FLAG,
                format!(
                    "{RENEW_DEADLINE_FLAG} ({}) must be longer than {JITTER_FACTOR} × \
                     {RETRY_PERIOD_FLAG} ({}), so a renewal can be retried before the deadline",
                    show(self.renew_deadline),
                    show(self.retry_period)
                ),
            );
        }
        if self.renew_deadline >= self.lease_duration {
            return invalid(
                RENEW_DEADLINE_FLAG,
                format!(
                    "{RENEW_DEADLINE_FLAG} ({}) must be shorter than {LEASE_DURATION_FLAG} ({}), \
                     so the leader stops before another may take over",
                    show(self.renew_deadline),
                    show(self.lease_duration)
                ),
            );
        }
        if self.lease_duration_seconds().is_none() {
            return invalid(
                LEASE_DURATION_FLAG,
                format!(
                    "{LEASE_DURATION_FLAG} ({}) is too long for a Lease's leaseDurationSeconds",
                    show(self.lease_duration)
                ),
            );
        }
        Ok(())
    }

    /// `leaseDurationSeconds` to write: the lease duration rounded *up* to whole seconds, so other
    /// replicas never judge our lease expired earlier than we promised.
    pub fn lease_duration_seconds(&self) -> Option<i32> {
        let whole =
            self.lease_duration.as_secs() + u64::from(self.lease_duration.subsec_nanos() > 0);
        i32::try_from(whole.max(1)).ok()
    }

    /// RELEASE_TIMEOUT: one retry period, fresh from the moment release starts. A release that
    /// cannot finish in time is harmless: the lease then simply expires.
    pub fn release_timeout(&self) -> Duration {
        self.retry_period
    }

    /// A lease request unanswered this long is sent again on a new connection: half the retry
    /// period, at most 1 s. Lease requests take milliseconds, so one still silent after a
    /// second is most likely on a dead connection; the renewal then lands within about the
    /// retry period + 1 s of the last one instead of waiting out a timeout.
    pub fn hedge_after(&self) -> Duration {
        (self.retry_period / 2).min(MAX_HEDGE_AFTER)
    }
}

/// The longest [`Timing::hedge_after`].
pub const MAX_HEDGE_AFTER: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ms;

    #[test]
    fn lease_requests_are_hedged_after_half_the_retry_period_at_most_a_second() {
        assert_eq!(Timing::default().hedge_after(), ms(1000));
        let short = Timing::new(ms(4000), ms(3000), ms(1000)).unwrap();
        assert_eq!(short.hedge_after(), ms(500));
    }

    #[test]
    fn client_go_defaults_are_valid() {
        assert_eq!(Timing::default().validate(), Ok(()));
        assert_eq!(Timing::default().lease_duration_seconds(), Some(15));
    }

    #[test]
    fn lease_not_longer_than_renew_deadline_names_both_flags() {
        let err = Timing::new(ms(10_000), ms(10_000), ms(2_000)).unwrap_err();
        assert!(err.message.contains(LEASE_DURATION_FLAG), "{err}");
        assert!(err.message.contains(RENEW_DEADLINE_FLAG), "{err}");
    }

    #[test]
    fn renew_deadline_within_jittered_retry_names_both_flags() {
        let err = Timing::new(ms(15_000), ms(2_400), ms(2_000)).unwrap_err();
        assert!(err.message.contains(RENEW_DEADLINE_FLAG), "{err}");
        assert!(err.message.contains(RETRY_PERIOD_FLAG), "{err}");
        assert!(Timing::new(ms(15_000), ms(2_401), ms(2_000)).is_ok());
    }

    #[test]
    fn zero_retry_period_is_rejected() {
        let err = Timing::new(ms(15_000), ms(10_000), ms(0)).unwrap_err();
        assert!(err.message.contains(RETRY_PERIOD_FLAG), "{err}");
    }

    #[test]
    fn lease_duration_seconds_rounds_up() {
        let t = Timing::new(ms(300), ms(200), ms(50)).unwrap();
        assert_eq!(t.lease_duration_seconds(), Some(1));
        let t = Timing::new(ms(15_001), ms(200), ms(50)).unwrap();
        assert_eq!(t.lease_duration_seconds(), Some(16));
    }
}
