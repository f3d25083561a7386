//! The leader's Pod marked as the last to delete: `controller.kubernetes.io/pod-deletion-cost`.
//!
//! Why: in a Deployment rollout the old ReplicaSet scales down one Pod at a time. Among Pods
//! equally scheduled, running and ready, which one goes first is close to chance, so in about
//! half of the rollouts the leader went first: its standby took the Lease, was deleted next and
//! handed it on once more, stopping and starting the controllers twice. The ReplicaSet removes
//! the Pods of lowest deletion cost first, so a leader whose Pod costs more than its standbys'
//! (no annotation: cost 0) is deleted last and the Lease moves once, to a Pod of the new
//! ReplicaSet. The cost only breaks ties; it goes stale when leadership ends, so a replica that
//! stops leading removes it.
//!
//! Best effort and in the background, as the "became leader" Event ([`super::announce`]): the
//! elector never waits for it, a failed PATCH only costs the tie-break, and a change of
//! leadership drops the PATCH still in flight for the newer one. The PATCH goes through the
//! main client's connections without the fence: the mark is removed after leadership is lost,
//! when the fence refuses writes.

use super::announce::spawn_cut_off;
use crate::clock::Clock;
use crate::kube::Client;
use crate::kube::api::PodMeta;
use serde_json::json;
use smol::Task;
use std::pin::Pin;
use std::time::Duration;

pub const ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";
/// The leader's cost; standbys carry none (0).
pub const LEADER_COST: &str = "1000";
/// How long a PATCH may take before it is dropped.
pub const PATCH_TIMEOUT: Duration = Duration::from_secs(30);

/// Sets the annotation to the given cost, or removes it (`None`).
type Patch =
    Box<dyn Fn(Option<&'static str>) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Marks this replica's Pod while it leads and unmarks it when leadership ends.
pub struct DeletionCost {
    patch: Option<Patch>,
    timeout: Duration,
    clock: Clock,
    /// Marked, or a mark may have been sent: leadership's end must unmark.
    marked: bool,
    in_flight: Option<Task<()>>,
}

impl DeletionCost {
    /// Marks nothing (no Pod to mark, or the flag is off).
    pub fn none() -> DeletionCost {
        DeletionCost {
            patch: None,
            timeout: PATCH_TIMEOUT,
            clock: Clock::real(),
            marked: false,
            in_flight: None,
        }
    }

    /// Marks by running `patch(cost)`, cut off after `timeout` on `clock`.
    pub fn new<F, Fut>(patch: F, timeout: Duration, clock: Clock) -> DeletionCost
    where
        F: Fn(Option<&'static str>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        DeletionCost {
            patch: Some(Box::new(move |cost| Box::pin(patch(cost)))),
            timeout,
            clock,
            marked: false,
            in_flight: None,
        }
    }

    /// Marks the Pod `namespace/pod` with a merge PATCH through `client` (unfenced), cut off
    /// after [`PATCH_TIMEOUT`] on `clock`.
    pub fn on_pod(client: &Client, namespace: &str, pod: &str, clock: Clock) -> DeletionCost {
        let (client, namespace, pod) = (client.clone(), namespace.to_owned(), pod.to_owned());
        let patch = move |cost: Option<&'static str>| {
            let (client, namespace, pod) = (client.clone(), namespace.clone(), pod.clone());
            async move {
                let sent = client
                    .patch_merge::<PodMeta>(Some(&namespace), &pod, &patch_body(cost))
                    .await;
                match sent {
                    Ok(_) => log::debug!("pod {namespace}/{pod}: {ANNOTATION} {cost:?}"),
                    Err(e) => log::warn!(
                        "pod {namespace}/{pod}: could not set {ANNOTATION} to {cost:?} ({e}); a \
                         rollout may move the Lease twice (RBAC: patch on pods in {namespace})"
                    ),
                }
            }
        };
        DeletionCost::new(patch, PATCH_TIMEOUT, clock)
    }

    /// This replica leads: its Pod is to be deleted last.
    pub fn lead(&mut self) {
        self.marked = true;
        self.send(Some(LEADER_COST));
    }

    /// This replica no longer leads: its Pod ranks as the standbys' again.
    pub fn follow(&mut self) {
        if std::mem::take(&mut self.marked) {
            self.send(None);
        }
    }

    fn send(&mut self, cost: Option<&'static str>) {
        let Some(patch) = &self.patch else {
            return;
        };
        let cut_off = self.clock.sleep(self.timeout);
        self.in_flight = Some(spawn_cut_off(patch(cost), cut_off, ANNOTATION));
    }
}

/// The merge patch that sets the annotation to `cost`, or removes it.
fn patch_body(cost: Option<&str>) -> serde_json::Value {
    json!({"metadata": {"annotations": {ANNOTATION: cost}}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deadline::within;
    use smol::channel::Receiver;
    use std::sync::{Arc, Mutex};

    type Asked = Arc<Mutex<Vec<Option<&'static str>>>>;

    /// A cost whose patches are recorded when asked for (in order, before they run) and sent to
    /// the receiver when they run.
    fn recording() -> (DeletionCost, Asked, Receiver<Option<&'static str>>) {
        let (tx, rx) = smol::channel::unbounded();
        let asked = Asked::default();
        let record = asked.clone();
        let cost = DeletionCost::new(
            move |cost| {
                record.lock().expect("lock").push(cost);
                let tx = tx.clone();
                async move {
                    let _ = tx.send(cost).await;
                }
            },
            Duration::from_secs(3600),
            Clock::real(),
        );
        (cost, asked, rx)
    }

    fn asked(asked: &Asked) -> Vec<Option<&'static str>> {
        asked.lock().expect("lock").clone()
    }

    /// The next patch that ran, waiting for the background task at most 10 s: a liveness bound
    /// for another thread, not a speed goal.
    fn ran(rx: &Receiver<Option<&'static str>>) -> Option<Option<&'static str>> {
        smol::block_on(within(Duration::from_secs(10), rx.recv())).and_then(Result::ok)
    }

    #[test]
    fn leading_marks_the_pod_and_following_removes_the_mark_in_the_background() {
        let (mut cost, _, rx) = recording();
        cost.lead();
        assert_eq!(ran(&rx), Some(Some(LEADER_COST)));
        cost.follow();
        assert_eq!(ran(&rx), Some(None));
    }

    #[test]
    fn a_replica_that_never_led_sends_nothing_when_it_follows() {
        let (mut cost, patches, _rx) = recording();
        cost.follow();
        assert_eq!(
            asked(&patches),
            [],
            "a replica that never led removed a mark"
        );
        cost.lead();
        cost.follow();
        cost.follow();
        assert_eq!(
            asked(&patches),
            [Some(LEADER_COST), None],
            "a second follow removed the mark again"
        );
    }

    #[test]
    fn none_marks_nothing() {
        let mut cost = DeletionCost::none();
        cost.lead();
        assert!(cost.in_flight.is_none());
    }

    #[test]
    fn the_patch_asks_for_the_annotation_or_its_removal() {
        assert_eq!(
            patch_body(Some(LEADER_COST)).to_string(),
            r#"{"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":"1000"}}}"#
        );
        assert_eq!(
            patch_body(None).to_string(),
            r#"{"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":null}}}"#
        );
    }
}
