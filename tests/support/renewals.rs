//! An elector over a real lease client that keeps renewing on a thread of its own, on a
//! manual clock the test moves one wake at a time.
//!
//! Why: the requests are real (a client, a connection, the fake server), but when the elector
//! renews, how long it waits after a failure and when it gives up are its logic, on its clock.
//! A test waits (in real time, with a liveness bound) until the elector sleeps, which it only
//! does between attempts, looks at what the server saw, and moves the clock to the end of that
//! sleep. Nothing it asserts depends on how fast the machine is.

use skiff::clock::ManualClock;
use skiff::leader::{Elector, LeaderLost, LeaseApi};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a test waits for the elector's thread to finish an attempt: a liveness bound for
/// loopback requests that take milliseconds, not a speed goal.
pub const LIVENESS: Duration = Duration::from_secs(30);

/// The elector's `keep_renewing`, running.
pub struct Renewals {
    time: ManualClock,
    lost: mpsc::Receiver<LeaderLost>,
}

impl Renewals {
    /// Starts renewing with `elector`, which leads on `time`'s clock.
    pub fn start<A: LeaseApi + 'static>(mut elector: Elector<A>, time: &ManualClock) -> Renewals {
        let (tx, lost) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(smol::block_on(elector.keep_renewing()));
        });
        Renewals {
            time: time.clone(),
            lost,
        }
    }

    /// Waits until the elector is between attempts, and returns when its sleep ends; `Err`
    /// once it has lost the lease instead.
    pub fn idle(&self) -> Result<Instant, LeaderLost> {
        let deadline = Instant::now() + LIVENESS;
        while Instant::now() < deadline {
            if let Ok(lost) = self.lost.try_recv() {
                return Err(lost);
            }
            // Short waits, so a loss is seen too; the slice decides nothing.
            if let Some(at) = self.time.wait_for_any_sleep(Duration::from_millis(20)) {
                return Ok(at);
            }
        }
        panic!("the elector neither slept nor returned within {LIVENESS:?}")
    }

    /// Waits until the elector is between attempts and moves the clock to the end of its sleep,
    /// so it makes its next attempt; returns that instant, or `Err` once the lease is lost.
    pub fn next(&self) -> Result<Instant, LeaderLost> {
        let at = self.idle()?;
        self.time.advance_to(at);
        Ok(at)
    }
}

/// `future`'s output, or `None` if it takes longer than `limit` of real time: for liveness
/// bounds, which fail a test that would otherwise hang.
pub async fn within<T>(limit: Duration, future: impl std::future::Future<Output = T>) -> Option<T> {
    smol::future::or(async { Some(future.await) }, async {
        smol::Timer::after(limit).await;
        None
    })
    .await
}
