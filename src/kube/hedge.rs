//! Hedged requests: when a request has no reply after a short delay, the same request is sent
//! again on a new connection, and the first success wins.
//!
//! Why: Lease requests take milliseconds. One that is still unanswered after a second is far
//! more likely sitting on a connection a load balancer silently dropped than waiting on a slow
//! server; waiting out its timeout would cost most of the renew deadline. Only requests that
//! are safe to repeat are hedged: a GET, and a PUT whose resourceVersion precondition makes a
//! second copy fail with 409 rather than write twice (the lock re-reads the Lease to tell a
//! lost race from its own first copy, see [`crate::leader::lock`]).

use super::Error;
use super::config::{Config, Credential};
use super::liveness::Liveness;
use super::pool::Pool;
use super::request::{Reply, RequestSpec, send_fresh, send_pooled};
use crate::clock::Sleep;
use http_types::Method;
use smol::future::or;
use std::future::Future;
use std::pin::pin;

/// Sends `spec` on a pooled connection; with `config.hedge_after` set, a GET or PUT still
/// unanswered after it is sent again on a new connection. A hedge that answers first raises a
/// suspicion: the pooled connection was silent while a new one answered.
pub async fn send(
    pool: &Pool,
    config: &Config,
    spec: &RequestSpec,
    credential: &Credential,
    liveness: &Liveness,
) -> Result<Reply, Error> {
    // Boxed, as the backup below: each attempt's future is several KiB, and held inline they
    // made the frame that polls a request about 76 KiB, touched by every request.
    let primary = Box::pin(send_pooled(pool, config, spec, credential));
    let delay = match config.hedge_after {
        Some(delay) if matches!(spec.method, Method::Get | Method::Put) => delay,
        _ => return primary.await,
    };
    let backup = Box::pin(send_fresh(pool, config, spec, credential));
    let hedge_at = liveness.clock().sleep(delay);
    let (result, winner) = hedged(primary, hedge_at, backup).await;
    if winner == Winner::Backup && result.is_ok() {
        liveness.suspect(&format!(
            "{} {} had no reply after {delay:?} on a pooled connection, while a new connection \
             answered",
            spec.method, spec.path
        ));
    }
    result
}

/// Which attempt produced the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Winner {
    Primary,
    /// The hedge: the primary had not answered within the delay.
    Backup,
}

/// Runs `primary`; if it has no result when `hedge_at` ends, runs `backup` beside it. Returns
/// the first success, else the error of whichever finished last. `backup` is not started (and
/// its connection not dialed) when `primary` finishes in time.
pub async fn hedged<T, E>(
    primary: impl Future<Output = Result<T, E>>,
    hedge_at: Sleep,
    backup: impl Future<Output = Result<T, E>>,
) -> (Result<T, E>, Winner) {
    let mut primary = pin!(primary);
    let early = or(async { Some(primary.as_mut().await) }, async {
        hedge_at.await;
        None
    })
    .await;
    if let Some(result) = early {
        return (result, Winner::Primary);
    }
    let mut backup = pin!(backup);
    let (first, winner) = or(async { (primary.as_mut().await, Winner::Primary) }, async {
        (backup.as_mut().await, Winner::Backup)
    })
    .await;
    match (first, winner) {
        (Ok(value), winner) => (Ok(value), winner),
        (Err(_), Winner::Primary) => (backup.await, Winner::Backup),
        (Err(_), Winner::Backup) => (primary.await, Winner::Primary),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::testing::ms;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    type Answer = Result<&'static str, &'static str>;

    async fn after(clock: &Clock, delay: Duration, result: Answer) -> Answer {
        clock.sleep(delay).await;
        result
    }

    /// Races a primary against a backup hedged after 20 ms, in virtual time; each is (how many
    /// milliseconds it takes to answer, its answer).
    fn race(
        (primary_ms, primary): (u64, Answer),
        (backup_ms, backup): (u64, Answer),
    ) -> (Answer, Winner) {
        let time = ManualClock::new();
        let clock = time.clock();
        let primary = after(&clock, ms(primary_ms), primary);
        let backup = after(&clock, ms(backup_ms), backup);
        time.run(hedged(primary, clock.sleep(ms(20)), backup))
    }

    #[test]
    fn a_prompt_primary_never_starts_the_backup() {
        let time = ManualClock::new();
        let clock = time.clock();
        let started = AtomicBool::new(false);
        let backup = async {
            started.store(true, Ordering::SeqCst);
            Ok("backup")
        };
        let primary = after(&clock, ms(199), Ok("primary"));
        let result = time.run(hedged(primary, clock.sleep(ms(200)), backup));
        assert_eq!(result, (Ok("primary"), Winner::Primary));
        assert!(!started.load(Ordering::SeqCst));
    }

    #[test]
    fn a_silent_primary_is_overtaken_by_the_backup() {
        let time = ManualClock::new();
        let clock = time.clock();
        let primary = smol::future::pending::<Result<&str, &str>>();
        let backup = after(&clock, ms(1), Ok("backup"));
        let result = time.run(hedged(primary, clock.sleep(ms(10)), backup));
        assert_eq!(result, (Ok("backup"), Winner::Backup));
        assert_eq!(
            time.elapsed(),
            ms(11),
            "hedged at 10 ms, answered 1 ms later"
        );
    }

    #[test]
    fn a_late_primary_still_wins_if_it_answers_first() {
        let result = race((300, Ok("primary")), (900, Ok("backup")));
        assert_eq!(result, (Ok("primary"), Winner::Primary));
    }

    #[test]
    fn a_failure_waits_for_the_other_attempt() {
        let result = race((300, Err("primary failed")), (600, Ok("backup")));
        assert_eq!(result, (Ok("backup"), Winner::Backup));
        let result = race((600, Ok("primary")), (1, Err("backup failed")));
        assert_eq!(result, (Ok("primary"), Winner::Primary));
        let result = race((300, Err("primary failed")), (1, Err("backup failed")));
        assert_eq!(result, (Err("primary failed"), Winner::Primary));
    }
}
