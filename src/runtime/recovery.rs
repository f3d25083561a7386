//! Recovery: a server that failed to answer answers again, and the watches waiting out their
//! backoff hear of it.
//!
//! Why: a watch that cannot reach its server backs off up to a minute (client-go's reflector), so
//! after a long outage each waits out whatever is left of its last delay, tens of seconds after
//! the server is back. A member reads its hub so: after a hub outage, its copies would lag by as
//! much. One request that is answered again (the member's heartbeat, which probes the hub often
//! while it fails) is news for every watch of that server: they retry soon, each after a random
//! part of a short spread, so a thousand members do not all reconnect in the same instant.

use event_listener::Event;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Shared by every clone: the requests to one server and the watches of it.
#[derive(Clone, Default)]
pub struct Recovery {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    /// A request got no answer, and none was answered since.
    failing: AtomicBool,
    /// Incremented each time the server answers after failing.
    recoveries: AtomicU64,
    answered_again: Event,
}

impl Recovery {
    /// A request got no answer (no reply, no connection): the server may be unreachable.
    pub fn unanswered(&self) {
        self.shared.failing.store(true, Ordering::SeqCst);
    }

    /// A request was answered; after [`Recovery::unanswered`], every waiter wakes.
    pub fn answered(&self) {
        if self.shared.failing.swap(false, Ordering::SeqCst) {
            self.shared.recoveries.fetch_add(1, Ordering::SeqCst);
            self.shared.answered_again.notify(usize::MAX);
        }
    }

    /// Whether the last request got no answer.
    pub fn is_failing(&self) -> bool {
        self.shared.failing.load(Ordering::SeqCst)
    }

    /// How many times the server answered again so far.
    pub fn count(&self) -> u64 {
        self.shared.recoveries.load(Ordering::SeqCst)
    }

    /// Resolves once the server answered again after `seen` recoveries.
    pub async fn after(&self, seen: u64) {
        loop {
            if self.count() > seen {
                return;
            }
            let listener = self.shared.answered_again.listen();
            if self.count() > seen {
                return;
            }
            listener.await;
        }
    }
}

impl fmt::Debug for Recovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recovery")
            .field("failing", &self.is_failing())
            .field("recoveries", &self.count())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::now_or_never;
    use std::pin::pin;

    #[test]
    fn waiters_wake_when_the_server_answers_after_failing_and_only_then() {
        let recovery = Recovery::default();
        let seen = recovery.count();
        let mut waiter = pin!(recovery.after(seen));
        recovery.answered();
        assert!(
            now_or_never(waiter.as_mut()).is_none(),
            "an answer with no failure before it is no news"
        );
        recovery.unanswered();
        assert!(now_or_never(waiter.as_mut()).is_none(), "still failing");
        recovery.answered();
        assert!(now_or_never(waiter).is_some(), "answered again");
        assert!(!recovery.is_failing());
        assert!(
            now_or_never(recovery.after(recovery.count())).is_none(),
            "one recovery wakes once"
        );
    }
}
