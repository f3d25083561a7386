//! Whether a store holds a complete list: not before its first list has completed, and not while
//! a relist is under way. Controllers wait for it before they act on what a store lacks.

use crate::signal::{Signal, Trigger, signal};
use std::sync::{Arc, Mutex, MutexGuard};

/// Shared by every clone of a store. Each relist arms a fresh signal; its completion fires it.
#[derive(Clone)]
pub(super) struct Readiness {
    current: Arc<Mutex<(Trigger, Signal)>>,
}

impl Readiness {
    pub(super) fn new() -> Readiness {
        Readiness {
            current: Arc::new(Mutex::new(signal())),
        }
    }

    /// A relist began: not ready until it completes.
    pub(super) fn relisting(&self) {
        let mut current = self.lock();
        if current.1.is_fired() {
            *current = signal();
        }
    }

    /// A list completed.
    pub(super) fn listed(&self) {
        self.lock().0.fire();
    }

    pub(super) fn is_ready(&self) -> bool {
        self.lock().1.is_fired()
    }

    pub(super) async fn wait(&self) {
        loop {
            let armed = self.lock().1.clone();
            armed.wait().await;
            if self.is_ready() {
                return;
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, (Trigger, Signal)> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }
}
