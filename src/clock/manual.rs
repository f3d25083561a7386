//! The manual clock: time that moves only when a test moves it, and the tasks waiting for it.
//!
//! Its instants are real `Instant`s (the moment it was made, plus what the test has added), so
//! code under test stores and compares them as usual. A task's wait registers here and is woken
//! by [`ManualClock::advance`]; [`ManualClock::run`] drives a future on the test's thread and,
//! whenever the future waits for nothing but this clock, moves the clock to the next wake, as
//! tokio's paused time does.
//!
//! Waits come in two kinds, so a test can tell a task that is idle from one that is working: a
//! *sleep* waits for time to pass and does nothing else (the lease loop between renewals), a
//! *timeout* races some work ([`super::Clock::before`]: a request's deadline).

use super::{Clock, MANUAL_IO_LIVENESS};
use event_listener::{Event, Listener as _};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// A clock that tests move by hand; clones share it. [`ManualClock::clock`] is what the code
/// under test is given.
#[derive(Clone)]
pub struct ManualClock {
    shared: Arc<Manual>,
}

pub(super) struct Manual {
    origin: Instant,
    state: Mutex<State>,
    /// Notified each time a task starts waiting, so a test can wait until one sleeps.
    waiting: Event,
}

struct State {
    elapsed: Duration,
    waiters: BTreeMap<u64, Waiter>,
    next_id: u64,
}

struct Waiter {
    at: Instant,
    wait: Wait,
    waker: Waker,
}

/// What a waiting task is doing meanwhile (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wait {
    Sleep,
    Timeout,
}

impl Manual {
    pub(super) fn now(&self) -> Instant {
        self.origin + self.lock().elapsed
    }

    pub(super) fn elapsed(&self) -> Duration {
        self.lock().elapsed
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Plain records: still valid if a holder panicked.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl ManualClock {
    /// A clock standing at the moment it is made, until a test moves it.
    pub fn new() -> ManualClock {
        ManualClock {
            shared: Arc::new(Manual {
                origin: Instant::now(),
                state: Mutex::new(State {
                    elapsed: Duration::ZERO,
                    waiters: BTreeMap::new(),
                    next_id: 0,
                }),
                waiting: Event::new(),
            }),
        }
    }

    /// The clock to give the code under test.
    pub fn clock(&self) -> Clock {
        Clock::manual(self.shared.clone())
    }

    pub fn now(&self) -> Instant {
        self.shared.now()
    }

    /// How far the clock has been moved since it was made.
    pub fn elapsed(&self) -> Duration {
        self.shared.elapsed()
    }

    /// Moves the clock `by` forward and wakes every task whose wait is over.
    pub fn advance(&self, by: Duration) {
        let to = self.now() + by;
        self.advance_to(to);
    }

    /// Moves the clock forward to `at` (never back) and wakes every task whose wait is over.
    pub fn advance_to(&self, at: Instant) {
        let due: Vec<Waker> = {
            let mut state = self.shared.lock();
            let now = self.shared.origin + state.elapsed;
            if at > now {
                state.elapsed = at - self.shared.origin;
            }
            let now = self.shared.origin + state.elapsed;
            let ids: Vec<u64> = (state.waiters.iter())
                .filter(|(_, w)| w.at <= now)
                .map(|(id, _)| *id)
                .collect();
            (ids.iter())
                .filter_map(|id| state.waiters.remove(id))
                .map(|w| w.waker)
                .collect()
        };
        due.into_iter().for_each(Waker::wake);
    }

    /// The earliest instant a task waits for, if any waits.
    pub fn next_wake(&self) -> Option<Instant> {
        self.shared.lock().waiters.values().map(|w| w.at).min()
    }

    /// The instants the sleeping tasks wait for (not the timeouts), earliest first.
    pub fn sleeps(&self) -> Vec<Instant> {
        let state = self.shared.lock();
        let mut sleeps: Vec<Instant> = (state.waiters.values())
            .filter(|w| w.wait == Wait::Sleep)
            .map(|w| w.at)
            .collect();
        sleeps.sort();
        sleeps
    }

    /// Blocks the calling thread until a task sleeps until exactly `at` (it is idle, waiting
    /// for this clock to reach `at`), at most `limit` of real time, a liveness bound for the
    /// tasks of other threads the test waits for. Returns whether one does.
    pub fn wait_for_sleep(&self, at: Instant, limit: Duration) -> bool {
        self.wait_for(limit, |w| w.at == at && w.wait == Wait::Sleep)
    }

    /// Blocks the calling thread until some task sleeps, at most `limit` of real time; the
    /// earliest instant a task sleeps until, if one does.
    pub fn wait_for_any_sleep(&self, limit: Duration) -> Option<Instant> {
        self.wait_for(limit, |w| w.wait == Wait::Sleep);
        self.sleeps().first().copied()
    }

    /// [`ManualClock::wait_for_sleep`] for any wait until exactly `at`, a timeout's too.
    pub fn wait_for_wake(&self, at: Instant, limit: Duration) -> bool {
        self.wait_for(limit, |w| w.at == at)
    }

    fn wait_for(&self, limit: Duration, wanted: impl Fn(&Waiter) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        let found = || self.shared.lock().waiters.values().any(&wanted);
        loop {
            let listener = self.shared.waiting.listen();
            if found() {
                return true;
            }
            if listener.wait_deadline(deadline).is_none() {
                return found();
            }
        }
    }

    /// Runs `future` to its end on this thread. Whenever it waits for nothing but this clock,
    /// the clock moves to the next wake; a future that waits for another thread (a spawned
    /// task, IO) is waited for, at most [`MANUAL_IO_LIVENESS`] at a time, and must not also
    /// wait for this clock meanwhile, or the clock would move on without it: drive such a
    /// future by hand with [`ManualClock::advance`].
    pub fn run<T>(&self, future: impl Future<Output = T>) -> T {
        self.drive(future, None)
            .unwrap_or_else(|| unreachable!("a drive without an end ends with the output"))
    }

    /// [`ManualClock::run`] for at most `limit` on this clock: `None` when the future still
    /// waits then (pass it by reference to go on with it later). Whatever is due at the end
    /// runs first.
    pub fn run_for<T>(&self, limit: Duration, future: impl Future<Output = T>) -> Option<T> {
        let end = self.now() + limit;
        self.drive(future, Some(end))
    }

    fn drive<T>(&self, future: impl Future<Output = T>, end: Option<Instant>) -> Option<T> {
        let mut future = pin!(future);
        let signal = Arc::new(Signal {
            woken: AtomicBool::new(false),
            thread: std::thread::current(),
        });
        let waker = Waker::from(signal.clone());
        let mut cx = Context::from_waker(&waker);
        loop {
            signal.woken.store(false, Ordering::SeqCst);
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return Some(output);
            }
            if signal.woken.load(Ordering::SeqCst) {
                continue;
            }
            let next = self.next_wake();
            if let Some(at) = next.filter(|at| end.is_none_or(|end| *at <= end)) {
                self.advance_to(at);
                continue;
            }
            if let Some(end) = end {
                if self.now() < end {
                    self.advance_to(end);
                    continue;
                }
                if next.is_some() {
                    return None;
                }
            }
            assert!(
                signal.park(MANUAL_IO_LIVENESS),
                "manual clock: the future waits for no timer and nothing woke it in {:?}",
                MANUAL_IO_LIVENESS
            );
        }
    }
}

/// The waker of [`ManualClock::drive`]: notes the wake and unparks the driving thread.
struct Signal {
    woken: AtomicBool,
    thread: Thread,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        self.thread.unpark();
    }
}

impl Signal {
    /// Parks until woken, at most `limit` of real time; whether it was woken.
    fn park(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while !self.woken.load(Ordering::SeqCst) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            std::thread::park_timeout(left);
        }
        true
    }
}

/// One task's wait on a manual clock, registered while it is pending.
pub(super) struct Sleeper {
    manual: Arc<Manual>,
    at: Instant,
    wait: Wait,
    id: Option<u64>,
}

impl Sleeper {
    pub(super) fn new(manual: Arc<Manual>, at: Instant, wait: Wait) -> Sleeper {
        Sleeper {
            manual,
            at,
            wait,
            id: None,
        }
    }

    /// Waits until `duration` from now instead.
    pub(super) fn set_after(&mut self, duration: Duration) {
        let mut state = self.manual.lock();
        if let Some(id) = self.id.take() {
            state.waiters.remove(&id);
        }
        self.at = self.manual.origin + state.elapsed + duration;
    }

    pub(super) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let registered = {
            let mut state = self.manual.lock();
            if self.manual.origin + state.elapsed >= self.at {
                if let Some(id) = self.id.take() {
                    state.waiters.remove(&id);
                }
                return Poll::Ready(());
            }
            let waiter = Waiter {
                at: self.at,
                wait: self.wait,
                waker: cx.waker().clone(),
            };
            match self.id {
                Some(id) => {
                    state.waiters.insert(id, waiter);
                    false
                }
                None => {
                    let id = state.next_id;
                    state.next_id += 1;
                    state.waiters.insert(id, waiter);
                    self.id = Some(id);
                    true
                }
            }
        };
        if registered {
            self.manual.waiting.notify(usize::MAX);
        }
        Poll::Pending
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.manual.lock().waiters.remove(&id);
        }
    }
}
