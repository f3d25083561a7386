//! Where sources are read from, and the stores that keep them: one store per watched namespace
//! for each kind read, each filled by exactly one watch. Shared by the caches of every kind
//! ([`super::caches`], [`super::kit_caches`]).

use super::enqueue::mirrors_of_source;
use super::source::SourceContent;
use super::types::{Mirror, SourceKind};
use crate::kube::Client;
use crate::kube::api::Resource;
use crate::runtime::{
    ApiSource, Change, ObjectKey, Store, Watcher, WatcherConfig, WorkQueue, feed,
};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Where Mirror sources may be read from (`--source-namespaces`, resolved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceScope {
    All,
    Namespaces(BTreeSet<String>),
}

impl SourceScope {
    pub fn allows(&self, namespace: &str) -> bool {
        match self {
            SourceScope::All => true,
            SourceScope::Namespaces(set) => set.contains(namespace),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            SourceScope::All => "*".to_owned(),
            SourceScope::Namespaces(set) => set.iter().cloned().collect::<Vec<_>>().join(","),
        }
    }

    /// One watch per allowed namespace, or one across all (`None`).
    fn watch_namespaces(&self) -> Vec<Option<String>> {
        match self {
            SourceScope::All => vec![None],
            SourceScope::Namespaces(set) => set.iter().cloned().map(Some).collect(),
        }
    }
}

/// Source payloads of one kind, one store per watched namespace (a store is filled by exactly
/// one watcher, whose relist replaces its whole content).
#[derive(Clone)]
pub struct SourceStores<K: Resource> {
    stores: HashMap<Option<String>, Store<K, Arc<SourceContent>>>,
}

impl<K: Resource + Clone> SourceStores<K> {
    pub fn new(
        scope: &SourceScope,
        project: impl Fn(&K) -> Arc<SourceContent> + Clone + Send + Sync + 'static,
    ) -> SourceStores<K> {
        let stores = scope
            .watch_namespaces()
            .into_iter()
            .map(|ns| (ns, Store::new(project.clone())))
            .collect();
        SourceStores { stores }
    }

    /// No store and no watch: sources of this kind are never read.
    pub fn none() -> SourceStores<K> {
        SourceStores {
            stores: HashMap::new(),
        }
    }

    /// One watch per store, each enqueueing the Mirrors that read the changed source.
    pub fn spawn_watches(
        &self,
        client: &Client,
        queue: &WorkQueue<ObjectKey>,
        mirrors: &Store<Mirror, Mirror>,
        kind: SourceKind,
    ) -> Vec<smol::Task<()>> {
        self.spawn_watches_from(queue, mirrors, kind, |ns| ApiSource::new(client, ns))
    }

    /// As [`SourceStores::spawn_watches`], each watch reading from `source(namespace)`.
    pub fn spawn_watches_from(
        &self,
        queue: &WorkQueue<ObjectKey>,
        mirrors: &Store<Mirror, Mirror>,
        kind: SourceKind,
        source: impl Fn(Option<&str>) -> ApiSource,
    ) -> Vec<smol::Task<()>> {
        self.stores
            .iter()
            .map(|(ns, store)| {
                let map = regardless(mirrors_of_source(mirrors.clone(), kind));
                let config = WatcherConfig::default();
                spawn_from(source(ns.as_deref()), config, store.clone(), queue, map)
            })
            .collect()
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<SourceContent>> {
        let store = self
            .stores
            .get(&Some(namespace.to_owned()))
            .or_else(|| self.stores.get(&None))?;
        store.get(namespace, name)
    }

    pub async fn wait_until_ready(&self) {
        for store in self.stores.values() {
            store.wait_until_ready().await;
        }
    }
}

pub fn spawn<K: Resource + Clone, P: Clone + Send + Sync + 'static>(
    client: &Client,
    namespace: Option<&str>,
    config: WatcherConfig,
    store: Store<K, P>,
    queue: &WorkQueue<ObjectKey>,
    map: impl Fn(&Change<K>, Option<&P>) -> Vec<ObjectKey> + Send + 'static,
) -> smol::Task<()> {
    spawn_from(ApiSource::new(client, namespace), config, store, queue, map)
}

/// As [`spawn`], reading from `source`.
pub fn spawn_from<K: Resource + Clone, P: Clone + Send + Sync + 'static>(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_allows_listed_namespaces_or_all() {
        let only = SourceScope::Namespaces(["skiff-system".to_string()].into());
        assert!(only.allows("skiff-system"));
        assert!(!only.allows("kube-system"));
        assert!(SourceScope::All.allows("anything"));
        assert_eq!(
            only.watch_namespaces(),
            vec![Some("skiff-system".to_string())]
        );
        assert_eq!(SourceScope::All.watch_namespaces(), vec![None]);
    }
}
