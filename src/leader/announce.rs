//! The "became leader" Event: posted in the background through the main client, never through
//! the lease client, and never awaited by the elector.
//!
//! Why: an Event is controller-style traffic. Under API Priority and Fairness it lands in
//! another priority level than the Lease requests, and sent by the lease client it would take
//! that client's connection and tokens at the very moment leadership begins. Posted through the
//! main client it waits its turn with the controllers' requests; it is best effort, bounded by
//! [`LEADER_EVENT_TIMEOUT`], and dropped when leadership ends or the replica shuts down.

use crate::clock::{Clock, Sleep};
use crate::kube::Client;
use crate::kube::api::ObjectReference;
use crate::kube::events::Recorder;
use smol::Task;
use std::pin::Pin;
use std::time::Duration;

/// How long the Event may wait (behind the main client's token bucket, at worst the first burst
/// of a fan-out); after this it is stale news and dropped.
pub const LEADER_EVENT_TIMEOUT: Duration = Duration::from_secs(30);
/// The Event's reason, as client-go's leader election records it.
const REASON: &str = "LeaderElection";

type Post = Box<dyn Fn(String) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Starts the announcement of a new leader and owns it while it is in flight.
pub struct Announcer {
    post: Option<Post>,
    timeout: Duration,
    clock: Clock,
    in_flight: Option<Task<()>>,
}

impl Announcer {
    /// Announces nothing (tests, and replicas without an Event recorder).
    pub fn silent() -> Announcer {
        Announcer {
            post: None,
            timeout: LEADER_EVENT_TIMEOUT,
            clock: Clock::real(),
            in_flight: None,
        }
    }

    /// Announces by running `post(message)`, cut off after `timeout` on `clock`.
    pub fn new<F, Fut>(post: F, timeout: Duration, clock: Clock) -> Announcer
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Announcer {
            post: Some(Box::new(move |message| Box::pin(post(message)))),
            timeout,
            clock,
            in_flight: None,
        }
    }

    /// A Normal Event on the Lease `namespace/name`, written by `main` (the controllers' client)
    /// as `identity`, cut off after [`LEADER_EVENT_TIMEOUT`] on `clock`.
    pub fn lease_event(
        main: &Client,
        namespace: &str,
        name: &str,
        identity: &str,
        clock: Clock,
    ) -> Announcer {
        let recorder = Recorder::new(main, "skiff", identity);
        let regarding = ObjectReference {
            api_version: Some("coordination.k8s.io/v1".into()),
            kind: Some("Lease".into()),
            namespace: Some(namespace.to_owned()),
            name: Some(name.to_owned()),
            ..ObjectReference::default()
        };
        let post = move |message: String| {
            let (recorder, regarding) = (recorder.clone(), regarding.clone());
            async move { recorder.normal(regarding, REASON, &message).await }
        };
        Announcer::new(post, LEADER_EVENT_TIMEOUT, clock)
    }

    /// Starts posting `message` in the background and returns at once. An announcement still
    /// in flight is dropped: only the latest leadership is news.
    pub fn announce(&mut self, message: String) {
        let Some(post) = &self.post else {
            return;
        };
        let cut_off = self.clock.sleep(self.timeout);
        self.in_flight = Some(spawn_cut_off(post(message), cut_off, "leader event"));
    }

    /// Drops the announcement still in flight, if any (leadership ended, or shutdown): it is
    /// not polled again.
    pub fn cancel(&mut self) {
        self.in_flight = None;
    }
}

/// Runs `work` in the background, dropped when `cut_off` ends (logged at debug, naming `what`).
pub(super) fn spawn_cut_off(
    work: impl Future<Output = ()> + Send + 'static,
    cut_off: Sleep,
    what: &'static str,
) -> Task<()> {
    smol::spawn(async move {
        let cut_off = async {
            cut_off.await;
            log::debug!("{what} not sent in time; dropped");
        };
        smol::future::or(work, cut_off).await;
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::deadline::within;
    use crate::testing::ms;
    use smol::channel::{Receiver, Sender};

    /// How long a spawned task may take to run or to be dropped: a liveness bound for another
    /// thread, not a speed goal (it takes microseconds).
    const LIVENESS: Duration = Duration::from_secs(10);

    /// Sends when dropped: shows a posting future was cancelled.
    struct DropFlag(Sender<()>);
    impl Drop for DropFlag {
        fn drop(&mut self) {
            let _ = self.0.try_send(());
        }
    }

    /// An announcer on `clock` whose posts never finish; the receiver hears of each one dropped.
    fn never_finishing(clock: Clock, timeout: Duration) -> (Announcer, Receiver<()>) {
        let (tx, dropped) = smol::channel::unbounded();
        let post = move |_message: String| {
            let flag = DropFlag(tx.clone());
            async move {
                let _flag = flag;
                smol::future::pending::<()>().await;
            }
        };
        (Announcer::new(post, timeout, clock), dropped)
    }

    fn dropped_within_liveness(dropped: &Receiver<()>) -> bool {
        smol::block_on(within(LIVENESS, dropped.recv())).is_some()
    }

    #[test]
    fn announce_returns_at_once_and_posts_in_the_background() {
        let (tx, rx) = smol::channel::unbounded();
        let mut announcer = Announcer::new(
            move |message| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(message).await;
                }
            },
            Duration::from_secs(3600),
            Clock::real(),
        );
        announcer.announce("me became leader".into());
        let posted = smol::block_on(within(LIVENESS, rx.recv()));
        assert_eq!(posted, Some(Ok("me became leader".to_owned())));
    }

    #[test]
    fn cancel_drops_an_announcement_in_flight() {
        let manual = ManualClock::new();
        let (mut announcer, dropped) = never_finishing(manual.clock(), Duration::from_secs(3600));
        announcer.announce("me became leader".into());
        let cut_off_at = manual.now() + Duration::from_secs(3600);
        assert!(
            manual.wait_for_sleep(cut_off_at, LIVENESS),
            "the post never started"
        );
        assert!(dropped.try_recv().is_err());
        announcer.cancel();
        assert!(
            dropped_within_liveness(&dropped),
            "still posting after cancel"
        );
        assert_eq!(
            manual.elapsed(),
            Duration::ZERO,
            "dropped by cancel, not by time"
        );
    }

    #[test]
    fn an_announcement_that_takes_too_long_is_dropped_at_its_timeout() {
        let manual = ManualClock::new();
        let (mut announcer, dropped) = never_finishing(manual.clock(), ms(20));
        announcer.announce("me became leader".into());
        assert!(
            manual.wait_for_sleep(manual.now() + ms(20), LIVENESS),
            "the post is not cut off at 20 ms"
        );
        manual.advance(ms(19));
        assert!(manual.wait_for_sleep(manual.now() + ms(1), LIVENESS));
        assert!(dropped.try_recv().is_err(), "dropped before its timeout");
        manual.advance(ms(1));
        assert!(
            dropped_within_liveness(&dropped),
            "the post outlived its timeout"
        );
    }

    #[test]
    fn a_silent_announcer_posts_nothing() {
        let mut announcer = Announcer::silent();
        announcer.announce("me became leader".into());
        assert!(announcer.in_flight.is_none());
    }
}
