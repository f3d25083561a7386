//! Store: the cache a watcher fills, keeping only the projection of each object a controller
//! needs, readable from any number of reconcilers at once.
//!
//! Keeping a projection instead of the object is what keeps memory independent of payloads:
//! a controller watching copies of Secrets can keep name, labels, resourceVersion and a hash.
//! A relist is projected object by object as it arrives ([`contents`] says how removals are
//! found at its end), and the store is not [ready](Store::ready) while one is under way.

mod contents;
mod index;
mod readiness;

use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::change::Change;
use crate::kube::api::{ObjectMeta, Resource};
use contents::{Contents, IndexFn};
use readiness::Readiness;
/// The namespace and name of an object: the key of the store and of the work queue.
/// `namespace` is empty for cluster-scoped objects. Boxed strings, not `String`s: every cached
/// object and every index entry holds a key, and a box is a third smaller (16 bytes, not 24;
/// pinned by a test).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    pub namespace: Box<str>,
    pub name: Box<str>,
}

impl ObjectKey {
    pub fn new(namespace: impl AsRef<str>, name: impl AsRef<str>) -> ObjectKey {
        ObjectKey {
            namespace: namespace.as_ref().into(),
            name: name.as_ref().into(),
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

/// A cache of projections `P` of objects `K`, keyed by [`ObjectKey`], with an optional
/// secondary index from string values to keys.
///
/// Clones share one cache. The lock is a std `RwLock` because no one holds it across an
/// `await`: readers copy out what they need, the watcher task writes one event at a time.
/// The index lives under the same lock as the objects, so a reader never sees one without the
/// other.
pub struct Store<K, P> {
    shared: Arc<RwLock<Contents<P>>>,
    readiness: Readiness,
    project: Project<K, P>,
    index: Option<IndexFn<P>>,
    kind: PhantomData<fn(&K)>,
}

impl<K, P> Clone for Store<K, P> {
    fn clone(&self) -> Self {
        Store {
            shared: Arc::clone(&self.shared),
            readiness: self.readiness.clone(),
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
            readiness: Readiness::new(),
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

    /// Applies one watcher event and returns the projection it replaced or removed, if any.
    /// A relist replaces everything: objects it does not list are dropped when it completes
    /// (`Relisted`), which makes the store ready.
    pub fn apply(&self, event: &Change<K>) -> Option<P> {
        let index = self.index.as_ref();
        match event {
            Change::Relisting => {
                self.readiness.relisting();
                self.write().begin_relist();
                None
            }
            Change::Listed(object) | Change::Applied(object) => {
                let key = ObjectKey::of(object)?;
                let projected = (self.project)(object);
                self.write().insert(index, key, projected)
            }
            Change::Deleted(object) => {
                let key = ObjectKey::of(object)?;
                self.write().remove(index, &key)
            }
            Change::Relisted => {
                let (gone, kept) = {
                    let mut contents = self.write();
                    (contents.end_relist(index), contents.len())
                };
                log::debug!("{} relisted: {kept} cached, {gone} gone", K::KIND);
                self.readiness.listed();
                None
            }
        }
    }

    /// Applies a complete relist of `objects`, as a watcher reports one.
    #[cfg(test)]
    pub fn relist(&self, objects: Vec<K>) {
        for event in Change::relist(objects) {
            self.apply(&event);
        }
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<P> {
        self.read().get(&ObjectKey::new(namespace, name)).cloned()
    }

    pub fn contains(&self, key: &ObjectKey) -> bool {
        self.read().get(key).is_some()
    }

    /// Every projection, in no particular order.
    pub fn list(&self) -> Vec<P> {
        self.read().iter().map(|(_, p)| p.clone()).collect()
    }

    /// Calls `visit` on every key and projection under one read lock, copying nothing.
    pub fn scan(&self, mut visit: impl FnMut(&ObjectKey, &P)) {
        for (key, p) in self.read().iter() {
            visit(key, p);
        }
    }

    /// The projections indexed under `value`, each with its key (empty without an index).
    pub fn indexed(&self, value: &str) -> Vec<(ObjectKey, P)> {
        let contents = self.read();
        let found = contents.index.keys(value).filter_map(|key| {
            let projection = contents.get(&key)?.clone();
            Some((key, projection))
        });
        found.collect()
    }

    /// The keys indexed under `value` (empty without an index).
    pub fn indexed_keys(&self, value: &str) -> Vec<ObjectKey> {
        self.read().index.keys(value).collect()
    }

    /// Every key, in no particular order.
    pub fn keys(&self) -> Vec<ObjectKey> {
        self.read().iter().map(|(k, _)| k.clone()).collect()
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the store holds a complete list: its first list has completed and no relist is
    /// under way. Before that it may lack objects that exist.
    pub fn ready(&self) -> bool {
        self.readiness.is_ready()
    }

    /// Waits until the store is [ready](Store::ready). A controller must not act on absences
    /// (e.g. delete a copy in a namespace it has not seen) before this.
    pub async fn wait_until_ready(&self) {
        self.readiness.wait().await;
    }

    fn read(&self) -> RwLockReadGuard<'_, Contents<P>> {
        self.shared.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Contents<P>> {
        self.shared.write().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests;
