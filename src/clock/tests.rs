use super::*;
use crate::kube::Error;
use crate::testing::{ms, now_or_never, secs};
use std::pin::pin;

#[test]
fn a_manual_clock_stands_still_until_advanced() {
    let manual = ManualClock::new();
    let clock = manual.clock();
    let t0 = clock.now();
    std::thread::sleep(ms(2));
    assert_eq!(clock.now(), t0, "real time leaked into the manual clock");
    manual.advance(ms(250));
    assert_eq!(clock.now(), t0 + ms(250));
    assert_eq!(manual.elapsed(), ms(250));
    manual.advance_to(t0);
    assert_eq!(clock.now(), t0 + ms(250), "a manual clock never goes back");
}

#[test]
fn a_sleep_ends_when_the_clock_reaches_it_and_not_before() {
    let manual = ManualClock::new();
    let clock = manual.clock();
    let mut sleep = pin!(clock.sleep(ms(100)));
    assert_eq!(now_or_never(sleep.as_mut()), None);
    assert_eq!(manual.sleeps(), [manual.now() + ms(100)]);
    manual.advance(ms(99));
    assert_eq!(now_or_never(sleep.as_mut()), None);
    manual.advance(ms(1));
    assert_eq!(now_or_never(sleep.as_mut()), Some(()));
    assert_eq!(manual.next_wake(), None, "an ended sleep is forgotten");
}

#[test]
fn a_dropped_sleep_is_forgotten() {
    let manual = ManualClock::new();
    let clock = manual.clock();
    let mut sleep = Box::pin(clock.sleep(secs(5)));
    assert_eq!(now_or_never(sleep.as_mut()), None);
    assert!(manual.next_wake().is_some());
    drop(sleep);
    assert_eq!(manual.next_wake(), None);
}

#[test]
fn before_times_out_on_the_clock_and_is_not_a_sleep() {
    let manual = ManualClock::new();
    let clock = manual.clock();
    let deadline = clock.now() + ms(10);
    let never = smol::future::pending::<Result<(), Error>>();
    let mut bounded = pin!(clock.before(deadline, "lease get", never));
    assert_eq!(now_or_never(bounded.as_mut()), None);
    assert_eq!(manual.next_wake(), Some(deadline));
    assert!(manual.sleeps().is_empty(), "a timeout is not an idle task");
    manual.advance(ms(10));
    assert_eq!(
        now_or_never(bounded.as_mut()),
        Some(Err(Error::Timeout(
            "lease get did not finish before its deadline".into()
        )))
    );
}

#[test]
fn run_moves_the_clock_to_each_wake_in_turn() {
    let manual = ManualClock::new();
    let clock = manual.clock();
    let t0 = clock.now();
    let woke = manual.run(async {
        let mut woke = Vec::new();
        for step in [ms(30), ms(20), secs(3600)] {
            clock.sleep(step).await;
            woke.push(clock.now() - t0);
        }
        woke
    });
    assert_eq!(woke, [ms(30), ms(50), secs(3600) + ms(50)]);
}

#[test]
fn run_for_stops_at_its_end_and_runs_what_is_due_then() {
    let manual = ManualClock::new();
    let clock = manual.clock();
    let ticks = std::cell::Cell::new(0);
    let mut ticking = pin!(async {
        loop {
            clock.sleep(ms(50)).await;
            ticks.set(ticks.get() + 1);
        }
    });
    assert_eq!(manual.run_for(ms(100), ticking.as_mut()), None);
    assert_eq!(manual.elapsed(), ms(100));
    assert_eq!(
        ticks.get(),
        2,
        "the tick due at the end of the run ran in it"
    );
    assert_eq!(manual.run_for(ms(49), ticking.as_mut()), None);
    assert_eq!(ticks.get(), 2);
}

#[test]
fn run_waits_for_another_thread_when_no_timer_is_pending() {
    let manual = ManualClock::new();
    let (tx, rx) = smol::channel::bounded(1);
    std::thread::spawn(move || {
        std::thread::sleep(ms(20));
        let _ = tx.send_blocking(7);
    });
    assert_eq!(manual.run(rx.recv()), Ok(7));
    assert_eq!(manual.elapsed(), Duration::ZERO);
}

#[test]
fn wait_for_sleep_sees_a_task_of_another_thread_go_idle() {
    let manual = ManualClock::new();
    let clock = manual.clock();
    let at = clock.now() + secs(2);
    let task = smol::spawn(async move { clock.sleep_until(at).await });
    assert!(manual.wait_for_sleep(at, secs(10)), "the task never slept");
    assert!(!manual.wait_for_sleep(at + ms(1), ms(1)));
    manual.advance(secs(2));
    smol::block_on(task);
}

#[test]
fn the_real_clock_sleeps_for_real_and_maps_deadlines_to_themselves() {
    let clock = Clock::real();
    let started = Instant::now();
    smol::block_on(clock.sleep(ms(5)));
    assert!(started.elapsed() >= ms(5));
    let deadline = Instant::now() + secs(1);
    assert_eq!(clock.io_deadline(deadline), deadline);
    let manual = ManualClock::new().clock();
    assert!(manual.io_deadline(manual.now()) >= Instant::now() + secs(59));
}
