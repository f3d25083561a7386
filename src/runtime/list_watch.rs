//! What a watcher reads from: a collection that can be listed and watched. The watcher knows
//! nothing of HTTP; the API client implements these traits in [`super::source`], and the
//! watcher's tests with a scripted fake.

use std::future::Future;

use crate::kube::api::{ObjectList, Resource};
use crate::kube::liveness::WatchHealth;
use crate::kube::{Error, ListParams, WatchEvent, WatchParams};

/// Where a watcher reads from: a collection, already scoped (namespace, kind) by the source.
pub trait ListWatch<K: Resource>: Send + Sync {
    type Stream: EventStream<K>;
    fn list(
        &self,
        params: &ListParams,
    ) -> impl Future<Output = Result<ObjectList<K>, Error>> + Send;
    fn watch(
        &self,
        params: &WatchParams,
    ) -> impl Future<Output = Result<Self::Stream, Error>> + Send;
    /// Where the watcher reports whether it hears (see [`Hearing`]); `what` names the watch.
    fn register_health(&self, what: &str) -> Option<WatchHealth> {
        let _ = what;
        None
    }
}

/// An open watch: events until the server ends it (`None`). 410 Gone arrives as
/// `Err(Error::Expired)`.
pub trait EventStream<K>: Send {
    fn next(&mut self) -> impl Future<Output = Option<Result<WatchEvent<K>, Error>>> + Send;
}
