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

/// Who holds the gate: the suite, how many of its tests have entered and not ended, and the
/// control plane they share.
struct Gate {
    suite: Option<String>,
    running: usize,
    control_plane: Option<&'static ControlPlane>,
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    suite: None,
    running: 0,
    control_plane: None,
});
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
    while gate.running > 0 && gate.suite.as_deref() != Some(suite.as_str()) {
        gate = TURN.wait(gate).unwrap_or_else(PoisonError::into_inner);
    }
    if gate.suite.as_deref() != Some(suite.as_str()) {
        if let Some(previous) = gate.control_plane.take() {
            previous.stop();
        }
        gate.suite = Some(suite);
    }
    gate.running += 1;
    ENTERED.with(|entered| *entered.borrow_mut() = Some(Leave));
    started(&mut gate, start)
}

/// For a thread that is not a test's own (or has entered already): the gate holder's control
/// plane, started if it has none.
fn joined(start: fn() -> ControlPlane) -> &'static ControlPlane {
    started(&mut lock(), start)
}

/// The gate holder's control plane, started now if it has none yet.
fn started(gate: &mut Gate, start: fn() -> ControlPlane) -> &'static ControlPlane {
    if let Some(control_plane) = gate.control_plane {
        return control_plane;
    }
    let control_plane: &'static ControlPlane = Box::leak(Box::new(start()));
    gate.control_plane = Some(control_plane);
    control_plane
}

/// `faults` for the test `faults::partition_on_a_10ms_link`; None off a test's thread.
fn current_suite() -> Option<String> {
    let thread = std::thread::current();
    let (suite, _) = thread.name()?.split_once("::")?;
    Some(suite.to_owned())
}

fn lock() -> MutexGuard<'static, Gate> {
    GATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Dropped with the thread-locals of the test's thread, when the test has ended.
struct Leave;

impl Drop for Leave {
    fn drop(&mut self) {
        lock().running -= 1;
        TURN.notify_all();
    }
}
