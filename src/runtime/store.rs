//! Store: the cache a watcher fills, keeping only the projection of each object a controller
//! needs, readable from any number of reconcilers at once.
//!
//! Keeping a projection instead of the object is what keeps memory independent of payloads:
//! a controller watching copies of Secrets can keep name, labels, resourceVersion and a hash.

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::signal::{Signal, Trigger, signal};

use super::watcher::WatcherEvent;
use crate::kube::api::{ObjectMeta, Resource};

/// The namespace and name of an object: the key of the store and of the work queue.
/// `namespace` is empty for cluster-scoped objects.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> ObjectKey {
        ObjectKey {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The key of an object's metadata; `None` when it has no name.
    pub fn from_meta(meta: &ObjectMeta) -> Option<ObjectKey> {
        let name = meta.name.as_deref()?;
        Some(ObjectKey::new(
            meta.namespace.as_deref().unwrap_or_default(),
            name,
        ))
    }

    pub fn of<K: Resource>(object: &K) -> Option<ObjectKey> {
        ObjectKey::from_meta(object.metadata())
    }
}

impl fmt::Display for ObjectKey {
    /// `namespace/name`, or `name` for cluster-scoped objects (client-go's key format).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

type Project<K, P> = Arc<dyn Fn(&K) -> P + Send + Sync>;

/// A cache of projections `P` of objects `K`, keyed by [`ObjectKey`].
///
/// Clones share one cache. The lock is a std `RwLock` because no one holds it across an
/// `await`: readers copy out what they need, the watcher task writes one event at a time.
pub struct Store<K, P> {
    shared: Arc<RwLock<HashMap<ObjectKey, P>>>,
    /// Fired by the first `Restarted`; shared by every clone.
    ready: (Arc<Trigger>, Signal),
    project: Project<K, P>,
    kind: PhantomData<fn(&K)>,
}

impl<K, P> Clone for Store<K, P> {
    fn clone(&self) -> Self {
        Store {
            shared: Arc::clone(&self.shared),
            ready: self.ready.clone(),
            project: Arc::clone(&self.project),
            kind: PhantomData,
        }
    }
}

impl<K: Resource + Clone> Store<K, K> {
    /// A store keeping whole objects.
    pub fn whole() -> Store<K, K> {
        Store::new(K::clone)
    }
}

impl<K: Resource, P: Clone> Store<K, P> {
    /// A store keeping `project(object)` for each object.
    pub fn new(project: impl Fn(&K) -> P + Send + Sync + 'static) -> Store<K, P> {
        Store {
            shared: Arc::default(),
            ready: {
                let (trigger, ready) = signal();
                (Arc::new(trigger), ready)
            },
            project: Arc::new(project),
            kind: PhantomData,
        }
    }

    /// Applies one watcher event: `Restarted` replaces everything (objects deleted while the
    /// watch was down disappear) and makes the store ready.
    pub fn apply(&self, event: &WatcherEvent<K>) {
        match event {
            WatcherEvent::Restarted(objects) => {
                let fresh: HashMap<ObjectKey, P> = objects
                    .iter()
                    .filter_map(|o| Some((ObjectKey::of(o)?, (self.project)(o))))
                    .collect();
                *self.write() = fresh;
                self.ready.0.fire();
            }
            WatcherEvent::Applied(object) => {
                if let Some(key) = ObjectKey::of(object) {
                    let projected = (self.project)(object);
                    self.write().insert(key, projected);
                }
            }
            WatcherEvent::Deleted(object) => {
                if let Some(key) = ObjectKey::of(object) {
                    self.write().remove(&key);
                }
            }
        }
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<P> {
        self.read().get(&ObjectKey::new(namespace, name)).cloned()
    }

    /// Every projection, in no particular order.
    pub fn list(&self) -> Vec<P> {
        self.read().values().cloned().collect()
    }

    /// The projections for which `keep` is true.
    pub fn filter(&self, keep: impl Fn(&P) -> bool) -> Vec<P> {
        self.read().values().filter(|p| keep(p)).cloned().collect()
    }

    /// Every key, in no particular order.
    pub fn keys(&self) -> Vec<ObjectKey> {
        self.read().keys().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a full list has been applied; before that the store may be missing objects.
    pub fn ready(&self) -> bool {
        self.ready.1.is_fired()
    }

    /// Waits until a full list has been applied. A controller must not act on absences
    /// (e.g. delete a copy in a namespace it has not seen) before this.
    pub async fn wait_until_ready(&self) {
        self.ready.1.wait().await;
    }

    fn read(&self) -> RwLockReadGuard<'_, HashMap<ObjectKey, P>> {
        self.shared.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, HashMap<ObjectKey, P>> {
        self.shared.write().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::ConfigMap;

    fn config_map(ns: &str, name: &str, value: &str) -> ConfigMap {
        let mut cm = ConfigMap {
            metadata: ObjectMeta::named(Some(ns), name),
            ..ConfigMap::default()
        };
        cm.data.insert("k".into(), value.into());
        cm
    }

    fn data_length(cm: &ConfigMap) -> usize {
        cm.data.values().map(String::len).sum()
    }

    #[test]
    fn keeps_only_the_projection_of_each_object() {
        let store = Store::new(data_length);
        store.apply(&WatcherEvent::Applied(config_map("a", "x", "12345")));
        assert_eq!(store.get("a", "x"), Some(5));
        assert_eq!(store.get("b", "x"), None);
    }

    #[test]
    fn restarted_replaces_everything_and_makes_the_store_ready() {
        let store = Store::whole();
        store.apply(&WatcherEvent::Applied(config_map("a", "gone", "1")));
        assert!(!store.ready());
        let waiter = {
            let store = store.clone();
            smol::spawn(async move { store.wait_until_ready().await })
        };
        let relisted = vec![config_map("a", "x", "1"), config_map("b", "y", "2")];
        store.apply(&WatcherEvent::Restarted(relisted));
        assert!(store.ready());
        smol::block_on(waiter);
        smol::block_on(store.wait_until_ready());
        assert_eq!(store.len(), 2);
        assert!(store.get("a", "gone").is_none());
        let mut keys = store.keys();
        keys.sort();
        assert_eq!(keys, [ObjectKey::new("a", "x"), ObjectKey::new("b", "y")]);
    }

    #[test]
    fn applied_updates_and_deleted_removes() {
        let store = Store::new(data_length);
        let reader = store.clone();
        store.apply(&WatcherEvent::Applied(config_map("a", "x", "1")));
        store.apply(&WatcherEvent::Applied(config_map("a", "x", "123")));
        store.apply(&WatcherEvent::Applied(config_map("a", "y", "12")));
        assert_eq!(reader.get("a", "x"), Some(3));
        assert_eq!(reader.filter(|len| *len > 2), [3]);
        store.apply(&WatcherEvent::Deleted(config_map("a", "x", "")));
        assert_eq!(reader.list(), [2]);
    }

    #[test]
    fn keys_display_as_namespace_slash_name() {
        assert_eq!(ObjectKey::new("ns", "n").to_string(), "ns/n");
        assert_eq!(
            ObjectKey::new("", "cluster-wide").to_string(),
            "cluster-wide"
        );
    }
}
