//! The work queue's rules, and its delays in virtual time: a delayed key is added by a task of
//! smol's executor, which the tests see sleep on the queue's manual clock before they move it.

use super::*;
use crate::clock::ManualClock;
use crate::testing::{ms, now_or_never};
use smol::block_on;
use std::pin::pin;

/// How long a test waits for a task of smol's executor to run: a liveness bound for another
/// thread, not a speed goal.
const LIVENESS: Duration = Duration::from_secs(10);

fn queue(name: &str) -> WorkQueue<&'static str> {
    WorkQueue::new(name)
}

/// A queue on a manual clock, and the clock.
fn timed_queue(name: &str) -> (WorkQueue<&'static str>, ManualClock) {
    let time = ManualClock::new();
    (WorkQueue::fair(name, usize::MAX, time.clock()), time)
}

/// The next key, waiting at most [`LIVENESS`] for the task that adds it.
fn next(q: &WorkQueue<&'static str>) -> Option<&'static str> {
    block_on(crate::deadline::within(LIVENESS, q.get())).flatten()
}

#[test]
fn a_key_is_queued_once_however_often_it_is_added() {
    let q = queue("test-dedup");
    for key in ["a", "a", "b", "a"] {
        q.add(key);
    }
    assert_eq!(q.len(), 2);
    assert_eq!(block_on(q.get()), Some("a"));
    assert_eq!(block_on(q.get()), Some("b"));
    assert!(q.is_empty());
    assert_eq!(q.shared.adds.get(), 2);
}

#[test]
fn a_key_in_process_is_not_handed_out_again_until_done() {
    let q = queue("test-processing");
    q.add("a");
    assert_eq!(block_on(q.get()), Some("a"));
    q.add("a");
    q.add("b");
    assert_eq!(block_on(q.get()), Some("b"));
    assert!(
        q.is_empty(),
        "a is dirty but must wait for its processing to end"
    );
    q.done(&"a");
    assert_eq!(block_on(q.get()), Some("a"));
}

#[test]
fn a_key_not_added_during_processing_is_not_requeued() {
    let q = queue("test-clean-done");
    q.add("a");
    assert_eq!(block_on(q.get()), Some("a"));
    q.done(&"a");
    assert!(q.is_empty());
}

#[test]
fn failures_count_up_and_forget_resets_them() {
    let q = queue("test-failures");
    q.add("a");
    let key = block_on(q.get());
    assert_eq!(key, Some("a"));
    for expected in 1..=3 {
        q.requeue_rate_limited("a");
        assert_eq!(q.failures(&"a"), expected);
    }
    assert_eq!(q.shared.retries.get(), 3);
    q.forget(&"a");
    assert_eq!(q.failures(&"a"), 0);
}

#[test]
fn a_failed_key_comes_back_after_its_backoff() {
    let (q, time) = timed_queue("test-requeue");
    let due = time.now() + item_backoff(0);
    q.requeue_rate_limited("a");
    assert!(
        time.wait_for_sleep(due, LIVENESS),
        "the retry does not wait for its backoff: {:?}",
        time.sleeps()
    );
    assert!(q.is_empty(), "the retry must wait for its backoff");
    time.advance_to(due);
    assert_eq!(next(&q), Some("a"));
}

#[test]
fn add_after_delays_and_the_earliest_delay_wins() {
    let (q, time) = timed_queue("test-add-after");
    let t0 = time.now();
    q.add_after("a", Duration::from_secs(60));
    q.add_after("a", ms(3));
    assert!(time.wait_for_sleep(t0 + ms(3), LIVENESS));
    assert!(q.is_empty());
    time.advance(ms(3));
    assert_eq!(next(&q), Some("a"));
}

#[test]
fn a_later_delay_of_a_key_already_waiting_is_dropped() {
    let (q, time) = timed_queue("test-add-after-later");
    let t0 = time.now();
    q.add_after("a", ms(3));
    q.add_after("a", Duration::from_secs(60));
    assert_eq!(q.book().delayed.get("a"), Some(&(t0 + ms(3))));
    assert!(time.wait_for_sleep(t0 + ms(3), LIVENESS));
    time.advance(ms(3));
    assert_eq!(next(&q), Some("a"));
}

#[test]
fn shutdown_lets_in_flight_keys_finish_and_hands_out_nothing_new() {
    let q = queue("test-shutdown");
    q.add("a");
    q.add("b");
    assert_eq!(block_on(q.get()), Some("a"));
    q.shutdown();
    assert_eq!(block_on(q.get()), None);
    q.add("c");
    q.done(&"a");
    assert_eq!(block_on(q.get()), None);
    assert!(q.is_empty());
}

#[test]
fn shutdown_wakes_a_waiting_worker() {
    let q = queue("test-shutdown-wakes");
    let mut waiter = pin!(q.get());
    assert_eq!(now_or_never(waiter.as_mut()), None, "nothing to hand out");
    q.shutdown();
    assert_eq!(now_or_never(waiter), Some(None));
}

#[test]
fn keys_are_handed_out_in_turn_across_flows() {
    let q = queue("test-fair");
    for key in ["big/1", "big/2", "big/3", "big/4", "small/1", "small/2"] {
        q.add(key);
    }
    let order: Vec<_> = (0..6).filter_map(|_| block_on(q.get())).collect();
    assert_eq!(
        order,
        ["big/1", "small/1", "big/2", "small/2", "big/3", "big/4"]
    );
}

#[test]
fn a_flow_at_its_cap_gets_a_key_again_when_one_is_done() {
    let q = WorkQueue::fair("test-fair-cap", 1, crate::clock::Clock::real());
    q.add("a/1");
    q.add("a/2");
    assert_eq!(block_on(q.get()), Some("a/1"));
    let mut waiter = pin!(q.get());
    assert_eq!(now_or_never(waiter.as_mut()), None, "a/2 must wait for a/1");
    q.done(&"a/1");
    assert_eq!(now_or_never(waiter), Some(Some("a/2")));
}

#[test]
fn a_get_dropped_while_it_waits_takes_no_key() {
    let q = queue("test-fair-cancel");
    assert_eq!(now_or_never(q.get()), None, "dropped while it waits");
    q.add("a/1");
    assert_eq!(block_on(q.get()), Some("a/1"));
}
