//! The controller's workers, retries and stop, and `feed`. Retries wait on a manual clock the
//! tests move once they see the retry sleep; other waits are for smol's executor, bounded by
//! [`LIVENESS`].

use super::*;
use crate::clock::ManualClock;
use crate::kube::api::{ConfigMap, ListMeta, ObjectList, ObjectMeta};
use crate::kube::{Error, ListParams, WatchEvent, WatchParams};
use crate::runtime::list_watch::EventStream;
use crate::runtime::watcher::WatcherConfig;
use crate::testing::ms;
use smol::Timer;
use smol::channel::{Receiver, Sender, unbounded};
use smol::future::{block_on, or};
use smol::lock::Barrier;
use std::sync::Mutex;

fn key(name: &str) -> ObjectKey {
    ObjectKey::new("ns", name)
}

/// How long a test waits for the workers on smol's executor: a liveness bound for other
/// threads, not a speed goal (the reconciles here take microseconds).
const LIVENESS: Duration = Duration::from_secs(10);

/// `future`'s output; fails the test instead of hanging when it takes over [`LIVENESS`].
async fn within_liveness<T>(future: impl Future<Output = T>) -> T {
    crate::deadline::within(LIVENESS, future)
        .await
        .expect("did not finish within the liveness bound")
}

async fn signal(rx: Receiver<()>) {
    let _ = rx.recv().await;
}

/// Runs a controller named `name` with `workers` on the keys `names` until a reconcile
/// closes the stop channel it is handed (fails the test after [`LIVENESS`]); returns its queue.
fn run_until_stopped<F, E>(
    name: &str,
    workers: usize,
    names: &[&str],
    reconcile: impl Fn(ObjectKey, Sender<()>) -> F + Send + Sync + 'static,
) -> WorkQueue<ObjectKey>
where
    F: Future<Output = Result<Action, E>> + Send + 'static,
    E: Display + Send + 'static,
{
    let controller = Controller::new(name, workers);
    let queue = controller.queue();
    for name in names {
        queue.add(key(name));
    }
    let (stop_tx, stop_rx) = unbounded::<()>();
    let reconcile = move |key| reconcile(key, stop_tx.clone());
    block_on(within_liveness(controller.run(reconcile, signal(stop_rx))));
    queue
}

/// What each reconcile call was given or saw, in call order.
type Calls<T> = Arc<Mutex<Vec<T>>>;

/// Adds `call` to `calls`; how many calls there have been, this one included.
fn record<T>(calls: &Calls<T>, call: T) -> usize {
    let mut calls = calls.lock().unwrap_or_else(|e| e.into_inner());
    calls.push(call);
    calls.len()
}

/// controller_runtime_reconcile_errors_total of the controller named `name`.
fn reconcile_errors(name: &str) -> u64 {
    let labels = [("controller", name)];
    metrics::counter("controller_runtime_reconcile_errors_total", "", &labels).get()
}

#[test]
fn workers_reconcile_different_keys_in_parallel() {
    let barrier = Arc::new(Barrier::new(3));
    let finished = Arc::new(Mutex::new(Vec::new()));
    let (b, f) = (Arc::clone(&barrier), Arc::clone(&finished));
    let reconcile = move |key: ObjectKey, stop: Sender<()>| {
        let (barrier, finished) = (Arc::clone(&b), Arc::clone(&f));
        async move {
            // Passes only when all three reconciles are running at once.
            barrier.wait().await;
            let mut done = finished.lock().unwrap();
            done.push(key);
            if done.len() == 3 {
                stop.close();
            }
            Ok::<_, String>(Action::Done)
        }
    };
    run_until_stopped("test-parallel", 3, &["a", "b", "c"], reconcile);
    assert_eq!(finished.lock().unwrap().len(), 3);
}

#[test]
fn a_flow_holding_all_its_workers_leaves_one_to_another_flow() {
    let (started_tx, started_rx) = unbounded::<()>();
    let (served_tx, served_rx) = unbounded::<()>();
    let (release_tx, release_rx) = unbounded::<()>();
    let reconcile = move |key: ObjectKey| {
        let (started, served, release) =
            (started_tx.clone(), served_tx.clone(), release_rx.clone());
        async move {
            if &*key.namespace == "big" {
                let _ = started.send(()).await;
                // Holds its worker until the test ends.
                let _ = release.recv().await;
            } else {
                served.close();
            }
            Ok::<_, String>(Action::Done)
        }
    };
    let controller = Controller::new("test-flows", 2);
    let queue = controller.queue();
    for name in ["1", "2", "3"] {
        queue.add(ObjectKey::new("big", name));
    }
    let (stop_tx, stop_rx) = unbounded::<()>();
    let run = smol::spawn(controller.run(reconcile, signal(stop_rx)));
    block_on(within_liveness(async {
        for _ in 0..2 {
            let _ = started_rx.recv().await;
        }
        queue.add(ObjectKey::new("small", "1"));
        let _ = served_rx.recv().await;
        assert!(
            started_rx.try_recv().is_err(),
            "big/3 ran past its flow's cap"
        );
        stop_tx.close();
        release_tx.close();
        run.await;
    }));
}

#[test]
fn stop_waits_for_the_reconcile_in_flight_and_starts_no_new_one() {
    let controller = Controller::new("test-stop", 1);
    let queue = controller.queue();
    let (started_tx, started_rx) = unbounded::<ObjectKey>();
    let (release_tx, release_rx): (Sender<()>, _) = unbounded();
    let reconcile = move |key: ObjectKey| {
        let (started, release) = (started_tx.clone(), release_rx.clone());
        async move {
            let _ = started.send(key).await;
            let _ = release.recv().await;
            Ok::<_, String>(Action::Done)
        }
    };
    let (stop_tx, stop_rx) = unbounded::<()>();
    queue.add(key("a"));
    let run = smol::spawn(controller.run(reconcile, signal(stop_rx)));
    block_on(within_liveness(async {
        assert_eq!(started_rx.recv().await, Ok(key("a")));
        queue.add(key("b"));
        stop_tx.close();
        // Shutting the queue down is the last thing `run` does before waiting for its workers.
        while !queue.is_shutting_down() {
            Timer::after(Duration::from_millis(1)).await;
        }
        assert!(
            !run.is_finished(),
            "run returned while a reconcile was in flight"
        );
        release_tx.close();
        run.await;
    }));
    assert!(started_rx.try_recv().is_err(), "b was started after stop");
}

#[test]
fn a_failed_reconcile_is_retried_with_backoff_then_forgotten() {
    let time = ManualClock::new();
    let calls: Calls<Instant> = Arc::default();
    let c = Arc::clone(&calls);
    let clock = time.clock();
    let reconcile = move |_key: ObjectKey| {
        let seen = record(&c, clock.now());
        async move {
            if seen < 3 {
                return Err("transient");
            }
            Ok(Action::Done)
        }
    };
    let controller = Controller::with_clock("test-retry", 2, time.clock());
    let queue = controller.queue();
    queue.add(key("a"));
    let (stop_tx, stop_rx) = unbounded::<()>();
    let run = smol::spawn(controller.run(reconcile, signal(stop_rx)));
    // Each failure sleeps its backoff (5 ms, then 10 ms) on the clock before the retry.
    let t0 = time.now();
    for due in [t0 + ms(5), t0 + ms(15)] {
        assert!(
            time.wait_for_sleep(due, LIVENESS),
            "no retry due at {:?}: {:?}",
            due - t0,
            time.sleeps()
        );
        time.advance_to(due);
    }
    block_on(within_liveness(async {
        while calls.lock().unwrap().len() < 3 || queue.failures(&key("a")) > 0 {
            Timer::after(Duration::from_millis(1)).await;
        }
    }));
    stop_tx.close();
    block_on(within_liveness(run));
    assert_eq!(*calls.lock().unwrap(), [t0, t0 + ms(5), t0 + ms(15)]);
    assert_eq!(queue.failures(&key("a")), 0);
    assert_eq!(reconcile_errors("test-retry"), 2);
}

#[test]
fn a_panicking_reconcile_is_an_error_retried_and_the_worker_goes_on() {
    let calls: Calls<String> = Arc::default();
    let c = Arc::clone(&calls);
    let reconcile = move |key: ObjectKey, stop: Sender<()>| {
        let seen = record(&c, key.name.into());
        // The panic is in the future, where the worker catches it.
        async move {
            if seen == 1 {
                panic!("bug in reconcile");
            }
            if seen == 3 {
                stop.close();
            }
            Ok::<_, String>(Action::Done)
        }
    };
    run_until_stopped("test-panic", 1, &["a", "b"], reconcile);
    // One worker: after `a` panicked it still reconciled `b`, then `a` again.
    assert_eq!(*calls.lock().unwrap(), ["a", "b", "a"]);
    assert_eq!(reconcile_errors("test-panic"), 1);
}

/// Lists `a`, then watches: `b` is added, then nothing more happens.
struct Quiet;
struct QuietStream(Vec<WatchEvent<ConfigMap>>);

impl EventStream<ConfigMap> for QuietStream {
    async fn next(&mut self) -> Option<Result<WatchEvent<ConfigMap>, Error>> {
        match self.0.pop() {
            Some(event) => Some(Ok(event)),
            None => smol::future::pending().await,
        }
    }
}

impl ListWatch<ConfigMap> for Quiet {
    type Stream = QuietStream;
    async fn list(&self, _: &ListParams) -> Result<ObjectList<ConfigMap>, Error> {
        let metadata = ListMeta::default();
        Ok(ObjectList {
            metadata,
            items: vec![cm("a")],
        })
    }
    async fn watch(&self, _: &WatchParams) -> Result<QuietStream, Error> {
        Ok(QuietStream(vec![WatchEvent::Added(cm("b"))]))
    }
}

fn cm(name: &str) -> ConfigMap {
    let metadata = ObjectMeta::named(Some("ns"), name);
    ConfigMap {
        metadata,
        ..ConfigMap::default()
    }
}

#[test]
fn feed_fills_the_store_before_enqueueing_the_mapped_keys() {
    let store = Store::new(|cm: &ConfigMap| cm.metadata.name.clone());
    let queue = WorkQueue::new("test-feed");
    let reader = store.clone();
    let owner_of = move |event: &Change<ConfigMap>, _: Option<&Option<String>>| {
        for key in object_keys(event) {
            assert!(
                reader.get(&key.namespace, &key.name).is_some(),
                "{key} not stored yet"
            );
        }
        object_keys(event)
            .into_iter()
            .map(|k| ObjectKey::new("owners", k.name))
            .collect()
    };
    let watcher = Watcher::new(Quiet, WatcherConfig::default());
    // Polled until fed; the slice decides nothing.
    let fed = async {
        while queue.len() < 2 {
            Timer::after(Duration::from_millis(1)).await;
        }
    };
    let feeding = feed(watcher, store.clone(), queue.clone(), owner_of);
    fn spawnable<T: Send + 'static>(task: T) -> T {
        task
    }
    block_on(within_liveness(or(spawnable(feeding), fed)));
    assert_eq!(store.len(), 2);
    assert_eq!(block_on(queue.get()), Some(ObjectKey::new("owners", "a")));
    assert_eq!(block_on(queue.get()), Some(ObjectKey::new("owners", "b")));
}

#[test]
fn an_idle_worker_holds_no_room_for_a_reconcile() {
    let reconcile = |_key: ObjectKey| async {
        let scratch = [1u8; 16 * 1024];
        smol::future::yield_now().await;
        std::hint::black_box(&scratch);
        Ok::<_, String>(Action::Done)
    };
    let worker = Arc::new(Worker {
        name: "test-idle-worker".to_owned(),
        queue: Controller::new("test-idle-worker", 1).queue(),
        reconcile,
        metrics: ReconcileMetrics::new("test-idle-worker"),
    });
    let size = std::mem::size_of_val(&worker.work());
    assert!(size < 1024, "a worker task takes {size} B");
}

#[test]
fn object_keys_names_the_object_of_an_event() {
    let relist = Change::relist(vec![cm("a"), cm("b")]);
    let keys: Vec<_> = relist.iter().flat_map(object_keys).collect();
    assert_eq!(keys, [key("a"), key("b")]);
    assert_eq!(object_keys(&Change::Deleted(cm("c"))), [key("c")]);
}
