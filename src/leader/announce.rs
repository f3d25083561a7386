//! The "became leader" Event: posted in the background through the main client, never through
//! the lease client, and never awaited by the elector.
//!
//! Why: an Event is controller-style traffic. Under API Priority and Fairness it lands in
//! another priority level than the Lease requests, and sent by the lease client it would take
//! that client's connection and tokens at the very moment leadership begins. Posted through the
//! main client it waits its turn with the controllers' requests; it is best effort, bounded by
//! [`LEADER_EVENT_TIMEOUT`], and dropped when leadership ends or the replica shuts down.

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
    in_flight: Option<Task<()>>,
}

impl Announcer {
    /// Announces nothing (tests, and replicas without an Event recorder).
    pub fn silent() -> Announcer {
        Announcer {
            post: None,
            timeout: LEADER_EVENT_TIMEOUT,
            in_flight: None,
        }
    }

    /// Announces by running `post(message)`, cut off after `timeout`.
    pub fn new<F, Fut>(post: F, timeout: Duration) -> Announcer
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Announcer {
            post: Some(Box::new(move |message| Box::pin(post(message)))),
            timeout,
            in_flight: None,
        }
    }

    /// A Normal Event on the Lease `namespace/name`, written by `main` (the controllers' client)
    /// as `identity`.
    pub fn lease_event(main: &Client, namespace: &str, name: &str, identity: &str) -> Announcer {
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
        Announcer::new(post, LEADER_EVENT_TIMEOUT)
    }

    /// Starts posting `message` in the background and returns at once. An announcement still
    /// in flight is dropped: only the latest leadership is news.
    pub fn announce(&mut self, message: String) {
        let Some(post) = &self.post else {
            return;
        };
        self.in_flight = Some(spawn_cut_off(post(message), self.timeout, "leader event"));
    }

    /// Drops the announcement still in flight, if any (leadership ended, or shutdown): it is
    /// not polled again.
    pub fn cancel(&mut self) {
        self.in_flight = None;
    }
}

/// Runs `work` in the background, dropped after `timeout` (logged at debug, naming `what`).
pub(super) fn spawn_cut_off(
    work: impl Future<Output = ()> + Send + 'static,
    timeout: Duration,
    what: &'static str,
) -> Task<()> {
    smol::spawn(async move {
        let cut_off = async {
            smol::Timer::after(timeout).await;
            log::debug!("{what} not sent within {timeout:?}; dropped");
        };
        smol::future::or(work, cut_off).await;
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deadline::within;
    use crate::testing::ms;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Sets its flag when dropped: shows a posting future was cancelled.
    struct DropFlag(Arc<AtomicBool>);
    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    fn never_finishing(dropped: &Arc<AtomicBool>) -> Announcer {
        let dropped = dropped.clone();
        let post = move |_message: String| {
            let flag = DropFlag(dropped.clone());
            async move {
                let _flag = flag;
                smol::future::pending::<()>().await;
            }
        };
        Announcer::new(post, Duration::from_secs(3600))
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
        );
        announcer.announce("me became leader".into());
        let posted = smol::block_on(within(ms(1000), rx.recv()));
        assert_eq!(posted, Some(Ok("me became leader".to_owned())));
    }

    #[test]
    fn cancel_drops_an_announcement_in_flight() {
        let dropped = Arc::new(AtomicBool::new(false));
        let mut announcer = never_finishing(&dropped);
        announcer.announce("me became leader".into());
        assert!(!dropped.load(Ordering::SeqCst));
        announcer.cancel();
        assert!(
            smol::block_on(within(ms(1000), until_set(&dropped))).is_some(),
            "still posting after cancel"
        );
    }

    async fn until_set(flag: &AtomicBool) {
        while !flag.load(Ordering::SeqCst) {
            smol::Timer::after(ms(5)).await;
        }
    }

    #[test]
    fn an_announcement_that_takes_too_long_is_dropped() {
        let dropped = Arc::new(AtomicBool::new(false));
        let flag = dropped.clone();
        let mut announcer = Announcer::new(
            move |_message| {
                let flag = DropFlag(flag.clone());
                async move {
                    let _flag = flag;
                    smol::future::pending::<()>().await;
                }
            },
            ms(20),
        );
        announcer.announce("me became leader".into());
        let cut_off = smol::block_on(within(ms(2000), until_set(&dropped)));
        assert!(cut_off.is_some(), "the post outlived its timeout");
    }

    #[test]
    fn a_silent_announcer_posts_nothing() {
        let mut announcer = Announcer::silent();
        announcer.announce("me became leader".into());
        assert!(announcer.in_flight.is_none());
    }
}
