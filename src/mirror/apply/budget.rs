//! The bytes the copy writes in flight may hold at once, shared by every reconcile.
//!
//! A write that held its body and the object the server answers with would hold about twice
//! the copy's content: bounded by count alone ([`super::MAX_IN_FLIGHT`] per namespace), 16 ×
//! 2 × 900 KB at once for a 900 KB source, per namespace fanning out. So each write takes its weight
//! ([`weight`]) from one [`ByteBudget`] before it starts. Today no copy write holds the
//! content: creates and updates share it (`copy_body.rs`) and are answered with the metadata
//! alone, so each weighs its head and reply only, and the count binds first; the budget is
//! what a write that holds bytes of its own would take them from. The watch event each write
//! brings back is read and decoded one at a time by the copy watch, whatever the writes in
//! flight.
//!
//! Waiters are served in turn: one waits for its bytes while the others queue behind it, so
//! a big write is never starved by small ones, and no waiter holds part of the budget.

use smol::lock::Mutex as TurnLock;
use std::sync::{Arc, Mutex, MutexGuard};

/// The whole budget: 8 MiB, an eighth of the 64 MiB a replica's memory limit is sized to,
/// room for the full count of writes and for the bytes of four 900 KB bodies besides.
pub const WRITE_BYTES_IN_FLIGHT: usize = 8 * 1024 * 1024;

/// What a write holds besides content: its head, the reply's metadata, the framing.
const WRITE_OVERHEAD: usize = 4 * 1024;

/// The weight of a write that holds `content` bytes of its own.
pub fn weight(content: usize) -> usize {
    content + WRITE_OVERHEAD
}

/// A weighted semaphore over bytes.
pub struct ByteBudget {
    total: usize,
    free: Mutex<usize>,
    freed: event_listener::Event,
    /// Held by the one waiter whose turn it is.
    turn: TurnLock<()>,
}

/// Bytes taken from a [`ByteBudget`], given back when dropped.
pub struct Taken {
    budget: Arc<ByteBudget>,
    bytes: usize,
}

impl ByteBudget {
    pub fn new(total: usize) -> Arc<ByteBudget> {
        Arc::new(ByteBudget {
            total,
            free: Mutex::new(total),
            freed: event_listener::Event::new(),
            turn: TurnLock::new(()),
        })
    }

    /// Waits until `bytes` are free and takes them. A write weighing more than the whole
    /// budget takes all of it, and so runs alone.
    pub async fn take(self: &Arc<Self>, bytes: usize) -> Taken {
        let bytes = bytes.min(self.total);
        let _turn = self.turn.lock().await;
        loop {
            let listener = self.freed.listen();
            {
                let mut free = self.free();
                if *free >= bytes {
                    *free -= bytes;
                    return Taken {
                        budget: Arc::clone(self),
                        bytes,
                    };
                }
            }
            listener.await;
        }
    }

    /// Bytes not taken now.
    #[cfg(test)]
    pub fn available(&self) -> usize {
        *self.free()
    }

    fn free(&self) -> MutexGuard<'_, usize> {
        // A panic while holding this lock cannot leave the count half-changed.
        self.free
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        *self.budget.free() += self.bytes;
        self.budget.freed.notify(usize::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::now_or_never;
    use std::time::Duration;

    #[test]
    fn a_take_waits_until_enough_bytes_are_given_back() {
        let budget = ByteBudget::new(100);
        let first = now_or_never(budget.take(60)).expect("free");
        assert!(now_or_never(budget.take(60)).is_none(), "only 40 free");
        drop(first);
        let second = now_or_never(budget.take(60)).expect("given back");
        assert_eq!(budget.available(), 40);
        drop(second);
        assert_eq!(budget.available(), 100);
    }

    #[test]
    fn a_write_heavier_than_the_budget_runs_alone() {
        let budget = ByteBudget::new(100);
        let alone = now_or_never(budget.take(1_000)).expect("takes the whole budget");
        assert_eq!(budget.available(), 0);
        drop(alone);
        assert_eq!(budget.available(), 100);
    }

    #[test]
    fn a_big_waiter_is_served_before_later_small_ones() {
        let budget = ByteBudget::new(100);
        smol::block_on(async {
            let held = budget.take(50).await;
            let big = smol::spawn({
                let budget = Arc::clone(&budget);
                async move { budget.take(100).await }
            });
            smol::Timer::after(Duration::from_millis(20)).await;
            let small = smol::spawn({
                let budget = Arc::clone(&budget);
                async move { budget.take(10).await }
            });
            smol::Timer::after(Duration::from_millis(20)).await;
            assert_eq!(budget.available(), 50, "the small one waits its turn");
            drop(held);
            drop(big.await);
            drop(small.await);
            assert_eq!(budget.available(), 100);
        });
    }

    #[test]
    fn four_writes_holding_twice_900_kb_fit_and_sixteen_small_ones() {
        assert_eq!(WRITE_BYTES_IN_FLIGHT / weight(2 * 900 * 1024), 4);
        assert!(WRITE_BYTES_IN_FLIGHT / weight(2 * 1024) >= super::super::MAX_IN_FLIGHT);
    }
}
