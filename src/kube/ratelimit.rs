//! TokenBucket: client-go's client-side rate limiter (QPS + burst), reservation based.
//!
//! Like `golang.org/x/time/rate`, every caller *reserves* the moment its token will exist and
//! then sleeps until that moment. Reservations are handed out under one lock in call order, so
//! waiters are served first come, first served, and a deadline can be checked before anything is
//! consumed. A wait that is cancelled (its future dropped) gives its token back. The time is
//! read, and waited for, on a [`Clock`]: the real one, or a manual one in tests.

use super::Error;
use crate::clock::Clock;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A token bucket holding at most `burst` tokens, refilled at `qps` tokens per second.
pub struct TokenBucket {
    state: Mutex<BucketState>,
    clock: Clock,
}

/// The bucket's arithmetic, kept free of waiting so each rule is tested directly.
#[derive(Debug)]
struct BucketState {
    /// Tokens per second; `None` when the rate is not positive, which means no client-side
    /// limit (as in client-go, which builds no rate limiter for QPS <= 0).
    qps: Option<f64>,
    burst: f64,
    /// Tokens at `updated`; negative while callers hold reservations for future tokens.
    tokens: f64,
    updated: Instant,
}

impl BucketState {
    fn new(qps: f32, burst: u32, now: Instant) -> BucketState {
        let qps = f64::from(qps);
        // A bucket that can never hold a token would block every caller forever.
        let burst = f64::from(burst.max(1));
        BucketState {
            qps: (qps.is_finite() && qps > 0.0).then_some(qps),
            burst,
            tokens: burst,
            updated: now,
        }
    }

    /// Adds the tokens refilled since the last update, capped at `burst`.
    fn advance(&mut self, now: Instant) {
        if now <= self.updated {
            return;
        }
        if let Some(qps) = self.qps {
            let elapsed = now.duration_since(self.updated).as_secs_f64();
            self.tokens = (self.tokens + elapsed * qps).min(self.burst);
        }
        self.updated = now;
    }

    /// Reserves one token and returns when it may be used, or `None` (consuming nothing) when
    /// that would be after `deadline`.
    fn reserve(&mut self, now: Instant, deadline: Option<Instant>) -> Option<Instant> {
        let Some(qps) = self.qps else {
            return Some(now);
        };
        self.advance(now);
        let after = self.tokens - 1.0;
        let ready_at = if after >= 0.0 {
            now
        } else {
            now + Duration::from_secs_f64(-after / qps)
        };
        if deadline.is_some_and(|deadline| ready_at > deadline) {
            return None;
        }
        self.tokens = after;
        Some(ready_at)
    }

    /// Gives back the token of a reservation that was not used.
    fn cancel(&mut self, now: Instant) {
        self.advance(now);
        self.tokens = (self.tokens + 1.0).min(self.burst);
    }

    /// Tokens available at `now` (negative when reservations are outstanding).
    fn available(&mut self, now: Instant) -> f64 {
        self.advance(now);
        self.tokens
    }
}

impl TokenBucket {
    /// A bucket that starts full at `burst` and refills at `qps` per second. A `qps` that is
    /// not positive means no limit; a `burst` of 0 is taken as 1.
    pub fn new(qps: f32, burst: u32) -> TokenBucket {
        TokenBucket::with_clock(qps, burst, Clock::real())
    }

    /// [`TokenBucket::new`] on `clock`.
    pub fn with_clock(qps: f32, burst: u32, clock: Clock) -> TokenBucket {
        let state = BucketState::new(qps, burst, clock.now());
        TokenBucket {
            state: Mutex::new(state),
            clock,
        }
    }

    /// Waits for a token, in arrival order.
    pub async fn acquire(&self) {
        // Without a deadline there is nothing to refuse.
        let _ = self.wait(None).await;
    }

    /// Waits for a token unless the wait would end after `deadline`; then fails at once and
    /// consumes nothing.
    pub async fn acquire_before(&self, deadline: Instant) -> Result<(), Error> {
        self.wait(Some(deadline)).await
    }

    /// Tokens available now; negative while callers wait. For tests and diagnostics.
    pub fn available(&self) -> f64 {
        let now = self.clock.now();
        self.lock().available(now)
    }

    async fn wait(&self, deadline: Option<Instant>) -> Result<(), Error> {
        let now = self.clock.now();
        let ready_at = self.lock().reserve(now, deadline);
        let Some(ready_at) = ready_at else {
            return Err(Error::Refused(
                "client rate limiter: waiting for a token would pass the request deadline".into(),
            ));
        };
        if ready_at <= now {
            return Ok(());
        }
        let reservation = Reservation {
            bucket: self,
            used: false,
        };
        self.clock.sleep_until(ready_at).await;
        reservation.complete();
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BucketState> {
        // The state is plain numbers, valid even if a holder panicked.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for TokenBucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenBucket")
            .field("state", &*self.lock())
            .finish()
    }
}

/// A reserved future token; dropping it before [`Reservation::complete`] gives it back.
struct Reservation<'a> {
    bucket: &'a TokenBucket,
    used: bool,
}

impl Reservation<'_> {
    fn complete(mut self) {
        self.used = true;
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.used {
            let now = self.bucket.clock.now();
            self.bucket.lock().cancel(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::testing::ms;
    use std::pin::pin;

    #[test]
    fn starts_full_at_burst_then_makes_callers_wait() {
        let t0 = Instant::now();
        let mut b = BucketState::new(10.0, 3, t0);
        for _ in 0..3 {
            assert_eq!(b.reserve(t0, None), Some(t0));
        }
        assert_eq!(b.reserve(t0, None), Some(t0 + ms(100)));
    }

    #[test]
    fn refills_at_qps() {
        let t0 = Instant::now();
        let mut b = BucketState::new(4.0, 1, t0);
        assert_eq!(b.reserve(t0, None), Some(t0));
        // One token every 250 ms.
        assert_eq!(b.reserve(t0 + ms(250), None), Some(t0 + ms(250)));
        assert_eq!(b.reserve(t0 + ms(300), None), Some(t0 + ms(500)));
    }

    #[test]
    fn refill_is_capped_at_burst() {
        let t0 = Instant::now();
        let mut b = BucketState::new(100.0, 2, t0);
        b.reserve(t0, None);
        b.reserve(t0, None);
        let later = t0 + Duration::from_secs(60);
        assert_eq!(b.available(later), 2.0);
        b.reserve(later, None);
        b.reserve(later, None);
        assert!(b.reserve(later, None).is_some_and(|at| at > later));
    }

    #[test]
    fn waiters_are_served_in_arrival_order() {
        let t0 = Instant::now();
        let mut b = BucketState::new(10.0, 1, t0);
        let slots: Vec<Instant> = (0..5).map(|_| b.reserve(t0, None).unwrap()).collect();
        for pair in slots.windows(2) {
            assert_eq!(pair[1] - pair[0], ms(100), "{slots:?}");
        }
    }

    #[test]
    fn deadline_refusal_consumes_nothing() {
        let t0 = Instant::now();
        let mut b = BucketState::new(10.0, 1, t0);
        b.reserve(t0, None);
        let before = b.available(t0);
        assert_eq!(b.reserve(t0, Some(t0 + ms(50))), None);
        assert_eq!(b.available(t0), before);
        assert_eq!(b.reserve(t0, Some(t0 + ms(100))), Some(t0 + ms(100)));
    }

    #[test]
    fn acquire_before_fails_at_once_naming_the_rate_limiter() {
        let clock = ManualClock::new();
        let bucket = TokenBucket::with_clock(1.0, 1, clock.clock());
        smol::block_on(bucket.acquire());
        let deadline = clock.now() + ms(10);
        let err = smol::block_on(bucket.acquire_before(deadline)).unwrap_err();
        assert!(
            matches!(&err, Error::Refused(m) if m.contains("rate limiter")),
            "{err}"
        );
        assert_eq!(bucket.available(), 0.0);
    }

    #[test]
    fn cancelled_wait_gives_its_token_back() {
        let clock = ManualClock::new();
        let bucket = TokenBucket::with_clock(1.0, 1, clock.clock());
        smol::block_on(bucket.acquire());
        {
            let mut wait = pin!(bucket.acquire());
            let polled = smol::block_on(smol::future::poll_once(wait.as_mut()));
            assert!(polled.is_none(), "must be waiting for a refill");
            assert_eq!(bucket.available(), -1.0);
        }
        assert_eq!(bucket.available(), 0.0);
        clock.advance(Duration::from_secs(1));
        assert_eq!(bucket.available(), 1.0);
    }

    #[test]
    fn non_positive_qps_means_no_client_side_limit() {
        let t0 = Instant::now();
        for qps in [0.0, -1.0, f32::NAN] {
            let mut b = BucketState::new(qps, 1, t0);
            for _ in 0..100 {
                assert_eq!(b.reserve(t0, Some(t0)), Some(t0), "qps {qps}");
            }
        }
    }

    #[test]
    fn zero_burst_still_lets_one_request_through_per_refill() {
        let t0 = Instant::now();
        let mut b = BucketState::new(10.0, 0, t0);
        assert_eq!(b.reserve(t0, None), Some(t0));
        assert_eq!(b.reserve(t0, None), Some(t0 + ms(100)));
    }
}
