//! Work queue: keys waiting to be reconciled, with controller-runtime's semantics.
//!
//! - A key is queued once however often it is added while it waits.
//! - A key being processed is never handed to a second worker; adding it meanwhile marks it
//!   dirty, and [`WorkQueue::done`] queues it again.
//! - Failures are retried after a per-key exponential delay ([`item_backoff`]: 5 ms doubling
//!   to 1000 s); [`WorkQueue::forget`] resets it after a success.
//! - Keys are handed out in turn across flows (a Mirror's namespace: [`fair`]), in arrival
//!   order within one, and a queue made [`WorkQueue::fair`] hands no flow more than its cap.
//! - After [`WorkQueue::shutdown`], `get` returns `None`: in-flight keys finish, no new one
//!   starts, and what was still queued is dropped (the next leader lists everything anyway).
//! - Delays are waited for on the queue's [`Clock`]: the real one, or a manual one in tests.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use super::backoff::item_backoff;
use super::fair::{FairQueue, Flow};
use crate::clock::Clock;
use crate::metrics::{self, Counter, Gauge};

/// A shared handle to one queue; clones are the same queue.
pub struct WorkQueue<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        WorkQueue {
            shared: Arc::clone(&self.shared),
        }
    }
}

struct Shared<T> {
    /// Rung when a key may be handed out, or the queue shuts down.
    wake: event_listener::Event,
    /// Held only for short bookkeeping, never across an `await`, hence a std mutex.
    book: Mutex<Book<T>>,
    depth: Gauge,
    adds: Counter,
    retries: Counter,
    clock: Clock,
}

struct Book<T> {
    /// Keys ready to hand out, each at most once (guarded by `dirty`).
    ready: FairQueue<T>,
    /// Keys added and not yet handed out: queued, or waiting for their processing to end.
    dirty: HashSet<T>,
    processing: HashSet<T>,
    failures: HashMap<T, u32>,
    /// The earliest time each delayed key is due.
    delayed: HashMap<T, Instant>,
    shut_down: bool,
}

impl<T: Flow + Clone + Eq + Hash + Send + Sync + 'static> WorkQueue<T> {
    /// A queue whose metrics carry `name` (the controller's name).
    pub fn new(name: &str) -> WorkQueue<T> {
        WorkQueue::fair(name, usize::MAX, Clock::real())
    }

    /// A queue that hands no flow more than `cap` keys to process at once, and waits out its
    /// delays on `clock`.
    pub fn fair(name: &str, cap: usize, clock: Clock) -> WorkQueue<T> {
        let labels = [("name", name)];
        WorkQueue {
            shared: Arc::new(Shared {
                wake: event_listener::Event::new(),
                book: Mutex::new(Book {
                    ready: FairQueue::new(cap),
                    dirty: HashSet::new(),
                    processing: HashSet::new(),
                    failures: HashMap::new(),
                    delayed: HashMap::new(),
                    shut_down: false,
                }),
                depth: metrics::gauge(
                    "workqueue_depth",
                    "Current depth of the work queue.",
                    &labels,
                ),
                adds: metrics::counter(
                    "workqueue_adds_total",
                    "Keys added to the work queue.",
                    &labels,
                ),
                retries: metrics::counter(
                    "workqueue_retries_total",
                    "Retries of failed keys.",
                    &labels,
                ),
                clock,
            }),
        }
    }

    /// Queues `key` unless it is already waiting; a key being processed is queued again when
    /// its processing is `done`.
    pub fn add(&self, key: T) {
        let mut book = self.book();
        if book.shut_down || !book.dirty.insert(key.clone()) {
            return;
        }
        self.shared.adds.inc();
        if !book.processing.contains(&key) {
            self.push(&mut book, key);
        }
    }

    /// Queues `key` after `delay`; of several pending delays for one key the earliest wins.
    pub fn add_after(&self, key: T, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let due = self.shared.clock.now() + delay;
        {
            let mut book = self.book();
            if book.shut_down || book.delayed.get(&key).is_some_and(|at| *at <= due) {
                return;
            }
            book.delayed.insert(key.clone(), due);
        }
        let queue = Arc::downgrade(&self.shared);
        let wait = self.shared.clock.sleep_until(due);
        smol::spawn(add_when_due(queue, key, due, wait)).detach();
    }

    /// Queues a key that failed after its per-key backoff, which doubles with each failure.
    pub fn requeue_rate_limited(&self, key: T) {
        let delay = {
            let mut book = self.book();
            let failures = book.failures.entry(key.clone()).or_insert(0);
            let delay = item_backoff(*failures);
            *failures = failures.saturating_add(1);
            delay
        };
        self.shared.retries.inc();
        self.add_after(key, delay);
    }

    /// Forgets the failures of `key`, after it succeeded.
    pub fn forget(&self, key: &T) {
        self.book().failures.remove(key);
    }

    /// How often `key` has been requeued since it last succeeded.
    pub fn failures(&self, key: &T) -> u32 {
        self.book().failures.get(key).copied().unwrap_or(0)
    }

    /// The next key to process, waiting for one; `None` once the queue is shut down.
    /// The caller must call [`done`](Self::done) when finished with it.
    /// Cancel-safe: a `get` dropped while it waits takes no key.
    pub async fn get(&self) -> Option<T> {
        loop {
            let listener = self.shared.wake.listen();
            {
                let mut book = self.book();
                if book.shut_down {
                    return None;
                }
                if let Some(key) = book.ready.pop() {
                    self.update_depth(&book);
                    book.dirty.remove(&key);
                    book.processing.insert(key.clone());
                    return Some(key);
                }
            }
            listener.await;
        }
    }

    /// Ends the processing of `key`; if it was added meanwhile, it is queued again.
    pub fn done(&self, key: &T) {
        let mut book = self.book();
        book.processing.remove(key);
        if book.ready.finish(key) {
            // Its flow was at its cap: one of its keys may be waiting for this.
            self.shared.wake.notify(usize::MAX);
        }
        if !book.shut_down && book.dirty.contains(key) {
            self.push(&mut book, key.clone());
        }
    }

    /// Stops handing out keys: waiting and future `get`s return `None`; adds are ignored.
    pub fn shutdown(&self) {
        let mut book = self.book();
        book.shut_down = true;
        book.dirty.clear();
        book.delayed.clear();
        book.ready.clear();
        self.update_depth(&book);
        self.shared.wake.notify(usize::MAX);
    }

    pub fn is_shutting_down(&self) -> bool {
        self.book().shut_down
    }

    /// Keys ready to be handed out.
    pub fn len(&self) -> usize {
        self.book().ready.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn push(&self, book: &mut Book<T>, key: T) {
        book.ready.push(key);
        self.update_depth(book);
        self.shared.wake.notify(usize::MAX);
    }

    fn update_depth(&self, book: &Book<T>) {
        self.shared.depth.set(book.ready.len() as f64);
    }

    fn book(&self) -> MutexGuard<'_, Book<T>> {
        self.shared.book.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Waits until `due` (`wait` ends then), then adds `key` unless a sooner delay took its place
/// or the queue is gone. Holds only a weak handle, so pending delays do not keep a dropped
/// queue alive.
async fn add_when_due<T>(queue: Weak<Shared<T>>, key: T, due: Instant, wait: crate::clock::Sleep)
where
    T: Flow + Clone + Eq + Hash + Send + Sync + 'static,
{
    wait.await;
    let Some(shared) = queue.upgrade() else {
        return;
    };
    let queue = WorkQueue { shared };
    {
        let mut book = queue.book();
        if book.delayed.get(&key) != Some(&due) {
            return;
        }
        book.delayed.remove(&key);
    }
    queue.add(key);
}

#[cfg(test)]
mod tests;
