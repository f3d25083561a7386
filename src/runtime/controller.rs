//! Controller: N workers taking keys from a work queue and reconciling them, stopped cleanly.
//!
//! Stopping is the Manager's safety guarantee: after `run` returns, no reconcile is running
//! and none will start, so the lease can be released without another replica's writes racing
//! ours. [`feed`] connects a watcher to a store and to the queue.

use std::any::Any;
use std::fmt::Display;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::change::Change;
use super::list_watch::ListWatch;
use super::listed_page::ListedPage;
use super::queue::WorkQueue;
use super::store::{ObjectKey, Store};
use super::watcher::Watcher;
use crate::clock::Clock;
use crate::kube::api::Resource;
use crate::metrics::{self, Counter, Histogram};
use smol::future::FutureExt as _;

/// What a successful reconcile asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing until an event enqueues the key again.
    Done,
    /// Reconcile again after this long (e.g. to re-check something no watch covers).
    RequeueAfter(Duration),
}

/// Runs reconciles for the keys of one queue.
pub struct Controller {
    name: String,
    queue: WorkQueue<ObjectKey>,
    workers: usize,
}

impl Controller {
    /// A controller named `name` (metrics, logs) with `workers` concurrent reconciles per
    /// flow (at least one; a Mirror's flow is its namespace) and its own queue. One worker
    /// more serves the other flows while one flow holds all of its `workers`.
    pub fn new(name: &str, workers: usize) -> Controller {
        Controller::with_clock(name, workers, Clock::real())
    }

    /// [`Controller::new`] whose queue waits out its retries and delays on `clock`.
    pub fn with_clock(name: &str, workers: usize, clock: Clock) -> Controller {
        let workers = workers.max(1);
        Controller {
            name: name.to_owned(),
            queue: WorkQueue::fair(name, workers, clock),
            workers: workers + 1,
        }
    }

    /// The queue to enqueue keys on, e.g. from [`feed`].
    pub fn queue(&self) -> WorkQueue<ObjectKey> {
        self.queue.clone()
    }

    /// Reconciles keys until `stop` completes, then shuts the queue down and returns once
    /// every in-flight reconcile has finished; no reconcile starts after `stop`. Dropping the
    /// returned future cancels the workers at their next `await`.
    ///
    /// On `Ok` the key's failures are forgotten (and `RequeueAfter` queues it again later);
    /// on `Err` the error is logged and the key retried after its per-key backoff.
    pub async fn run<R, F, E>(self, reconcile: R, stop: impl Future<Output = ()>)
    where
        R: Fn(ObjectKey) -> F + Send + Sync + 'static,
        F: Future<Output = Result<Action, E>> + Send + 'static,
        E: Display + Send + 'static,
    {
        let worker = Arc::new(Worker {
            metrics: ReconcileMetrics::new(&self.name),
            name: self.name,
            queue: self.queue.clone(),
            reconcile,
        });
        let tasks: Vec<_> = (0..self.workers)
            .map(|_| smol::spawn(Arc::clone(&worker).work()))
            .collect();
        stop.await;
        log::info!("stopping controller {}", worker.name);
        self.queue.shutdown();
        for task in tasks {
            task.await;
        }
    }
}

struct Worker<R> {
    name: String,
    queue: WorkQueue<ObjectKey>,
    reconcile: R,
    metrics: ReconcileMetrics,
}

impl<R, F, E> Worker<R>
where
    R: Fn(ObjectKey) -> F + Send + Sync + 'static,
    F: Future<Output = Result<Action, E>> + Send + 'static,
    E: Display + Send + 'static,
{
    async fn work(self: Arc<Self>) {
        while let Some(key) = self.queue.get().await {
            let started = Instant::now();
            // A panic in a reconcile is caught here, as controller-runtime's RecoverPanic does:
            // uncaught it would end this worker task silently while the replica keeps leading.
            // Boxed: inline, the reconcile's state (kilobytes) would be part of every worker's
            // task for its whole life, idle workers included.
            let outcome = AssertUnwindSafe(Box::pin((self.reconcile)(key.clone())))
                .catch_unwind()
                .await;
            self.metrics.time.observe(started.elapsed().as_secs_f64());
            match outcome {
                Ok(result) => self.settle(&key, result),
                Err(panic) => self.settle_panic(&key, panic.as_ref()),
            }
            self.queue.done(&key);
        }
    }

    /// A panicked reconcile counts as a failed one: logged as an error and retried with backoff.
    fn settle_panic(&self, key: &ObjectKey, panic: &(dyn Any + Send)) {
        let message = panic
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("(no message)");
        log::error!(
            "{}: reconciling {key} panicked, will retry: {message}",
            self.name
        );
        self.metrics.error.inc();
        self.metrics.errors.inc();
        self.queue.requeue_rate_limited(key.clone());
    }

    fn settle(&self, key: &ObjectKey, result: Result<Action, E>) {
        match result {
            Ok(Action::Done) => {
                self.queue.forget(key);
                self.metrics.success.inc();
            }
            Ok(Action::RequeueAfter(delay)) => {
                self.queue.forget(key);
                self.queue.add_after(key.clone(), delay);
                self.metrics.requeue_after.inc();
            }
            Err(e) => {
                log::warn!("{}: reconciling {key} failed, will retry: {e}", self.name);
                self.metrics.error.inc();
                self.metrics.errors.inc();
                self.queue.requeue_rate_limited(key.clone());
            }
        }
    }
}

/// controller-runtime's reconcile metrics, looked up once per controller.
struct ReconcileMetrics {
    success: Counter,
    error: Counter,
    requeue_after: Counter,
    errors: Counter,
    time: Histogram,
}

impl ReconcileMetrics {
    fn new(controller: &str) -> ReconcileMetrics {
        let total = |result| {
            metrics::counter(
                "controller_runtime_reconcile_total",
                "Reconciles per controller and result.",
                &[("controller", controller), ("result", result)],
            )
        };
        let labels = [("controller", controller)];
        ReconcileMetrics {
            success: total("success"),
            error: total("error"),
            requeue_after: total("requeue_after"),
            errors: metrics::counter(
                "controller_runtime_reconcile_errors_total",
                "Reconciles that returned an error.",
                &labels,
            ),
            time: metrics::histogram(
                "controller_runtime_reconcile_time_seconds",
                "Time per reconcile.",
                &labels,
            ),
        }
    }
}

/// Feeds a watcher's events into `store` and enqueues the keys `map` names for each event
/// (after the store has the event, so a reconcile sees it). `map` is also given the projection
/// the store held for the event's object before it, if any. Watch errors are logged; the
/// watcher backs off by itself. Returns when the queue is shut down, noticed at the next
/// event: race it with the stop signal to end it at once. A relist's objects are freed a page
/// at a time, after the store has them all ([`super::listed_page`] says why).
pub async fn feed<K, S, P>(
    mut watcher: Watcher<K, S>,
    store: Store<K, P>,
    queue: WorkQueue<ObjectKey>,
    map: impl Fn(&Change<K>, Option<&P>) -> Vec<ObjectKey>,
) where
    K: Resource,
    S: ListWatch<K>,
    P: Clone,
{
    let mut page = ListedPage::default();
    while !queue.is_shutting_down() {
        match watcher.next().await {
            Ok(event) => {
                let previous = store.apply(&event);
                for key in map(&event, previous.as_ref()) {
                    queue.add(key);
                }
                page.keep(event, watcher.page_remaining());
            }
            Err(e) => log::warn!("watching {} failed, will retry: {e}", K::KIND),
        }
    }
}

/// The key of the object in an event (none for the start and end of a relist): the mapping
/// for a controller's own kind.
pub fn object_keys<K: Resource>(event: &Change<K>) -> Vec<ObjectKey> {
    match event {
        Change::Listed(o) | Change::Applied(o) | Change::Deleted(o) => {
            ObjectKey::of(o).into_iter().collect()
        }
        Change::Relisting | Change::Relisted => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
