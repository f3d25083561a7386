//! A watch feeding a store, in a task of its own: how every cache is filled.
//!
//! Each event goes into the store, then through a mapping to the keys to reconcile; the task
//! ends when the queue shuts down or the task is dropped (which stops the watch).

use super::{ApiSource, Change, ObjectKey, Store, Watcher, WatcherConfig, WorkQueue, feed};
use crate::kube::api::Resource;

/// Starts the watch of `source` with `config`, feeding `store` and putting the keys `map`
/// returns for each event on `queue`. `map` is given what the store held before the event.
pub fn spawn_watch<K: Resource + Clone, P: Clone + Send + Sync + 'static>(
    source: ApiSource,
    config: WatcherConfig,
    store: Store<K, P>,
    queue: &WorkQueue<ObjectKey>,
    map: impl Fn(&Change<K>, Option<&P>) -> Vec<ObjectKey> + Send + 'static,
) -> smol::Task<()> {
    let watcher = Watcher::new(source, config);
    smol::spawn(feed(watcher, store, queue.clone(), map))
}

/// A mapping that does not need what the store held before the event.
pub fn regardless<K, P>(
    map: impl Fn(&Change<K>) -> Vec<ObjectKey> + Send + 'static,
) -> impl Fn(&Change<K>, Option<&P>) -> Vec<ObjectKey> + Send + 'static {
    move |event, _previous| map(event)
}
