//! `--watch-idle-timeout` and `--deafness-timeout`: when a watch counts as silent, and how long
//! the controllers may hear nothing before the leader steps down and `/healthz` fails.

use std::time::Duration;

use super::FlagError;
use crate::duration::format_duration;

/// A watch that hears nothing this long is resumed on a new connection
/// (`kube::config::DEFAULT_WATCH_IDLE_TIMEOUT`: the server ends every watch before it).
pub const DEFAULT_WATCH_IDLE_TIMEOUT: Duration = crate::kube::config::DEFAULT_WATCH_IDLE_TIMEOUT;
/// Deaf this long, a leader steps down: the idle timeout that found a watch silent, plus 20 s
/// in which the watch resumed on a new connection was not heard either.
pub const DEFAULT_DEAFNESS_TIMEOUT: Duration = Duration::from_secs(90);

/// The validated pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hearing {
    pub watch_idle_timeout: Duration,
    /// `None` when `--deafness-timeout=0`: deafness is logged and watches resumed, but the
    /// leader never steps down for it and `/healthz` ignores it.
    pub deafness_timeout: Option<Duration>,
}

pub fn hearing(
    watch_idle_timeout: Duration,
    deafness_timeout: Duration,
) -> Result<Hearing, FlagError> {
    if watch_idle_timeout < Duration::from_secs(2) {
        return Err(FlagError::Invalid {
            flag: "--watch-idle-timeout",
            message: format!(
                "--watch-idle-timeout ({}) must be at least 2s: each watch asks the server to end \
                 it within 80 % of it, in whole seconds; 1m10s is the default",
                format_duration(watch_idle_timeout)
            ),
        });
    }
    if !deafness_timeout.is_zero() && deafness_timeout < watch_idle_timeout {
        return Err(FlagError::Invalid {
            flag: "--deafness-timeout",
            message: format!(
                "--deafness-timeout ({}) must be at least --watch-idle-timeout ({}): a watch is \
                 only known to be silent after that; 0 turns stepping down for deafness off",
                format_duration(deafness_timeout),
                format_duration(watch_idle_timeout)
            ),
        });
    }
    Ok(Hearing {
        watch_idle_timeout,
        deafness_timeout: (!deafness_timeout.is_zero()).then_some(deafness_timeout),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::secs;

    #[test]
    fn deafness_must_outlast_the_watch_idle_timeout_or_be_off() {
        let ok = hearing(secs(70), secs(90)).expect("defaults");
        assert_eq!(ok.deafness_timeout, Some(secs(90)));
        assert_eq!(
            hearing(secs(70), secs(0)).expect("off").deafness_timeout,
            None
        );
        let Err(FlagError::Invalid { flag, message }) = hearing(secs(70), secs(30)) else {
            panic!("30s < 70s was accepted");
        };
        assert_eq!(flag, "--deafness-timeout");
        assert!(
            message.contains("--watch-idle-timeout (1m10s)"),
            "{message}"
        );
        let Err(FlagError::Invalid { flag, .. }) = hearing(Duration::from_millis(1500), secs(0))
        else {
            panic!("1500ms was accepted");
        };
        assert_eq!(flag, "--watch-idle-timeout");
    }
}
