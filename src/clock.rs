//! Where every timer and deadline skiff decides on reads the time: the process's monotonic
//! clock in the binary, a [`ManualClock`] that tests move by hand.
//!
//! Why: the lease loop, the renew deadline, the backoffs and the deafness timers are logic, and a
//! test of logic must not depend on how fast the machine runs it. A test that checks "renews
//! once per retry period" moves the clock one retry period and counts, as client-go's
//! leader-election tests do with their fake clock and tokio's with paused time; it never
//! sleeps and hopes.
//!
//! A [`Clock`] is cheap to clone (a null pointer on the real path) and costs one branch per
//! reading. Its instants are `std::time::Instant`s, so everything that stores or compares them
//! stays as it is; only where the time is read and where a task waits for it goes through here.
//! Wall-clock timestamps for the wire (a Lease's renewTime) are not decisions and stay with
//! [`crate::time`].

mod manual;

pub use manual::ManualClock;

use crate::deadline::Timeout;
use manual::{Manual, Wait};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// How long real IO may take under a manual clock: the manual clock does not move while a
/// request is on the wire, so a request's deadline on it says nothing about real time, and
/// the real bound is only there so a hung test fails.
pub const MANUAL_IO_LIVENESS: Duration = Duration::from_secs(60);

/// The time, and waiting for it. `Clock::default()` is the real one.
#[derive(Clone, Default)]
pub struct Clock {
    /// `None`: the process's monotonic clock.
    manual: Option<Arc<Manual>>,
}

impl Clock {
    /// The process's monotonic clock, with smol's timers.
    pub fn real() -> Clock {
        Clock::default()
    }

    pub fn now(&self) -> Instant {
        match &self.manual {
            None => Instant::now(),
            Some(manual) => manual.now(),
        }
    }

    /// Resolves once the clock reads `at` or later.
    pub fn sleep_until(&self, at: Instant) -> Sleep {
        self.wait_until(at, Wait::Sleep)
    }

    /// Resolves once `duration` has passed on this clock.
    pub fn sleep(&self, duration: Duration) -> Sleep {
        self.sleep_until(self.now() + duration)
    }

    /// Resolves once the clock reads `at` or later, as [`Clock::sleep_until`], for a deadline
    /// that some work races: the task waiting for it is not idle.
    pub fn deadline(&self, at: Instant) -> Sleep {
        self.wait_until(at, Wait::Timeout)
    }

    /// `work` if it finishes by `deadline` on this clock, else a [`Timeout`] naming `what`,
    /// which the work's error type converts from (the work is then dropped, with whatever
    /// connection it held).
    pub fn before<T, E: From<Timeout>>(
        &self,
        deadline: Instant,
        what: &str,
        work: impl Future<Output = Result<T, E>>,
    ) -> impl Future<Output = Result<T, E>> {
        let expiry = self.deadline(deadline);
        let what = what.to_owned();
        smol::future::or(work, async move {
            expiry.await;
            Err(Timeout(format!("{what} did not finish before its deadline")).into())
        })
    }

    /// The instant on the real monotonic clock by which IO bounded by `deadline` on this clock
    /// must end: `deadline` itself on the real clock; under a manual one, which stands still
    /// while the IO runs, [`MANUAL_IO_LIVENESS`] from now.
    pub fn io_deadline(&self, deadline: Instant) -> Instant {
        match &self.manual {
            None => deadline,
            Some(_) => Instant::now() + MANUAL_IO_LIVENESS,
        }
    }

    fn wait_until(&self, at: Instant, wait: Wait) -> Sleep {
        Sleep(match &self.manual {
            None => SleepOn::Real(smol::Timer::at(at)),
            Some(manual) => SleepOn::Manual(manual::Sleeper::new(manual.clone(), at, wait)),
        })
    }

    fn manual(manual: Arc<Manual>) -> Clock {
        Clock {
            manual: Some(manual),
        }
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.manual {
            None => f.write_str("Clock::real"),
            Some(manual) => write!(f, "Clock::manual({:?} in)", manual.elapsed()),
        }
    }
}

/// The future of [`Clock::sleep_until`] and [`Clock::sleep`]. Dropping it cancels the wait.
pub struct Sleep(SleepOn);

impl Sleep {
    /// Makes this wait end `duration` from now on its clock instead, as a deadline that moves
    /// with each sign of life (a real one keeps its timer and only moves it).
    pub fn set_after(&mut self, duration: Duration) {
        match &mut self.0 {
            SleepOn::Real(timer) => timer.set_after(duration),
            SleepOn::Manual(sleeper) => sleeper.set_after(duration),
        }
    }
}

enum SleepOn {
    Real(smol::Timer),
    Manual(manual::Sleeper),
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.0 {
            SleepOn::Real(timer) => Pin::new(timer).poll(cx).map(|_| ()),
            SleepOn::Manual(sleeper) => sleeper.poll(cx),
        }
    }
}

#[cfg(test)]
mod tests;
