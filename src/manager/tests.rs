//! The manager over the in-memory Lease store, in virtual time. Its runnables run on smol's
//! executor, so a test that starts them runs the manager on a thread of its own, waits for
//! what the runnables report, and moves the store's manual clock by hand once the manager is
//! seen waiting for it; no verdict depends on how fast the machine is.

use super::*;
use crate::clock::ManualClock;
use crate::leader::Fence;
use crate::leader::fake::{CLIENT_GO_TIMING as TIMING, FakeApi, FakeStore};
use crate::signal::Trigger;
use crate::testing::secs;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

const ME: &str = "me_abc";
/// The graceful timeout: shorter than the retry period, so the lease is not renewed while the
/// controllers stop and a test can move the clock past it in one step.
const GRACEFUL: Duration = Duration::from_secs(1);
/// How long a test waits for the manager's thread or a runnable on smol's executor to get to
/// where it reports: a liveness bound for other threads, not a speed goal.
const LIVENESS: Duration = Duration::from_secs(10);

fn shutdown(release_on_cancel: bool) -> Shutdown {
    Shutdown {
        graceful_timeout: GRACEFUL,
        release_on_cancel,
    }
}

fn elector(store: &FakeStore) -> Elector<FakeApi> {
    Elector::new(store.api(), ME.to_owned(), TIMING, store.clock()).expect("valid elector")
}

/// What the runnables report, in order; read with [`next`].
type Reports = mpsc::Receiver<String>;

fn next(reports: &Reports) -> String {
    reports
        .recv_timeout(LIVENESS)
        .unwrap_or_else(|_| panic!("nothing reported within {LIVENESS:?}"))
}

/// A runnable that reports the lease holder when it starts, waits for the stop signal, reports
/// "stopping", waits for `gate` to close, then reports the holder it sees as it finishes. It
/// counts its starts as the manager makes them, before it runs.
fn recorder(
    store: &FakeStore,
    gate: smol::channel::Receiver<()>,
) -> (Runnable, Reports, Arc<AtomicUsize>) {
    let (tx, reports) = mpsc::channel();
    let starts = Arc::new(AtomicUsize::new(0));
    let (store, counted) = (store.clone(), starts.clone());
    let runnable = Runnable::new("recorder", move |stop| {
        counted.fetch_add(1, Ordering::SeqCst);
        let (tx, store, gate) = (tx.clone(), store.clone(), gate.clone());
        async move {
            let _ = tx.send(format!("started holder={:?}", store.holder()));
            stop.wait().await;
            let _ = tx.send("stopping".into());
            let _ = gate.recv().await;
            let _ = tx.send(format!("stopped holder={:?}", store.holder()));
        }
    });
    (runnable, reports, starts)
}

/// A closed gate: [`recorder`]s pass it at once.
fn open_gate() -> smol::channel::Receiver<()> {
    smol::channel::bounded(1).1
}

/// The manager running on a thread of its own.
struct Managed {
    stop: Trigger,
    outcome: mpsc::Receiver<Result<(), LeaderLost>>,
}

impl Managed {
    fn start(
        store: &FakeStore,
        elector: Option<Elector<FakeApi>>,
        runnables: Vec<Runnable>,
        shutdown: Shutdown,
        step_down: Option<StepDown>,
    ) -> Managed {
        let (stop, signal) = crate::signal::signal();
        let (tx, outcome) = mpsc::channel();
        let clock = store.clock();
        std::thread::spawn(move || {
            let signal = async move { signal.wait().await };
            let run = run(elector, runnables, signal, shutdown, step_down, &clock);
            let _ = tx.send(smol::block_on(run));
        });
        Managed { stop, outcome }
    }

    /// The manager electing on `store` with `runnable`, and no step-down.
    fn leading(store: &FakeStore, runnable: Runnable, shutdown: Shutdown) -> Managed {
        Managed::start(store, Some(elector(store)), vec![runnable], shutdown, None)
    }

    fn outcome(&self) -> Result<(), LeaderLost> {
        (self.outcome.recv_timeout(LIVENESS)).expect("the manager did not return")
    }
}

fn holder(store: &FakeStore) -> Option<String> {
    store.holder()
}

#[test]
fn controllers_stop_before_the_lease_is_released() {
    let store = FakeStore::default();
    let (gate, closed) = smol::channel::bounded::<()>(1);
    let (runnable, reports, _) = recorder(&store, closed);
    let managed = Managed::leading(&store, runnable, shutdown(true));
    assert_eq!(next(&reports), format!("started holder={:?}", Some(ME)));
    let signalled = store.clock().now();
    managed.stop.stop_and_wait(&reports);
    waits_for_the_controllers(&store, signalled);
    drop(gate);
    assert_eq!(next(&reports), format!("stopped holder={:?}", Some(ME)));
    assert!(managed.outcome().is_ok());
    assert_eq!(holder(&store).as_deref(), Some(""), "not released");
    let lease = store.lease().expect("lease");
    assert_eq!(lease.spec.lease_duration_seconds, Some(1));
}

/// After the stop signal at `signalled`: the manager waits on its graceful deadline, with the
/// lease still held. Returns that deadline.
fn waits_for_the_controllers(store: &FakeStore, signalled: Instant) -> Instant {
    let stop_deadline = signalled + GRACEFUL;
    assert!(
        store.time().wait_for_wake(stop_deadline, LIVENESS),
        "the manager does not wait the grace period for its controllers"
    );
    assert_eq!(
        holder(store).as_deref(),
        Some(ME),
        "released while a controller was still stopping"
    );
    stop_deadline
}

/// Fires the trigger and waits until the runnable reports that it is stopping.
trait StopAndWait {
    fn stop_and_wait(&self, reports: &Reports);
}

impl StopAndWait for Trigger {
    fn stop_and_wait(&self, reports: &Reports) {
        self.fire();
        assert_eq!(next(reports), "stopping");
    }
}

#[test]
fn controllers_start_only_once_leading() {
    let store = FakeStore::default();
    store.write_as_other(|spec| {
        spec.holder_identity = Some("other_xyz".into());
        spec.lease_duration_seconds = Some(15);
    });
    let (runnable, _reports, starts) = recorder(&store, open_gate());
    let clock = store.clock();
    // Signalled after 10 s, 5 retry periods, before the other's 15 s lease expires.
    let signal = clock.sleep(secs(10));
    let ended = store.time().run(run(
        Some(elector(&store)),
        vec![runnable],
        signal,
        shutdown(true),
        None,
        &clock,
    ));
    assert!(ended.is_ok());
    assert_eq!(
        starts.load(Ordering::SeqCst),
        0,
        "a standby started a controller"
    );
    assert!(
        store.count("GET") >= 3,
        "did not stand by: {:?}",
        store.requests()
    );
    assert_eq!(
        holder(&store).as_deref(),
        Some("other_xyz"),
        "a standby released another's lease"
    );
}

#[test]
fn without_release_on_cancel_the_lease_is_left_to_expire() {
    let store = FakeStore::default();
    let (runnable, reports, _) = recorder(&store, open_gate());
    let managed = Managed::leading(&store, runnable, shutdown(false));
    assert_eq!(next(&reports), format!("started holder={:?}", Some(ME)));
    managed.stop.fire();
    assert!(managed.outcome().is_ok());
    assert_eq!(holder(&store).as_deref(), Some(ME));
    assert_eq!(store.count("PUT"), 0, "wrote the lease on shutdown");
}

/// Reports "cancelled" when the runnable's future is dropped.
struct OnDrop(mpsc::Sender<String>);
impl Drop for OnDrop {
    fn drop(&mut self) {
        let _ = self.0.send("cancelled".into());
    }
}

/// A runnable that reports "started", and "cancelled" when dropped; it ignores the stop signal.
fn stuck() -> (Runnable, Reports) {
    let (tx, reports) = mpsc::channel();
    let runnable = Runnable::new("stuck", move |_stop| {
        let tx = tx.clone();
        async move {
            let _guard = OnDrop(tx.clone());
            let _ = tx.send("started".into());
            smol::future::pending::<()>().await;
        }
    });
    (runnable, reports)
}

/// The manager leading on `store` with a [`stuck`] runnable that has started.
fn leading_stuck(store: &FakeStore) -> (Managed, Reports) {
    let (runnable, reports) = stuck();
    let managed = Managed::leading(store, runnable, shutdown(true));
    assert_eq!(next(&reports), "started");
    (managed, reports)
}

#[test]
fn losing_the_lease_cancels_controllers_and_is_an_error() {
    let store = FakeStore::default();
    let (managed, reports) = leading_stuck(&store);
    let acquired = store.clock().now();
    store.fail_all(true);
    // The elector tries once a retry period, failing, until the renew deadline.
    let mut tick = acquired;
    while tick < acquired + TIMING.renew_deadline {
        tick += TIMING.retry_period;
        assert!(
            store.time().wait_for_sleep(tick, LIVENESS),
            "no renewal due at {:?}",
            tick - acquired
        );
        store.time().advance_to(tick);
    }
    let err = managed.outcome().expect_err("lease lost");
    assert!(err.to_string().contains("leader election lost"), "{err}");
    assert_eq!(store.time().elapsed(), TIMING.renew_deadline);
    assert_eq!(next(&reports), "cancelled");
}

#[test]
fn a_controller_that_does_not_stop_is_cancelled_after_the_grace_period() {
    let store = FakeStore::default();
    let (managed, reports) = leading_stuck(&store);
    let signalled = store.clock().now();
    managed.stop.fire();
    let stop_deadline = waits_for_the_controllers(&store, signalled);
    store.time().advance_to(stop_deadline);
    assert_eq!(next(&reports), "cancelled");
    assert!(managed.outcome().is_ok());
    assert_eq!(
        holder(&store).as_deref(),
        Some(""),
        "released after cancelling"
    );
}

/// How each term went: ("started", when, holder is me) or ("ended", when, fence open).
type Term = (&'static str, Instant, bool);

/// A runnable that reports how each term of leadership starts and ends, on the store's clock.
fn term_recorder(store: &FakeStore, fence: Fence) -> (Runnable, mpsc::Receiver<Term>) {
    let (tx, terms) = mpsc::channel();
    let store = store.clone();
    let runnable = Runnable::new("term-recorder", move |stop| {
        let (tx, store, fence) = (tx.clone(), store.clone(), fence.clone());
        async move {
            /// Reports how the term ended, and whether the fence was open then.
            struct Ended(mpsc::Sender<Term>, Fence, FakeStore);
            impl Drop for Ended {
                fn drop(&mut self) {
                    let ended = ("ended", self.2.clock().now(), self.1.is_leading());
                    let _ = self.0.send(ended);
                }
            }
            let holder_is_me = store.holder().as_deref() == Some(ME);
            let _ = tx.send(("started", store.clock().now(), holder_is_me));
            let _ended = Ended(tx, fence, store);
            stop.wait().await;
        }
    });
    (runnable, terms)
}

#[test]
fn a_deaf_leader_closes_the_fence_releases_and_leads_again_after_the_hold_off() {
    let store = FakeStore::default();
    let time: &ManualClock = store.time();
    let e = elector(&store);
    let (runnable, terms) = term_recorder(&store, e.fence());
    let check_every = secs(1);
    let hold_off = TIMING.lease_duration;
    let deaf_once = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let check = deaf_once.clone();
    let step_down = StepDown {
        deaf: Arc::new(move |_| match check.swap(false, Ordering::SeqCst) {
            true => Err("the watch of Namespace heard nothing".into()),
            false => Ok(()),
        }),
        hold_off,
        check_every,
    };
    let managed = Managed::start(
        &store,
        Some(e),
        vec![runnable],
        shutdown(true),
        Some(step_down),
    );
    let term = |terms: &mpsc::Receiver<Term>| terms.recv_timeout(LIVENESS).expect("a term");
    let (kind, t0, holder_is_me) = term(&terms);
    assert_eq!((kind, holder_is_me), ("started", true));
    // The first hearing check finds the controllers deaf.
    assert!(time.wait_for_sleep(t0 + check_every, LIVENESS));
    time.advance_to(t0 + check_every);
    let (kind, _, fence_open) = term(&terms);
    assert_eq!(
        (kind, fence_open),
        ("ended", false),
        "first term cancelled with the fence already closed"
    );
    let lead_again_at = t0 + check_every + hold_off;
    assert!(
        time.wait_for_sleep(lead_again_at, LIVENESS),
        "not standing by for the hold-off after the step-down"
    );
    assert_eq!(
        holder(&store).as_deref(),
        Some(""),
        "not released on stepping down"
    );
    time.advance_to(lead_again_at);
    let (kind, started, holder_is_me) = term(&terms);
    assert_eq!(
        (kind, started, holder_is_me),
        ("started", lead_again_at, true)
    );
    managed.stop.fire();
    let (kind, _, fence_open) = term(&terms);
    assert_eq!(
        (kind, fence_open),
        ("ended", true),
        "second term stopped by the signal"
    );
    assert!(managed.outcome().is_ok());
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
    let store = FakeStore::default();
    let (runnable, reports, starts) = recorder(&store, open_gate());
    let managed = Managed::start(&store, None, vec![runnable], shutdown(true), None);
    assert_eq!(next(&reports), "started holder=None");
    assert_eq!(starts.load(Ordering::SeqCst), 1);
    managed.stop.stop_and_wait(&reports);
    assert_eq!(next(&reports), "stopped holder=None");
    assert!(managed.outcome().is_ok());
    assert!(
        store.requests().is_empty(),
        "no lease traffic without leader election"
    );
}
