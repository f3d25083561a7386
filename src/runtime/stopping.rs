//! Stopping: a signal that long work checks, so a shutdown need not wait for all of it.
//!
//! The controller lets in-flight reconciles finish when it stops, but one reconcile may fan out
//! into a thousand rate-limited writes. Work that can be resumed later (the next run lists
//! everything again) watches this signal and ends early instead of holding up the lease
//! release and the exit.

use smol::channel::{Receiver, Sender};

/// Starts the stop; dropping it does too.
pub struct StopTrigger(Sender<()>);

/// Tells whether stopping has begun; clones share the signal.
#[derive(Clone)]
pub struct Stopping(Receiver<()>);

/// A new signal, not yet given.
pub fn stopping() -> (StopTrigger, Stopping) {
    let (tx, rx) = smol::channel::bounded(1);
    (StopTrigger(tx), Stopping(rx))
}

impl StopTrigger {
    pub fn stop(&self) {
        self.0.close();
    }
}

impl Stopping {
    pub fn is_stopping(&self) -> bool {
        self.0.is_closed()
    }

    /// Waits until stopping begins.
    pub async fn wait(&self) {
        let _ = self.0.recv().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smol::future::block_on;

    #[test]
    fn stopping_is_seen_by_every_clone_and_wakes_waiters() {
        let (trigger, stopping) = stopping();
        let other = stopping.clone();
        assert!(!other.is_stopping());
        let waiter = smol::spawn(async move { other.wait().await });
        trigger.stop();
        block_on(waiter);
        assert!(stopping.is_stopping());
    }

    #[test]
    fn a_dropped_trigger_stops() {
        let (trigger, stopping) = stopping();
        drop(trigger);
        assert!(stopping.is_stopping());
    }
}
