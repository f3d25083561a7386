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
) -> Result<(), LeaderLost> {
    match elector {
        None => {
            let running = Running::start(&runnables);
            signal.await;
            running.stop(shutdown.graceful_timeout).await;
            Ok(())
        }
        Some(elector) => run_elected(elector, runnables, signal, shutdown, step_down).await,
    }
}

/// How one term of leadership ended.
enum Term {
    /// The signal came and the controllers stopped.
    Stopped,
    Lost(LeaderLost),
    /// The controllers were deaf; the fence is closed and they are cancelled.
    Deaf(String),
}

async fn run_elected<A: LeaseApi>(
    mut elector: Elector<A>,
    runnables: Vec<Runnable>,
    signal: impl Future<Output = ()>,
    shutdown: Shutdown,
    step_down: Option<StepDown>,
) -> Result<(), LeaderLost> {
    let mut signal = Box::pin(signal);
    let mut stand_by_until = None;
    if step_down.is_some() {
        // Exported from the start, at zero, so alerts can rely on the series existing.
        step_downs();
    }
    loop {
        let acquired = async {
            if let Some(until) = stand_by_until.take() {
                smol::Timer::at(until).await;
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
        match term(
            &mut elector,
            running,
            &mut signal,
            &shutdown,
            step_down.as_ref(),
        )
        .await
        {
            Term::Stopped => break,
            // The controllers were cancelled by dropping them; `main` reports the loss.
            Term::Lost(lost) => return Err(lost),
            Term::Deaf(why) => {
                let hold_off = step_down.as_ref().map_or(Duration::ZERO, |s| s.hold_off);
                log::warn!(
                    "stepping down: {why}; controllers cancelled, releasing the lease so a \
                     replica that hears can lead; standing by again in {hold_off:?}"
                );
                step_downs().inc();
                // A failed release leaves the lease to expire; the elector logs how it went.
                let _ = elector.release().await;
                stand_by_until = Some(Instant::now() + hold_off);
            }
        }
    }
    if shutdown.release_on_cancel {
        // The elector logs how the release went; a failed one leaves the lease to expire.
        let _ = elector.release().await;
    }
    Ok(())
}

/// One term of leadership: until the signal (controllers stopped), the lease is lost, or the
/// controllers are found deaf (fence closed first, so nothing is written after).
async fn term<A: LeaseApi>(
    elector: &mut Elector<A>,
    running: Running,
    signal: &mut Pin<Box<impl Future<Output = ()>>>,
    shutdown: &Shutdown,
    step_down: Option<&StepDown>,
) -> Term {
    let fence = elector.fence();
    let stopped = async {
        signal.await;
        log::info!(
            "stopping controllers (at most {:?})",
            shutdown.graceful_timeout
        );
        running.stop(shutdown.graceful_timeout).await;
        Term::Stopped
    };
    // The lease keeps being renewed while the controllers stop.
    let renewing = async { Term::Lost(elector.keep_renewing().await) };
    let deaf = async {
        let Some(step_down) = step_down else {
            return smol::future::pending().await;
        };
        loop {
            smol::Timer::after(step_down.check_every).await;
            if let Err(why) = (step_down.deaf)(Instant::now()) {
                fence.close();
                return Term::Deaf(why);
            }
        }
    };
    stopped.or(renewing).or(deaf).await
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
    /// `timeout`.
    async fn stop(self, timeout: Duration) {
        self.stop.fire();
        let deadline = Instant::now() + timeout;
        for (name, task) in self.tasks {
            let finished = async {
                task.await;
                true
            };
            let timed_out = async {
                smol::Timer::at(deadline).await;
                false
            };
            if !finished.or(timed_out).await {
                log::warn!("{name} did not stop within {timeout:?}; cancelled");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deadline::within;
    use crate::leader::fake::{FakeApi, FakeStore};
    use crate::leader::{Fence, Timing};
    use crate::testing::ms;
    use smol::future;
    use std::sync::{Arc, Mutex};

    const ME: &str = "me_abc";

    fn shutdown(release_on_cancel: bool) -> Shutdown {
        Shutdown {
            graceful_timeout: ms(500),
            release_on_cancel,
        }
    }

    fn elector(store: &FakeStore) -> Elector<FakeApi> {
        let timing = Timing::new(ms(300), ms(200), ms(50)).expect("valid timing");
        Elector::new(store.api(), ME.to_owned(), timing).expect("valid elector")
    }

    type Log = Arc<Mutex<Vec<String>>>;

    fn push(log: &Log, line: String) {
        log.lock().expect("log lock").push(line);
    }

    /// A runnable that logs when it starts and, after `stop` fires and `linger` passes, the
    /// lease holder it sees at the moment it finishes.
    fn recorder(log: &Log, store: &FakeStore, linger: Duration) -> Runnable {
        let (log, store) = (log.clone(), store.clone());
        Runnable::new("recorder", move |stop| {
            let (log, store) = (log.clone(), store.clone());
            async move {
                push(&log, format!("started holder={:?}", store.holder()));
                stop.wait().await;
                smol::Timer::after(linger).await;
                push(&log, format!("stopped holder={:?}", store.holder()));
            }
        })
    }

    /// Runs the manager to its end (at most 3 s).
    fn finish(run: impl Future<Output = Result<(), LeaderLost>>) -> Result<(), LeaderLost> {
        smol::block_on(within(ms(3000), run)).expect("manager returned")
    }

    async fn after(delay: Duration) {
        smol::Timer::after(delay).await;
    }

    /// Runs the manager to its end, electing on `store`, with the shutdown signal firing
    /// after `signal_after`.
    fn lead(
        store: &FakeStore,
        runnables: Vec<Runnable>,
        signal_after: Duration,
        release_on_cancel: bool,
    ) -> Result<(), LeaderLost> {
        finish(run(
            Some(elector(store)),
            runnables,
            after(signal_after),
            shutdown(release_on_cancel),
            None,
        ))
    }

    #[test]
    fn controllers_stop_before_the_lease_is_released() {
        let (store, log) = (FakeStore::default(), Log::default());
        let result = lead(&store, vec![recorder(&log, &store, ms(100))], ms(200), true);
        assert!(result.is_ok());
        let log = log.lock().expect("log lock").clone();
        assert_eq!(
            log,
            vec![
                format!("started holder={:?}", Some(ME)),
                format!("stopped holder={:?}", Some(ME))
            ]
        );
        assert_eq!(
            store.holder().as_deref(),
            Some(""),
            "released after the controllers stopped"
        );
        assert_eq!(
            store.lease().and_then(|l| l.spec.lease_duration_seconds),
            Some(1)
        );
    }

    #[test]
    fn controllers_start_only_once_leading() {
        let (store, log) = (FakeStore::default(), Log::default());
        store.write_as_other(|spec| {
            spec.holder_identity = Some("other_xyz".into());
            spec.lease_duration_seconds = Some(15);
        });
        assert!(lead(&store, vec![recorder(&log, &store, ms(0))], ms(300), true).is_ok());
        assert!(
            log.lock().expect("log lock").is_empty(),
            "a standby started a controller"
        );
        assert_eq!(
            store.holder().as_deref(),
            Some("other_xyz"),
            "a standby released another's lease"
        );
    }

    #[test]
    fn without_release_on_cancel_the_lease_is_left_to_expire() {
        let (store, log) = (FakeStore::default(), Log::default());
        assert!(lead(&store, vec![recorder(&log, &store, ms(0))], ms(200), false).is_ok());
        assert_eq!(store.holder().as_deref(), Some(ME));
    }

    #[test]
    fn losing_the_lease_cancels_controllers_and_is_an_error() {
        /// Logs "cancelled" when the runnable's future is dropped.
        struct OnDrop(Log);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                push(&self.0, "cancelled".into());
            }
        }
        let (store, log) = (FakeStore::default(), Log::default());
        let (failing, runnable_log) = (store.clone(), log.clone());
        let runnable = Runnable::new("trips-the-store", move |stop| {
            let (failing, runnable_log) = (failing.clone(), runnable_log.clone());
            async move {
                let _guard = OnDrop(runnable_log.clone());
                push(&runnable_log, "started".into());
                failing.fail_all(true);
                stop.wait().await;
                push(&runnable_log, "stopped normally".into());
            }
        });
        let started = Instant::now();
        let run = run(
            Some(elector(&store)),
            vec![runnable],
            future::pending(),
            shutdown(true),
            None,
        );
        let err = finish(run).expect_err("lease lost");
        assert!(err.to_string().contains("leader election lost"), "{err}");
        assert!(started.elapsed() < ms(1000), "took {:?}", started.elapsed());
        let cancelled_without_stopping =
            || *log.lock().expect("log lock") == ["started", "cancelled"];
        let deadline = Instant::now() + ms(1000);
        while !cancelled_without_stopping() && Instant::now() < deadline {
            std::thread::sleep(ms(10));
        }
        assert_eq!(*log.lock().expect("log lock"), ["started", "cancelled"]);
    }

    #[test]
    fn a_controller_that_does_not_stop_is_cancelled_after_the_grace_period() {
        let (store, log) = (FakeStore::default(), Log::default());
        let stuck = recorder(&log, &store, Duration::from_secs(60));
        let started = Instant::now();
        assert!(lead(&store, vec![stuck], ms(100), true).is_ok());
        assert!(started.elapsed() < ms(1500), "took {:?}", started.elapsed());
        assert_eq!(
            store.holder().as_deref(),
            Some(""),
            "released after cancelling"
        );
    }

    #[test]
    fn a_deaf_leader_closes_the_fence_releases_and_leads_again_after_the_hold_off() {
        let store = FakeStore::default();
        let e = elector(&store);
        let fence = e.fence();
        let deaf_once = Arc::new(std::sync::atomic::AtomicBool::new(true));
        // When the check reported deafness: the hold-off starts after it (after the release).
        let deaf_at: Arc<Mutex<Option<Instant>>> = Arc::default();
        let (check, reported) = (deaf_once.clone(), deaf_at.clone());
        let step_down = StepDown {
            deaf: Arc::new(move |_| {
                if check.swap(false, std::sync::atomic::Ordering::SeqCst) {
                    *reported.lock().expect("lock") = Some(Instant::now());
                    Err("the watch of Namespace heard nothing".into())
                } else {
                    Ok(())
                }
            }),
            hold_off: ms(300),
            check_every: ms(50),
        };
        /// How each term went: ("started", when, holder is me) or ("ended", when, fence open).
        type Terms = Arc<Mutex<Vec<(&'static str, Instant, bool)>>>;
        let terms: Terms = Arc::default();
        let (record, watched) = (terms.clone(), store.clone());
        let runnable = Runnable::new("term-recorder", move |stop| {
            let (record, store, fence) = (record.clone(), watched.clone(), fence.clone());
            async move {
                /// Records how the term ended, and whether the fence was open then.
                struct Ended(Terms, Fence);
                impl Drop for Ended {
                    fn drop(&mut self) {
                        let open = self.1.is_leading();
                        self.0
                            .lock()
                            .expect("lock")
                            .push(("ended", Instant::now(), open));
                    }
                }
                let holder_is_me = store.holder().as_deref() == Some(ME);
                record
                    .lock()
                    .expect("lock")
                    .push(("started", Instant::now(), holder_is_me));
                let _ended = Ended(record.clone(), fence);
                stop.wait().await;
            }
        });
        // The signal comes once the second term has started, however slow a loaded machine
        // makes the re-election; at most after 10 s, when the assertions below tell.
        let seen = terms.clone();
        let second_term_started = async move {
            let deadline = Instant::now() + Duration::from_secs(10);
            while seen.lock().expect("lock").len() < 3 && Instant::now() < deadline {
                smol::Timer::after(ms(10)).await;
            }
        };
        let run = run(
            Some(e),
            vec![runnable],
            second_term_started,
            shutdown(true),
            Some(step_down),
        );
        assert!(finish(run).is_ok());
        let terms = terms.lock().expect("lock").clone();
        let kinds: Vec<(&str, bool)> = terms.iter().map(|(k, _, b)| (*k, *b)).collect();
        assert_eq!(
            kinds,
            [
                ("started", true),
                ("ended", false),
                ("started", true),
                ("ended", true)
            ],
            "first term cancelled with the fence already closed; second term stopped by the signal"
        );
        // From the report, not from the first term's end: a cancelled task's end is recorded
        // when the executor drops it, which a loaded machine can delay into the hold-off.
        let reported = deaf_at.lock().expect("lock").expect("deafness reported");
        let stood_by = terms[2].1.duration_since(reported);
        assert!(
            stood_by >= ms(300),
            "led again after {stood_by:?}, inside the hold-off"
        );
        let spec = store.lease().expect("lease").spec;
        assert_eq!(
            spec.holder_identity.as_deref(),
            Some(""),
            "released at the end"
        );
        assert_eq!(
            spec.lease_transitions,
            Some(1),
            "one new term after the step-down"
        );
    }

    #[test]
    fn without_leader_election_controllers_run_at_once_and_stop_on_signal() {
        let (store, log) = (FakeStore::default(), Log::default());
        let run = run::<FakeApi>(
            None,
            vec![recorder(&log, &store, ms(50))],
            after(ms(100)),
            shutdown(true),
            None,
        );
        assert!(finish(run).is_ok());
        assert_eq!(log.lock().expect("log lock").len(), 2);
        assert!(
            store.requests().is_empty(),
            "no lease traffic without leader election"
        );
    }
}
