//! Lifecycle and ordering: probes first, then (when elected) the controllers; on a signal the
//! controllers stop, then the lease is released, then `run` returns and the process exits.
//!
//! The ordering is the point. A controller must never act while another replica may lead, so
//! the lease is released only after every controller has stopped, and nothing runs after
//! `run` returns. Losing the lease cancels the controllers at once: the fence already refuses
//! their writes, so there is nothing left to wait for.
//!
//! A leader whose controllers hear nothing from the API server ([`StepDown`]) steps down: the
//! fence closes, the controllers are cancelled, the lease is released so a replica that hears
//! can lead, and this replica stands by again, after a hold-off. It does not exit: when the
//! whole API server is unreachable every replica would exit, and the restarts would end in
//! CrashLoopBackOff, still leaderless when the server comes back.
//!
//! Its waits (the graceful timeout, the hold-off, the hearing checks) read the clock it is
//! given: the real one in the binary, a manual one in the tests.

use crate::clock::Clock;
use crate::leader::{Elector, LeaderLost, LeaseApi};
use crate::metrics;
use crate::runtime::Runnable;
use crate::signal::{Trigger, signal};
use smol::future::FutureExt as _;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a leader checks that its controllers hear (at most; a short retry period makes it
/// shorter).
pub const HEARING_CHECK_PERIOD: Duration = Duration::from_secs(1);

/// When a leader gives its lease up although it still renews: its controllers are deaf.
#[derive(Clone)]
pub struct StepDown {
    /// `Err(why)` once the controllers have heard nothing for longer than allowed.
    pub deaf: Arc<dyn Fn(Instant) -> Result<(), String> + Send + Sync>,
    /// How long a replica that stepped down stands by before it tries to lead again, so a
    /// replica that hears takes the lease first.
    pub hold_off: Duration,
    /// How often `deaf` is asked ([`HEARING_CHECK_PERIOD`]).
    pub check_every: Duration,
}

/// How the manager ends things.
#[derive(Debug, Clone, Copy)]
pub struct Shutdown {
    /// How long stopping runnables may take before they are cancelled.
    pub graceful_timeout: Duration,
    /// Whether to hand the lease back on shutdown (`--leader-elect-release-on-cancel`).
    pub release_on_cancel: bool,
}

/// Runs the runnables, under leader election when an elector is given, until `signal`
/// completes (SIGTERM/SIGINT in the binary) or the lease is lost.
/// `step_down` applies under leader election only (without it, `/healthz` reports deafness).
pub async fn run<A: LeaseApi>(
    elector: Option<Elector<A>>,
    runnables: Vec<Runnable>,
    signal: impl Future<Output = ()>,
    shutdown: Shutdown,
    step_down: Option<StepDown>,
    clock: &Clock,
) -> Result<(), LeaderLost> {
    match elector {
        None => {
            let running = Running::start(&runnables);
            signal.await;
            running.stop(shutdown.graceful_timeout, clock).await;
            Ok(())
        }
        Some(elector) => {
            let elected = Elected {
                shutdown,
                step_down,
                clock,
            };
            elected.run(elector, runnables, signal).await
        }
    }
}

/// What a replica under leader election runs by, besides its elector and runnables.
struct Elected<'a> {
    shutdown: Shutdown,
    step_down: Option<StepDown>,
    clock: &'a Clock,
}

/// How one term of leadership ended.
enum Term {
    /// The signal came and the controllers stopped.
    Stopped,
    Lost(LeaderLost),
    /// The controllers were deaf; the fence is closed and they are cancelled.
    Deaf(String),
}

impl Elected<'_> {
    async fn run<A: LeaseApi>(
        self,
        mut elector: Elector<A>,
        runnables: Vec<Runnable>,
        signal: impl Future<Output = ()>,
    ) -> Result<(), LeaderLost> {
        let mut signal = Box::pin(signal);
        let mut stand_by_until = None;
        if self.step_down.is_some() {
            // Exported from the start, at zero, so alerts can rely on the series existing.
            step_downs();
        }
        loop {
            let acquired = async {
                if let Some(until) = stand_by_until.take() {
                    self.clock.sleep_until(until).await;
                }
                elector.acquire().await;
                true
            };
            if !acquired
                .or(async {
                    (&mut signal).await;
                    false
                })
                .await
            {
                log::info!("stopping while standing by; nothing to release");
                return Ok(());
            }
            let running = Running::start(&runnables);
            match self.term(&mut elector, running, &mut signal).await {
                Term::Stopped => break,
                // The controllers were cancelled by dropping them; `main` reports the loss.
                Term::Lost(lost) => return Err(lost),
                Term::Deaf(why) => {
                    let hold_off = self
                        .step_down
                        .as_ref()
                        .map_or(Duration::ZERO, |s| s.hold_off);
                    log::warn!(
                        "stepping down: {why}; controllers cancelled, releasing the lease so a \
                         replica that hears can lead; standing by again in {hold_off:?}"
                    );
                    step_downs().inc();
                    // A failed release leaves the lease to expire; the elector logs how it went.
                    let _ = elector.release().await;
                    stand_by_until = Some(self.clock.now() + hold_off);
                }
            }
        }
        if self.shutdown.release_on_cancel {
            // The elector logs how the release went; a failed one leaves the lease to expire.
            let _ = elector.release().await;
        }
        Ok(())
    }

    /// One term of leadership: until the signal (controllers stopped), the lease is lost, or
    /// the controllers are found deaf (fence closed first, so nothing is written after).
    async fn term<A: LeaseApi>(
        &self,
        elector: &mut Elector<A>,
        running: Running,
        signal: &mut Pin<Box<impl Future<Output = ()>>>,
    ) -> Term {
        let fence = elector.fence();
        let graceful_timeout = self.shutdown.graceful_timeout;
        let stopped = async {
            signal.await;
            log::info!("stopping controllers (at most {graceful_timeout:?})");
            running.stop(graceful_timeout, self.clock).await;
            Term::Stopped
        };
        // The lease keeps being renewed while the controllers stop.
        let renewing = async { Term::Lost(elector.keep_renewing().await) };
        let deaf = async {
            let Some(step_down) = &self.step_down else {
                return smol::future::pending().await;
            };
            loop {
                self.clock.sleep(step_down.check_every).await;
                if let Err(why) = (step_down.deaf)(self.clock.now()) {
                    fence.close();
                    return Term::Deaf(why);
                }
            }
        };
        stopped.or(renewing).or(deaf).await
    }
}

fn step_downs() -> metrics::Counter {
    metrics::counter(
        "skiff_leader_step_downs_total",
        "Times this replica gave up leading because its controllers heard nothing from the API \
         server (--deafness-timeout).",
        &[],
    )
}

/// The runnables while they run. Dropping it cancels them.
struct Running {
    // Field order is drop order: the tasks are cancelled before the stop signal fires, so a
    // runnable dropped here never runs on into its own shutdown steps.
    tasks: Vec<(String, smol::Task<()>)>,
    stop: Trigger,
}

impl Running {
    fn start(runnables: &[Runnable]) -> Running {
        let (stop, receiver) = signal();
        let tasks = runnables
            .iter()
            .map(|r| {
                log::info!("starting {}", r.name());
                (r.name().to_owned(), smol::spawn(r.start(receiver.clone())))
            })
            .collect();
        Running { tasks, stop }
    }

    /// Signals stop and waits for every runnable, cancelling the ones still running after
    /// `timeout` on `clock`.
    async fn stop(self, timeout: Duration, clock: &Clock) {
        self.stop.fire();
        let deadline = clock.now() + timeout;
        for (name, task) in self.tasks {
            let finished = async {
                task.await;
                true
            };
            let timed_out = async {
                clock.deadline(deadline).await;
                false
            };
            if !finished.or(timed_out).await {
                log::warn!("{name} did not stop within {timeout:?}; cancelled");
            }
        }
    }
}

#[cfg(test)]
mod tests;
