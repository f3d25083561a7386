//! The copy writes one flow may have in flight at once, whatever its reconciles.
//!
//! Every request waits in the client's token bucket in the order it came, so a request of one
//! tenant waits behind every write the others have in flight. Bounded per reconcile alone, a
//! tenant running one fan-out per worker would keep four times [`super::MAX_IN_FLIGHT`] writes
//! ahead of each request of another tenant's reconcile. So the writes of one flow (a Mirror's
//! namespace) hold at most `cap` permits together; a waiter of a flow at its cap waits for one
//! of that flow's writes to end, and no other flow waits for it. A single Mirror's fan-out is
//! bounded as before; the Mirrors of one namespace running at once share the bound.
//!
//! A waiter dropped before its permit holds nothing; a permit dropped gives its place back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The writes in flight of each flow.
pub struct FlowPermits {
    cap: usize,
    /// A flow holding no permit has no entry.
    held: Mutex<HashMap<Arc<str>, usize>>,
    freed: event_listener::Event,
}

/// One write's place in its flow, given back when dropped.
pub struct FlowPermit {
    permits: Arc<FlowPermits>,
    flow: Arc<str>,
}

impl FlowPermits {
    /// Permits for at most `cap` writes in flight per flow (at least one).
    pub fn new(cap: usize) -> Arc<FlowPermits> {
        Arc::new(FlowPermits {
            cap: cap.max(1),
            held: Mutex::new(HashMap::new()),
            freed: event_listener::Event::new(),
        })
    }

    /// Waits until `flow` holds fewer than its cap and takes a permit.
    pub async fn take(self: &Arc<Self>, flow: &str) -> FlowPermit {
        loop {
            let listener = self.freed.listen();
            if let Some(permit) = self.try_take(flow) {
                return permit;
            }
            listener.await;
        }
    }

    fn try_take(self: &Arc<Self>, flow: &str) -> Option<FlowPermit> {
        let mut held = self.held();
        let n = held.get(flow).copied().unwrap_or(0);
        if n >= self.cap {
            return None;
        }
        let flow = held
            .get_key_value(flow)
            .map_or_else(|| Arc::from(flow), |(flow, _)| Arc::clone(flow));
        held.insert(Arc::clone(&flow), n + 1);
        Some(self.permit(flow))
    }

    fn permit(self: &Arc<Self>, flow: Arc<str>) -> FlowPermit {
        FlowPermit {
            permits: Arc::clone(self),
            flow,
        }
    }

    /// Permits `flow` holds now.
    #[cfg(test)]
    pub fn held_by(&self, flow: &str) -> usize {
        self.held().get(flow).copied().unwrap_or(0)
    }

    fn held(&self) -> MutexGuard<'_, HashMap<Arc<str>, usize>> {
        // Plain counts, valid even if a holder panicked.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for FlowPermit {
    fn drop(&mut self) {
        let mut held = self.permits.held();
        if let Some(n) = held.get_mut(&self.flow) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.flow);
            }
        }
        drop(held);
        // Few wait: at most one per reconcile running.
        self.permits.freed.notify(usize::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::now_or_never;
    use std::pin::pin;

    #[test]
    fn a_flow_at_its_cap_waits_and_another_flow_does_not() {
        let permits = FlowPermits::new(2);
        let big: Vec<_> = (0..2)
            .map(|_| now_or_never(permits.take("big")).expect("below the cap"))
            .collect();
        assert!(
            now_or_never(permits.take("big")).is_none(),
            "big is at its cap"
        );
        let small = now_or_never(permits.take("small")).expect("small is not held back by big");
        assert_eq!((permits.held_by("big"), permits.held_by("small")), (2, 1));
        drop(small);
        assert!(
            now_or_never(permits.take("big")).is_none(),
            "small's place is not big's"
        );
        drop(big);
        assert_eq!(permits.held_by("big"), 0);
    }

    #[test]
    fn a_waiter_is_woken_when_its_flow_gives_a_permit_back() {
        let permits = FlowPermits::new(1);
        let held = now_or_never(permits.take("a")).expect("free");
        let mut waiter = pin!(permits.take("a"));
        assert!(now_or_never(waiter.as_mut()).is_none(), "waits for `held`");
        drop(held);
        let _next = now_or_never(waiter).expect("woken by the permit given back");
        assert_eq!(permits.held_by("a"), 1);
    }

    #[test]
    fn a_waiter_dropped_before_its_turn_holds_nothing() {
        let permits = FlowPermits::new(1);
        let held = now_or_never(permits.take("a")).expect("free");
        assert!(
            now_or_never(permits.take("a")).is_none(),
            "dropped while waiting"
        );
        assert_eq!(permits.held_by("a"), 1);
        drop(held);
        assert_eq!(permits.held_by("a"), 0);
        assert!(now_or_never(permits.take("a")).is_some(), "nothing stuck");
    }
}
