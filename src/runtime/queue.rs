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

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use smol::Timer;

use super::backoff::item_backoff;
use super::fair::{FairQueue, Flow};
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
        WorkQueue::fair(name, usize::MAX)
    }

    /// A queue that hands no flow more than `cap` keys to process at once.
    pub fn fair(name: &str, cap: usize) -> WorkQueue<T> {
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
        let due = Instant::now() + delay;
        {
            let mut book = self.book();
            if book.shut_down || book.delayed.get(&key).is_some_and(|at| *at <= due) {
                return;
            }
            book.delayed.insert(key.clone(), due);
        }
        let queue = Arc::downgrade(&self.shared);
        smol::spawn(add_when_due(queue, key, due)).detach();
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

/// Waits until `due`, then adds `key` unless a sooner delay took its place or the queue is
/// gone. Holds only a weak handle, so pending delays do not keep a dropped queue alive.
async fn add_when_due<T>(queue: Weak<Shared<T>>, key: T, due: Instant)
where
    T: Flow + Clone + Eq + Hash + Send + Sync + 'static,
{
    Timer::at(due).await;
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
mod tests {
    use super::*;
    use smol::block_on;
    use smol::future::FutureExt as _;

    fn queue(name: &str) -> WorkQueue<&'static str> {
        WorkQueue::new(name)
    }

    #[test]
    fn a_key_is_queued_once_however_often_it_is_added() {
        let q = queue("test-dedup");
        for key in ["a", "a", "b", "a"] {
            q.add(key);
        }
        assert_eq!(q.len(), 2);
        assert_eq!(block_on(q.get()), Some("a"));
        assert_eq!(block_on(q.get()), Some("b"));
        assert!(q.is_empty());
        assert_eq!(q.shared.adds.get(), 2);
    }

    #[test]
    fn a_key_in_process_is_not_handed_out_again_until_done() {
        let q = queue("test-processing");
        q.add("a");
        assert_eq!(block_on(q.get()), Some("a"));
        q.add("a");
        q.add("b");
        assert_eq!(block_on(q.get()), Some("b"));
        assert!(
            q.is_empty(),
            "a is dirty but must wait for its processing to end"
        );
        q.done(&"a");
        assert_eq!(block_on(q.get()), Some("a"));
    }

    #[test]
    fn a_key_not_added_during_processing_is_not_requeued() {
        let q = queue("test-clean-done");
        q.add("a");
        assert_eq!(block_on(q.get()), Some("a"));
        q.done(&"a");
        assert!(q.is_empty());
    }

    #[test]
    fn failures_count_up_and_forget_resets_them() {
        let q = queue("test-failures");
        q.add("a");
        let key = block_on(q.get());
        assert_eq!(key, Some("a"));
        for expected in 1..=3 {
            q.requeue_rate_limited("a");
            assert_eq!(q.failures(&"a"), expected);
        }
        assert_eq!(q.shared.retries.get(), 3);
        q.forget(&"a");
        assert_eq!(q.failures(&"a"), 0);
    }

    #[test]
    fn a_failed_key_comes_back_after_its_backoff() {
        let q = queue("test-requeue");
        let start = Instant::now();
        q.requeue_rate_limited("a");
        assert!(q.is_empty(), "the retry must wait for its backoff");
        assert_eq!(block_on(q.get()), Some("a"));
        assert!(start.elapsed() >= item_backoff(0));
    }

    #[test]
    fn add_after_delays_and_the_earliest_delay_wins() {
        let q = queue("test-add-after");
        let start = Instant::now();
        q.add_after("a", Duration::from_secs(60));
        q.add_after("a", Duration::from_millis(3));
        assert!(q.is_empty());
        assert_eq!(block_on(q.get()), Some("a"));
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(3) && waited < Duration::from_secs(60));
    }

    #[test]
    fn shutdown_lets_in_flight_keys_finish_and_hands_out_nothing_new() {
        let q = queue("test-shutdown");
        q.add("a");
        q.add("b");
        assert_eq!(block_on(q.get()), Some("a"));
        q.shutdown();
        assert_eq!(block_on(q.get()), None);
        q.add("c");
        q.done(&"a");
        assert_eq!(block_on(q.get()), None);
        assert!(q.is_empty());
    }

    #[test]
    fn shutdown_wakes_a_waiting_worker() {
        let q = queue("test-shutdown-wakes");
        let waiter = {
            let q = q.clone();
            smol::spawn(async move { q.get().await })
        };
        q.shutdown();
        assert_eq!(block_on(waiter), None);
    }

    #[test]
    fn keys_are_handed_out_in_turn_across_flows() {
        let q = queue("test-fair");
        for key in ["big/1", "big/2", "big/3", "big/4", "small/1", "small/2"] {
            q.add(key);
        }
        let order: Vec<_> = (0..6).filter_map(|_| block_on(q.get())).collect();
        assert_eq!(
            order,
            ["big/1", "small/1", "big/2", "small/2", "big/3", "big/4"]
        );
    }

    #[test]
    fn a_flow_at_its_cap_gets_a_key_again_when_one_is_done() {
        let q = WorkQueue::fair("test-fair-cap", 1);
        q.add("a/1");
        q.add("a/2");
        assert_eq!(block_on(q.get()), Some("a/1"));
        let waiter = {
            let q = q.clone();
            smol::spawn(async move { q.get().await })
        };
        block_on(Timer::after(Duration::from_millis(20)));
        assert!(!waiter.is_finished(), "a/2 must wait for a/1");
        q.done(&"a/1");
        assert_eq!(block_on(waiter), Some("a/2"));
    }

    #[test]
    fn a_get_dropped_while_it_waits_takes_no_key() {
        let q = queue("test-fair-cancel");
        let dropped = block_on(async {
            q.get()
                .or(async {
                    Timer::after(Duration::from_millis(5)).await;
                    None
                })
                .await
        });
        assert_eq!(dropped, None);
        q.add("a/1");
        assert_eq!(block_on(q.get()), Some("a/1"));
    }
}
