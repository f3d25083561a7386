//! Store: the cache a watcher fills, keeping only the projection of each object a controller
//! needs, readable from any number of reconcilers at once.
//!
//! Keeping a projection instead of the object is what keeps memory independent of payloads:
//! a controller watching copies of Secrets can keep name, labels, resourceVersion and a hash.

use std::collections::{HashMap, HashSet};
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
/// The index values of a projection (for example the owner a copy names).
type IndexFn<P> = Arc<dyn Fn(&P) -> Vec<String> + Send + Sync>;

/// A cache of projections `P` of objects `K`, keyed by [`ObjectKey`], with an optional
/// secondary index from string values to keys.
///
/// Clones share one cache. The lock is a std `RwLock` because no one holds it across an
/// `await`: readers copy out what they need, the watcher task writes one event at a time.
/// The index lives under the same lock as the objects, so a reader never sees one without the
/// other.
pub struct Store<K, P> {
    shared: Arc<RwLock<Contents<P>>>,
    /// Fired by the first `Restarted`; shared by every clone.
    ready: (Arc<Trigger>, Signal),
    project: Project<K, P>,
    index: Option<IndexFn<P>>,
    kind: PhantomData<fn(&K)>,
}

struct Contents<P> {
    objects: HashMap<ObjectKey, P>,
    index: HashMap<String, HashSet<ObjectKey>>,
}

impl<P> Default for Contents<P> {
    fn default() -> Self {
        Contents {
            objects: HashMap::new(),
            index: HashMap::new(),
        }
    }
}

impl<P> Contents<P> {
    fn insert(&mut self, index: Option<&IndexFn<P>>, key: ObjectKey, value: P) {
        if let Some(index) = index {
            for v in index(&value) {
                self.index.entry(v).or_default().insert(key.clone());
            }
        }
        if let Some(old) = self.objects.insert(key.clone(), value) {
            self.unindex(index, &key, &old);
        }
    }

    fn remove(&mut self, index: Option<&IndexFn<P>>, key: &ObjectKey) {
        if let Some(old) = self.objects.remove(key) {
            self.unindex(index, key, &old);
        }
    }

    /// Drops `key` from the index values of `old` that its current projection no longer has.
    fn unindex(&mut self, index: Option<&IndexFn<P>>, key: &ObjectKey, old: &P) {
        let Some(index) = index else { return };
        let current = self.objects.get(key).map(|p| index(p)).unwrap_or_default();
        for v in index(old) {
            if current.contains(&v) {
                continue;
            }
            if let Some(keys) = self.index.get_mut(&v) {
                keys.remove(key);
                if keys.is_empty() {
                    self.index.remove(&v);
                }
            }
        }
    }
}

impl<K, P> Clone for Store<K, P> {
    fn clone(&self) -> Self {
        Store {
            shared: Arc::clone(&self.shared),
            ready: self.ready.clone(),
            project: Arc::clone(&self.project),
            index: self.index.clone(),
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
            index: None,
            kind: PhantomData,
        }
    }

    /// The same store, also indexing each projection under the values `index` gives it, for
    /// [`Store::indexed`] lookups that cost what they find rather than the whole cache.
    pub fn with_index(
        mut self,
        index: impl Fn(&P) -> Vec<String> + Send + Sync + 'static,
    ) -> Store<K, P> {
        self.index = Some(Arc::new(index));
        self
    }

    /// Applies one watcher event: `Restarted` replaces everything (objects deleted while the
    /// watch was down disappear) and makes the store ready.
    pub fn apply(&self, event: &WatcherEvent<K>) {
        let index = self.index.as_ref();
        match event {
            WatcherEvent::Restarted(objects) => {
                let mut fresh = Contents::default();
                for o in objects {
                    if let Some(key) = ObjectKey::of(o) {
                        fresh.insert(index, key, (self.project)(o));
                    }
                }
                *self.write() = fresh;
                self.ready.0.fire();
            }
            WatcherEvent::Applied(object) => {
                if let Some(key) = ObjectKey::of(object) {
                    let projected = (self.project)(object);
                    self.write().insert(index, key, projected);
                }
            }
            WatcherEvent::Deleted(object) => {
                if let Some(key) = ObjectKey::of(object) {
                    self.write().remove(index, &key);
                }
            }
        }
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<P> {
        self.read()
            .objects
            .get(&ObjectKey::new(namespace, name))
            .cloned()
    }

    /// Every projection, in no particular order.
    pub fn list(&self) -> Vec<P> {
        self.read().objects.values().cloned().collect()
    }

    /// Calls `visit` on every key and projection under one read lock, copying nothing.
    pub fn scan(&self, mut visit: impl FnMut(&ObjectKey, &P)) {
        for (key, p) in &self.read().objects {
            visit(key, p);
        }
    }

    /// The projections indexed under `value` (empty without an index).
    pub fn indexed(&self, value: &str) -> Vec<P> {
        let contents = self.read();
        let Some(keys) = contents.index.get(value) else {
            return Vec::new();
        };
        keys.iter()
            .filter_map(|k| contents.objects.get(k).cloned())
            .collect()
    }

    /// The keys indexed under `value` (empty without an index).
    pub fn indexed_keys(&self, value: &str) -> Vec<ObjectKey> {
        self.read()
            .index
            .get(value)
            .map(|keys| keys.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Every key, in no particular order.
    pub fn keys(&self) -> Vec<ObjectKey> {
        self.read().objects.keys().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.read().objects.len()
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

    fn read(&self) -> RwLockReadGuard<'_, Contents<P>> {
        self.shared.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Contents<P>> {
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
        assert_eq!(reader.get("a", "x"), Some(3));
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

    #[test]
    fn the_index_follows_each_projection_and_forgets_what_went() {
        let by_value = |cm: &ConfigMap| cm.data.values().cloned().collect::<Vec<_>>();
        let store = Store::new(ConfigMap::clone).with_index(by_value);
        store.apply(&WatcherEvent::Applied(config_map("a", "x", "red")));
        store.apply(&WatcherEvent::Applied(config_map("b", "y", "red")));
        let mut reds = store.indexed_keys("red");
        reds.sort();
        assert_eq!(reds, [ObjectKey::new("a", "x"), ObjectKey::new("b", "y")]);
        store.apply(&WatcherEvent::Applied(config_map("a", "x", "blue")));
        assert_eq!(store.indexed_keys("red"), [ObjectKey::new("b", "y")]);
        assert_eq!(store.indexed("blue").len(), 1);
        store.apply(&WatcherEvent::Deleted(config_map("b", "y", "")));
        assert!(store.indexed_keys("red").is_empty());
        store.apply(&WatcherEvent::Restarted(vec![config_map(
            "c", "z", "green",
        )]));
        assert!(
            store.indexed_keys("blue").is_empty(),
            "a relist rebuilds the index"
        );
        assert_eq!(store.indexed_keys("green"), [ObjectKey::new("c", "z")]);
    }
}
