//! One e2e suite at a time in a process, each on a control plane of its own.
//!
//! Why: the e2e suites are modules of one test program (`tests/e2e`), and a suite may change
//! cluster-wide state: the operator's Lease, Mirrors that select every namespace, `make deploy`,
//! the audit log it counts requests in. `make test` runs each suite in a process of its own
//! (`hack/test-lanes.py`). A plain `cargo test` runs them all in one process; there this gate
//! keeps them apart: a test of another suite waits until every test of the running suite has
//! ended, then the running suite's control plane is stopped and the next suite starts its own.
//! Tests of one suite share its control plane and run side by side, as they always have.
//!
//! A test's suite is the first segment of its name (`faults::partition_on_a_10ms_link`), the
//! name libtest gives the thread it runs the test on. A thread a test spawns joins the suite
//! that holds the gate.

use std::cell::RefCell;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use super::control_plane::ControlPlane;

/// Who holds the gate: the suite, how many of its tests have entered and not ended, and what
/// they share (the control plane; a plain value in the tests of these rules).
struct Gate<P> {
    suite: Option<String>,
    running: usize,
    shared: Option<P>,
}

impl<P> Gate<P> {
    const fn new() -> Gate<P> {
        Gate {
            suite: None,
            running: 0,
            shared: None,
        }
    }

    /// A test of `suite` may enter when no test runs or the running ones are of its suite.
    fn may_enter(&self, suite: &str) -> bool {
        self.running == 0 || self.suite.as_deref() == Some(suite)
    }

    /// Enters a test of `suite` (once it may); returns what the previous suite shared, for the
    /// caller to stop.
    fn enter(&mut self, suite: &str) -> Option<P> {
        let mut previous = None;
        if self.suite.as_deref() != Some(suite) {
            previous = self.shared.take();
            self.suite = Some(suite.to_owned());
        }
        self.running += 1;
        previous
    }

    fn leave(&mut self) {
        self.running -= 1;
    }
}

static GATE: Mutex<Gate<&'static ControlPlane>> = Mutex::new(Gate::new());
static TURN: Condvar = Condvar::new();

thread_local! {
    /// Set on a test's thread once it has entered; leaves the gate when the thread ends.
    static ENTERED: RefCell<Option<Leave>> = const { RefCell::new(None) };
}

/// The control plane of the calling test's suite, started by `start` on the suite's first call;
/// waits while another suite's tests run.
pub fn control_plane(start: fn() -> ControlPlane) -> &'static ControlPlane {
    let Some(suite) = current_suite() else {
        return joined(start);
    };
    if ENTERED.with(|entered| entered.borrow().is_some()) {
        return joined(start);
    }
    let mut gate = lock();
    while !gate.may_enter(&suite) {
        gate = TURN.wait(gate).unwrap_or_else(PoisonError::into_inner);
    }
    if let Some(previous) = gate.enter(&suite) {
        previous.stop();
    }
    ENTERED.with(|entered| *entered.borrow_mut() = Some(Leave));
    started(&mut gate, start)
}

/// For a thread that is not a test's own (or has entered already): the gate holder's control
/// plane, started if it has none.
fn joined(start: fn() -> ControlPlane) -> &'static ControlPlane {
    started(&mut lock(), start)
}

/// The gate holder's control plane, started now if it has none yet.
fn started(
    gate: &mut Gate<&'static ControlPlane>,
    start: fn() -> ControlPlane,
) -> &'static ControlPlane {
    if let Some(control_plane) = gate.shared {
        return control_plane;
    }
    let control_plane: &'static ControlPlane = Box::leak(Box::new(start()));
    gate.shared = Some(control_plane);
    control_plane
}

/// `faults` for the test `faults::partition_on_a_10ms_link`; None off a test's thread.
fn current_suite() -> Option<String> {
    let thread = std::thread::current();
    let (suite, _) = thread.name()?.split_once("::")?;
    Some(suite.to_owned())
}

fn lock() -> MutexGuard<'static, Gate<&'static ControlPlane>> {
    GATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Dropped with the thread-locals of the test's thread, when the test has ended.
struct Leave;

impl Drop for Leave {
    fn drop(&mut self) {
        lock().leave();
        TURN.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::Gate;

    #[test]
    fn a_suite_waits_for_the_running_one_and_then_gets_what_it_shared_to_stop() {
        let mut gate = Gate::new();
        assert_eq!(
            gate.enter("faults"),
            None,
            "the first suite has nothing to stop"
        );
        gate.shared = Some("faults' control plane");
        assert!(
            gate.may_enter("faults"),
            "a second test of the running suite"
        );
        assert_eq!(gate.enter("faults"), None);
        gate.leave();
        assert!(!gate.may_enter("leader"), "one test of faults still runs");
        gate.leave();
        assert!(gate.may_enter("leader"));
        assert_eq!(gate.enter("leader"), Some("faults' control plane"));
        assert_eq!(gate.shared, None, "the new suite starts its own");
    }

    #[test]
    fn a_suite_coming_back_after_a_pause_keeps_what_it_shared() {
        let mut gate = Gate::new();
        gate.enter("mirror");
        gate.shared = Some(1);
        gate.leave();
        assert_eq!(gate.enter("mirror"), None);
        assert_eq!(gate.shared, Some(1));
    }
}
