//! The own Pod marked for deletion, as a shutdown signal that comes before the kubelet's SIGTERM.
//!
//! Why: after `kubectl delete pod`, an eviction or a rollout's scale-down, the kubelet hears of
//! the deletion through its own watch, then its pod worker asks the runtime to stop the
//! container, which sends SIGTERM. On the node suite that took 100 ms in most rounds and 400–500
//! ms in others, all before skiff could release its Lease. The API server's `deletionTimestamp`
//! is the first sign of the deletion: a replica that watches its own Pod starts the shutdown it
//! would start on SIGTERM (controllers stop, the Lease is released, the process exits) as soon as
//! the deletion is recorded, and the kubelet's SIGTERM then finds it gone or going.
//!
//! Best effort: a Pod skiff may not read (403), or that does not exist (a wrong `POD_NAME`),
//! leaves SIGTERM as the only signal, with a warning; other failures are retried with backoff.

use crate::kube::api::PodMeta;
use crate::kube::{Client, Error, Selectors, WatchEvent, WatchParams};
use crate::runtime::Backoff;
use smol::Timer;

/// Resolves once the Pod `namespace/pod` carries a `deletionTimestamp` or is gone; never, when
/// it cannot be read for good (no right to, or no such Pod).
pub async fn own_pod_deleted(client: Client, namespace: String, pod: String) {
    // The watcher's policy (client-go's reflector): 800 ms doubling to 30 s, with jitter.
    let mut backoff = Backoff::default();
    loop {
        match until_deleted(&client, &namespace, &pod).await {
            Ok(()) => {
                log::info!(
                    "pod {namespace}/{pod} is being deleted: shutting down before the kubelet's SIGTERM"
                );
                return;
            }
            Err(e) if matches!(e.code(), Some(403 | 404)) => {
                log::warn!(
                    "pod {namespace}/{pod}: {e}; --stop-on-pod-deletion is off for this process \
                     (it needs get and watch on pods in {namespace}, and POD_NAME set to the Pod's name)"
                );
                return std::future::pending().await;
            }
            Err(e) => {
                log::debug!("pod {namespace}/{pod}: watching for its deletion: {e}; retrying");
                Timer::after(backoff.next_delay()).await;
            }
        }
    }
}

/// Ok once the Pod is marked for deletion (or deleted after it was read); an error when it
/// cannot be read or watched. A watch the server ends is opened again where it stopped.
async fn until_deleted(client: &Client, namespace: &str, pod: &str) -> Result<(), Error> {
    let current: PodMeta = client.get(Some(namespace), pod).await?;
    if current.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    let mut params = WatchParams {
        selectors: Selectors::fields(&format!("metadata.name={pod}")),
        resource_version: current.metadata.resource_version.clone(),
        ..WatchParams::default()
    };
    loop {
        let mut events = client.watch::<PodMeta>(Some(namespace), &params).await?;
        while let Some(event) = events.next().await {
            match event? {
                WatchEvent::Deleted(_) => return Ok(()),
                WatchEvent::Added(p) | WatchEvent::Modified(p) => {
                    if p.metadata.deletion_timestamp.is_some() {
                        return Ok(());
                    }
                    params.resource_version = p.metadata.resource_version.clone();
                }
                WatchEvent::Bookmark { resource_version } => {
                    params.resource_version = Some(resource_version);
                }
            }
        }
    }
}
