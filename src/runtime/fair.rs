//! The order a work queue hands keys out in: round-robin across flows, first come first
//! served within one.
//!
//! A flow is a tenant: for Mirrors, the namespace they are in. Handed out in arrival order,
//! the keys of one tenant that creates many Mirrors at once would take every worker, and a
//! Mirror of another tenant created just after would wait for all of them. Here each flow
//! with keys waiting takes its turn, as Kubernetes API Priority and Fairness queues requests
//! (one priority level, a queue per flow), and no flow holds more than `cap` keys in
//! processing at once: with one worker more than `cap`, a newcomer always finds a worker while
//! another flow fans out, and a single flow keeps `cap` workers, as many as it had before.
//!
//! Every step is O(1): a flow at its cap is passed over, and at most `workers / cap` of them
//! can be at it.

use super::store::ObjectKey;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// What a key's flow is.
pub trait Flow {
    fn flow(&self) -> &str;
}

/// A Mirror's flow is its namespace: a tenant's, or one of the admin's source namespaces.
impl Flow for ObjectKey {
    fn flow(&self) -> &str {
        &self.namespace
    }
}

/// Keys waiting, by flow, and the turns of the flows.
pub struct FairQueue<T> {
    waiting: HashMap<Arc<str>, VecDeque<T>>,
    /// The flows with keys waiting, each once, in the order of their turns.
    turns: VecDeque<Arc<str>>,
    /// Keys of each flow in processing; a flow with none has no entry.
    running: HashMap<Arc<str>, usize>,
    cap: usize,
    len: usize,
}

impl<T: Flow> FairQueue<T> {
    /// A queue where no flow has more than `cap` keys in processing (at least one).
    pub fn new(cap: usize) -> FairQueue<T> {
        FairQueue {
            waiting: HashMap::new(),
            turns: VecDeque::new(),
            running: HashMap::new(),
            cap: cap.max(1),
            len: 0,
        }
    }

    /// Queues `key` at the end of its flow's keys.
    pub fn push(&mut self, key: T) {
        self.len += 1;
        if let Some(keys) = self.waiting.get_mut(key.flow()) {
            keys.push_back(key);
            return;
        }
        let flow: Arc<str> = Arc::from(key.flow());
        self.turns.push_back(Arc::clone(&flow));
        self.waiting.insert(flow, VecDeque::from([key]));
    }

    /// The first key of the next flow whose turn it is and that is below its cap, counted as
    /// in processing until [`finish`](Self::finish).
    pub fn pop(&mut self) -> Option<T> {
        for _ in 0..self.turns.len() {
            let flow = self.turns.pop_front()?;
            if self.running.get(&flow).is_some_and(|n| *n >= self.cap) {
                self.turns.push_back(flow);
                continue;
            }
            let keys = self.waiting.get_mut(&flow)?;
            let key = keys.pop_front()?;
            if keys.is_empty() {
                self.waiting.remove(&flow);
            } else {
                self.turns.push_back(Arc::clone(&flow));
            }
            *self.running.entry(flow).or_insert(0) += 1;
            self.len -= 1;
            return Some(key);
        }
        None
    }

    /// Ends the processing of a key [`pop`](Self::pop) handed out; true if its flow was at its
    /// cap, so a key waiting may now be handed out.
    pub fn finish(&mut self, key: &T) -> bool {
        let Some(n) = self.running.get_mut(key.flow()) else {
            return false;
        };
        let was_capped = *n >= self.cap;
        *n -= 1;
        if *n == 0 {
            self.running.remove(key.flow());
        }
        was_capped
    }

    /// Keys waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Drops every key waiting.
    pub fn clear(&mut self) {
        self.waiting.clear();
        self.turns.clear();
        self.len = 0;
    }
}

/// Test keys: the flow is what comes before the `/`.
#[cfg(test)]
impl Flow for &'static str {
    fn flow(&self) -> &str {
        self.split('/').next().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(queue: &mut FairQueue<&'static str>) -> Vec<&'static str> {
        std::iter::from_fn(|| {
            let key = queue.pop()?;
            queue.finish(&key);
            Some(key)
        })
        .collect()
    }

    #[test]
    fn a_small_flow_is_served_between_the_keys_of_a_big_one() {
        let mut queue = FairQueue::new(4);
        for key in ["big/1", "big/2", "big/3", "big/4", "big/5", "big/6"] {
            queue.push(key);
        }
        queue.push("small/1");
        queue.push("small/2");
        assert_eq!(queue.len(), 8);
        let order = drain(&mut queue);
        assert_eq!(
            order,
            [
                "big/1", "small/1", "big/2", "small/2", "big/3", "big/4", "big/5", "big/6"
            ]
        );
        assert_eq!(queue.len(), 0);
    }

    #[test]
    fn a_flow_at_its_cap_waits_while_another_is_served() {
        let mut queue = FairQueue::new(2);
        for key in ["big/1", "big/2", "big/3", "big/4"] {
            queue.push(key);
        }
        let held = [queue.pop(), queue.pop()];
        assert_eq!(held, [Some("big/1"), Some("big/2")]);
        assert_eq!(queue.pop(), None, "big is at its cap");
        queue.push("small/1");
        assert_eq!(
            queue.pop(),
            Some("small/1"),
            "the newcomer passes the capped flow"
        );
        assert!(!queue.finish(&"small/1"));
        assert!(queue.finish(&"big/1"), "big was at its cap");
        assert_eq!(queue.pop(), Some("big/3"));
    }

    #[test]
    fn a_single_flow_keeps_arrival_order_up_to_its_cap() {
        let mut queue = FairQueue::new(3);
        for key in ["a/1", "a/2", "a/3", "a/4"] {
            queue.push(key);
        }
        let first: Vec<_> = std::iter::from_fn(|| queue.pop()).collect();
        assert_eq!(first, ["a/1", "a/2", "a/3"]);
        queue.finish(&"a/2");
        assert_eq!(queue.pop(), Some("a/4"));
    }

    #[test]
    fn clearing_drops_the_waiting_keys_and_keeps_the_counts_of_those_running() {
        let mut queue = FairQueue::new(1);
        queue.push("a/1");
        queue.push("a/2");
        assert_eq!(queue.pop(), Some("a/1"));
        queue.clear();
        assert_eq!((queue.len(), queue.pop()), (0, None));
        assert!(queue.finish(&"a/1"));
        queue.push("a/3");
        assert_eq!(queue.pop(), Some("a/3"));
    }
}
