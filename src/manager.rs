//! Lifecycle and ordering: probes first, then (when elected) the controllers; on a signal the
//! controllers stop, then the lease is released, then `run` returns and the process exits.
//!
//! The ordering is the point. A controller must never act while another replica may lead, so
//! the lease is released only after every controller has stopped, and nothing runs after
//! `run` returns. Losing the lease cancels the controllers at once: the fence already refuses
//! their writes, so there is nothing left to wait for.

use crate::leader::{Elector, LeaderLost, LeaseApi};
use crate::signal::{Signal, Trigger, signal};
use smol::future::FutureExt as _;
use std::pin::Pin;
use std::time::{Duration, Instant};

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A long-running part started once this replica may act (e.g. the Mirror controller).
pub struct Runnable {
    name: String,
    start: Box<dyn FnOnce(Signal) -> BoxFuture + Send>,
}

impl Runnable {
    /// `start(stop)` must return once `stop` fires and its in-flight work has finished.
    pub fn new<F, Fut>(name: &str, start: F) -> Runnable
    where
        F: FnOnce(Signal) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Runnable {
            name: name.to_owned(),
            start: Box::new(move |stop| Box::pin(start(stop))),
        }
    }
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
pub async fn run<A: LeaseApi>(
    elector: Option<Elector<A>>,
    runnables: Vec<Runnable>,
    signal: impl Future<Output = ()>,
    shutdown: Shutdown,
) -> Result<(), LeaderLost> {
    match elector {
        None => {
            let running = Running::start(runnables);
            signal.await;
            running.stop(shutdown.graceful_timeout).await;
            Ok(())
        }
        Some(elector) => run_elected(elector, runnables, signal, shutdown).await,
    }
}

async fn run_elected<A: LeaseApi>(
    mut elector: Elector<A>,
    runnables: Vec<Runnable>,
    signal: impl Future<Output = ()>,
    shutdown: Shutdown,
) -> Result<(), LeaderLost> {
    let mut signal = Box::pin(signal);
    let acquired = async {
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
    let running = Running::start(runnables);
    let stopped = async {
        (&mut signal).await;
        log::info!(
            "stopping controllers (at most {:?})",
            shutdown.graceful_timeout
        );
        running.stop(shutdown.graceful_timeout).await;
        None
    };
    // The lease keeps being renewed while the controllers stop.
    if let Some(lost) = stopped
        .or(async { Some(elector.keep_renewing().await) })
        .await
    {
        // Cancelled by dropping them; `main` reports the loss.
        return Err(lost);
    }
    if shutdown.release_on_cancel {
        // The elector logs how the release went; a failed one leaves the lease to expire.
        let _ = elector.release().await;
    }
    Ok(())
}

/// The runnables while they run. Dropping it cancels them.
struct Running {
    // Field order is drop order: the tasks are cancelled before the stop signal fires, so a
    // runnable dropped here never runs on into its own shutdown steps.
    tasks: Vec<(String, smol::Task<()>)>,
    stop: Trigger,
}

impl Running {
    fn start(runnables: Vec<Runnable>) -> Running {
        let (stop, receiver) = signal();
        let tasks = runnables
            .into_iter()
            .map(|r| {
                log::info!("starting {}", r.name);
                (r.name, smol::spawn((r.start)(receiver.clone())))
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
    use crate::leader::Timing;
    use crate::leader::fake::{FakeApi, FakeStore, within};
    use smol::future;
    use std::sync::{Arc, Mutex};

    const ME: &str = "me_abc";

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

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
        Runnable::new("recorder", move |stop| async move {
            push(&log, format!("started holder={:?}", store.holder()));
            stop.wait().await;
            smol::Timer::after(linger).await;
            push(&log, format!("stopped holder={:?}", store.holder()));
        })
    }

    /// Runs the manager to its end (at most 3 s).
    fn finish(run: impl Future<Output = Result<(), LeaderLost>>) -> Result<(), LeaderLost> {
        smol::block_on(within(ms(3000), run)).expect("manager returned")
    }

    async fn after(delay: Duration) {
        smol::Timer::after(delay).await;
    }

    #[test]
    fn controllers_stop_before_the_lease_is_released() {
        let (store, log) = (FakeStore::default(), Log::default());
        let run = run(
            Some(elector(&store)),
            vec![recorder(&log, &store, ms(100))],
            after(ms(200)),
            shutdown(true),
        );
        let result = finish(run);
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
        let run = run(
            Some(elector(&store)),
            vec![recorder(&log, &store, ms(0))],
            after(ms(300)),
            shutdown(true),
        );
        assert!(finish(run).is_ok());
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
        let run = run(
            Some(elector(&store)),
            vec![recorder(&log, &store, ms(0))],
            after(ms(200)),
            shutdown(false),
        );
        assert!(finish(run).is_ok());
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
        let runnable = Runnable::new("trips-the-store", move |stop| async move {
            let _guard = OnDrop(runnable_log.clone());
            push(&runnable_log, "started".into());
            failing.fail_all(true);
            stop.wait().await;
            push(&runnable_log, "stopped normally".into());
        });
        let started = Instant::now();
        let run = run(
            Some(elector(&store)),
            vec![runnable],
            future::pending(),
            shutdown(true),
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
        let run = run(
            Some(elector(&store)),
            vec![stuck],
            after(ms(100)),
            shutdown(true),
        );
        assert!(finish(run).is_ok());
        assert!(started.elapsed() < ms(1500), "took {:?}", started.elapsed());
        assert_eq!(
            store.holder().as_deref(),
            Some(""),
            "released after cancelling"
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
        );
        assert!(finish(run).is_ok());
        assert_eq!(log.lock().expect("log lock").len(), 2);
        assert!(
            store.requests().is_empty(),
            "no lease traffic without leader election"
        );
    }
}
