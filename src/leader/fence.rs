//! The Fence: the main client may write only while this replica's lease is provably its own.
//!
//! Shared, lock-free state: the monotonic time of the last successful renewal and a `leading`
//! flag. Every mutating request checks it *by time*, read on the elector's clock, so the fence
//! closes at last renew + renew deadline even if the elector task is stuck or starved.

use super::timing::Timing;
use crate::clock::Clock;
use crate::kube::{Error, WriteGuard};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// HEALTH_GRACE: 20 s beyond the lease duration before `/healthz` fails: long enough that a
/// renewal merely late (a slow API server) never restarts a leader.
pub const HEALTH_GRACE: Duration = Duration::from_secs(20);

/// What runs when the fence closes (e.g. resetting the connections with writes in flight).
pub type OnClose = Box<dyn Fn() + Send + Sync>;

/// Cheap to clone; all clones share one state.
#[derive(Clone)]
pub struct Fence {
    state: Arc<State>,
}

impl std::fmt::Debug for Fence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fence")
            .field("leading", &self.is_leading())
            .field("last_renew", &self.last_renew())
            .finish()
    }
}

struct State {
    /// Origin for `last_renew_nanos`: atomics hold integers, not `Instant`s.
    origin: Instant,
    last_renew_nanos: AtomicU64,
    leading: AtomicBool,
    renew_deadline: Duration,
    lease_duration: Duration,
    on_close: Mutex<Vec<OnClose>>,
    /// Where [`WriteGuard::check`] reads the time.
    clock: Clock,
}

impl Fence {
    /// A closed fence (not leading) that reads the time on `clock`.
    pub fn new(timing: &Timing, clock: Clock) -> Fence {
        Fence {
            state: Arc::new(State {
                origin: clock.now(),
                last_renew_nanos: AtomicU64::new(0),
                leading: AtomicBool::new(false),
                renew_deadline: timing.renew_deadline,
                lease_duration: timing.lease_duration,
                on_close: Mutex::new(Vec::new()),
                clock,
            }),
        }
    }

    /// Records a successful acquire or renewal whose request was sent at `sent_at`, and opens
    /// the fence. Measuring from the send time is conservative: the server stamped the lease
    /// no earlier than that.
    pub fn renewed(&self, sent_at: Instant) {
        let nanos = sent_at
            .saturating_duration_since(self.state.origin)
            .as_nanos();
        self.state
            .last_renew_nanos
            .fetch_max(u64::try_from(nanos).unwrap_or(u64::MAX), Ordering::SeqCst);
        self.state.leading.store(true, Ordering::SeqCst);
    }

    /// Closes the fence at once (leadership lost, being released, or stepped down from), and
    /// runs the [`Fence::on_close`] hooks if it was open.
    pub fn close(&self) {
        if self.state.leading.swap(false, Ordering::SeqCst) {
            let hooks = self
                .state
                .on_close
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            for hook in hooks.iter() {
                hook();
            }
        }
    }

    /// Runs `hook` each time an open fence closes.
    pub fn on_close(&self, hook: OnClose) {
        let mut hooks = self
            .state
            .on_close
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        hooks.push(hook);
    }

    pub fn is_leading(&self) -> bool {
        self.state.leading.load(Ordering::SeqCst)
    }

    /// The monotonic time of the last successful renewal, if we ever led.
    pub fn last_renew(&self) -> Option<Instant> {
        let nanos = self.state.last_renew_nanos.load(Ordering::SeqCst);
        (self.is_leading() || nanos > 0).then(|| self.state.origin + Duration::from_nanos(nanos))
    }

    /// When the current leadership ends unless renewed: last renew + renew deadline.
    pub fn deadline(&self) -> Option<Instant> {
        self.last_renew().map(|at| at + self.state.renew_deadline)
    }

    /// The write check with an explicit `now`. Reads (GET, HEAD) always pass.
    pub fn check_at(&self, now: Instant, method: &str, path: &str) -> Result<(), Error> {
        if method.eq_ignore_ascii_case("GET") || method.eq_ignore_ascii_case("HEAD") {
            return Ok(());
        }
        if !self.is_leading() {
            return Err(Error::Refused(format!(
                "not the leader (leader election lost or not yet won); refusing {method} {path}"
            )));
        }
        let since = now.saturating_duration_since(self.last_renew().unwrap_or(self.state.origin));
        if since > self.state.renew_deadline {
            return Err(Error::Refused(format!(
                "leader election lost: the last successful lease renewal was {:.1}s ago, past the \
                 renew deadline {:.1}s; refusing {method} {path}",
                since.as_secs_f64(),
                self.state.renew_deadline.as_secs_f64()
            )));
        }
        Ok(())
    }

    /// The liveness check: fails while leading when the last successful renewal is older than
    /// the lease duration + [`HEALTH_GRACE`]. A standby is always healthy.
    pub fn healthy(&self, now: Instant) -> Result<(), String> {
        let Some(last) = self.last_renew().filter(|_| self.is_leading()) else {
            return Ok(());
        };
        let since = now.saturating_duration_since(last);
        let limit = self.state.lease_duration + HEALTH_GRACE;
        if since > limit {
            return Err(format!(
                "leading, but the last successful lease renewal was {:.1}s ago (limit {:.1}s)",
                since.as_secs_f64(),
                limit.as_secs_f64()
            ));
        }
        Ok(())
    }
}

impl WriteGuard for Fence {
    fn check(&self, method: &str, path: &str) -> Result<(), Error> {
        self.check_at(self.state.clock.now(), method, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "/api/v1/namespaces/a/configmaps";

    fn fence() -> Fence {
        Fence::new(&Timing::default(), Clock::real())
    }

    fn refusal(result: Result<(), Error>) -> String {
        match result {
            Err(Error::Refused(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn refuses_writes_before_leading() {
        let f = fence();
        let msg = refusal(f.check_at(Instant::now(), "POST", PATH));
        assert!(
            msg.contains("not the leader") && msg.contains("POST"),
            "{msg}"
        );
        assert_eq!(f.check_at(Instant::now(), "GET", PATH), Ok(()));
    }

    #[test]
    fn allows_writes_until_the_renew_deadline_then_refuses_by_time_alone() {
        let f = fence();
        let t0 = Instant::now();
        f.renewed(t0);
        assert_eq!(
            f.check_at(t0 + Duration::from_secs(10), "PUT", PATH),
            Ok(())
        );
        let msg = refusal(f.check_at(t0 + Duration::from_millis(10_500), "DELETE", PATH));
        assert!(msg.starts_with("leader election lost"), "{msg}");
        assert!(
            msg.contains("10.5s ago") && msg.contains("renew deadline 10.0s"),
            "{msg}"
        );
        assert!(
            msg.contains("DELETE /api/v1/namespaces/a/configmaps"),
            "{msg}"
        );
        assert!(
            f.is_leading(),
            "the fence closes by time, with no one calling close()"
        );
    }

    /// What the main client's transport calls: the same refusal, at the time on the clock.
    #[test]
    fn the_write_guard_reads_the_fences_clock() {
        let manual = crate::clock::ManualClock::new();
        let f = Fence::new(&Timing::default(), manual.clock());
        f.renewed(manual.now());
        manual.advance(Duration::from_secs(10));
        assert_eq!(f.check("POST", PATH), Ok(()));
        manual.advance(Duration::from_millis(1));
        let msg = refusal(f.check("POST", PATH));
        assert!(msg.contains("10.0s ago"), "{msg}");
    }

    #[test]
    fn a_later_renewal_reopens_and_an_older_one_never_moves_back() {
        let f = fence();
        let t0 = Instant::now();
        f.renewed(t0 + Duration::from_secs(5));
        f.renewed(t0);
        assert_eq!(f.deadline(), Some(t0 + Duration::from_secs(15)));
        assert_eq!(
            f.check_at(t0 + Duration::from_secs(14), "PATCH", PATH),
            Ok(())
        );
    }

    #[test]
    fn close_refuses_at_once() {
        let f = fence();
        let t0 = Instant::now();
        f.renewed(t0);
        f.clone().close();
        refusal(f.check_at(t0, "POST", PATH));
    }

    #[test]
    fn closing_an_open_fence_runs_the_hooks_once() {
        let f = fence();
        let runs = Arc::new(AtomicU64::new(0));
        let counter = runs.clone();
        f.on_close(Box::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        }));
        f.close();
        assert_eq!(runs.load(Ordering::SeqCst), 0, "a fence that was not open");
        f.renewed(Instant::now());
        f.close();
        f.close();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn health_fails_only_while_leading_past_lease_duration_plus_grace() {
        let f = fence();
        let t0 = Instant::now();
        assert_eq!(f.healthy(t0 + Duration::from_secs(3600)), Ok(()));
        f.renewed(t0);
        assert_eq!(f.healthy(t0 + Duration::from_secs(35)), Ok(()));
        let err = f.healthy(t0 + Duration::from_secs(36)).unwrap_err();
        assert!(
            err.contains("36.0s ago") && err.contains("limit 35.0s"),
            "{err}"
        );
        f.close();
        assert_eq!(f.healthy(t0 + Duration::from_secs(36)), Ok(()));
    }
}
