//! A one-shot signal: fired once, seen by every clone, awaited by any number of tasks.
//!
//! Shutdown is told this way at each level: the manager tells its runnables to stop, a
//! controller tells its in-flight reconciles, and a client told to cancel stops waiting (for
//! its rate limiter, for a 429's Retry-After) and sends nothing more. Requests already on the
//! wire still run to their reply, so nothing a stopping replica wrote can land after it
//! released its lease.

use smol::channel::{Receiver, Sender};

/// Fires the signal; dropping it does too.
pub struct Trigger(Sender<()>);

/// Whether the signal has fired; clones share it.
#[derive(Clone)]
pub struct Signal(Receiver<()>);

/// A new signal, not yet fired.
pub fn signal() -> (Trigger, Signal) {
    let (tx, rx) = smol::channel::bounded(1);
    (Trigger(tx), Signal(rx))
}

impl Trigger {
    pub fn fire(&self) {
        self.0.close();
    }
}

impl Signal {
    pub fn is_fired(&self) -> bool {
        self.0.is_closed()
    }

    /// Waits until the signal fires (at once if it has).
    pub async fn wait(&self) {
        let _ = self.0.recv().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smol::future::block_on;

    #[test]
    fn a_fired_signal_is_seen_by_every_clone_and_wakes_waiters() {
        let (trigger, signal) = signal();
        let other = signal.clone();
        assert!(!other.is_fired());
        let waiter = smol::spawn(async move { other.wait().await });
        trigger.fire();
        block_on(waiter);
        assert!(signal.is_fired());
    }

    #[test]
    fn a_dropped_trigger_fires() {
        let (trigger, signal) = signal();
        drop(trigger);
        assert!(signal.is_fired());
    }
}
