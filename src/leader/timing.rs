//! The three leader-election durations and the rules that keep them consistent.
//!
//! Validated once at start so a bad combination is an error naming the flag, not a replica
//! that loses its lease under normal load.

use std::fmt;
use std::time::Duration;

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

/// A timing combination that cannot work; the message names the flags to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidTiming(pub String);

impl fmt::Display for InvalidTiming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid leader-election timing: {}", self.0)
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
        if self.retry_period.is_zero() {
            return Err(InvalidTiming(format!(
                "{RETRY_PERIOD_FLAG} must be greater than 0"
            )));
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return Err(InvalidTiming(format!(
                "{RENEW_DEADLINE_FLAG} ({:?}) must be greater than {JITTER_FACTOR} × \
                 {RETRY_PERIOD_FLAG} ({:?}); lower the retry period or raise the renew deadline",
                self.renew_deadline, self.retry_period
            )));
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(InvalidTiming(format!(
                "{LEASE_DURATION_FLAG} ({:?}) must be greater than {RENEW_DEADLINE_FLAG} ({:?}); \
                 otherwise another replica may take the lease while this one still acts as leader",
                self.lease_duration, self.renew_deadline
            )));
        }
        if self.lease_duration_seconds().is_none() {
            return Err(InvalidTiming(format!(
                "{LEASE_DURATION_FLAG} ({:?}) is too long for a Lease's leaseDurationSeconds",
                self.lease_duration
            )));
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn client_go_defaults_are_valid() {
        assert_eq!(Timing::default().validate(), Ok(()));
        assert_eq!(Timing::default().lease_duration_seconds(), Some(15));
    }

    #[test]
    fn lease_not_longer_than_renew_deadline_names_both_flags() {
        let err = Timing::new(ms(10_000), ms(10_000), ms(2_000)).unwrap_err();
        assert!(err.0.contains(LEASE_DURATION_FLAG), "{err}");
        assert!(err.0.contains(RENEW_DEADLINE_FLAG), "{err}");
    }

    #[test]
    fn renew_deadline_within_jittered_retry_names_both_flags() {
        let err = Timing::new(ms(15_000), ms(2_400), ms(2_000)).unwrap_err();
        assert!(err.0.contains(RENEW_DEADLINE_FLAG), "{err}");
        assert!(err.0.contains(RETRY_PERIOD_FLAG), "{err}");
        assert!(Timing::new(ms(15_000), ms(2_401), ms(2_000)).is_ok());
    }

    #[test]
    fn zero_retry_period_is_rejected() {
        let err = Timing::new(ms(15_000), ms(10_000), ms(0)).unwrap_err();
        assert!(err.0.contains(RETRY_PERIOD_FLAG), "{err}");
    }

    #[test]
    fn lease_duration_seconds_rounds_up() {
        let t = Timing::new(ms(300), ms(200), ms(50)).unwrap();
        assert_eq!(t.lease_duration_seconds(), Some(1));
        let t = Timing::new(ms(15_001), ms(200), ms(50)).unwrap();
        assert_eq!(t.lease_duration_seconds(), Some(16));
    }
}
