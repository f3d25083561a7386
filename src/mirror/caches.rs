//! The Mirror controller's caches, and which Mirrors each watch event concerns.
//!
//! Memory must not grow with objects skiff doesn't manage, so each watch is as narrow as the
//! API allows: Mirrors and Namespaces (small), ConfigMaps and Secrets only in the namespaces
//! sources may come from, and copies only by skiff's `managed-by` label, keeping a hash of
//! their content rather than the content.

use super::copy::{CopyInfo, Payload, managed_selector, owner_of};
use super::selector::NamespaceInfo;
use super::types::{Mirror, SourceKind};
use crate::kube::Client;
use crate::kube::api::{ConfigMap, Namespace, Resource, Secret};
use crate::runtime::{
    ApiSource, ObjectKey, Store, Watcher, WatcherConfig, WatcherEvent, WorkQueue, feed, object_keys,
};
use std::collections::{BTreeSet, HashMap};

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
pub struct SourceStores<K: Resource> {
    stores: HashMap<Option<String>, Store<K, Payload>>,
}

impl<K: Resource> SourceStores<K> {
    fn new(scope: &SourceScope, project: fn(&K) -> Payload) -> SourceStores<K> {
        let stores = scope
            .watch_namespaces()
            .into_iter()
            .map(|ns| (ns, Store::new(project)))
            .collect();
        SourceStores { stores }
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<Payload> {
        let store = self
            .stores
            .get(&Some(namespace.to_owned()))
            .or_else(|| self.stores.get(&None))?;
        store.get(namespace, name)
    }
}

/// Everything the reconciler reads. Clones of the stores are shared with the watch tasks.
pub struct Caches {
    pub mirrors: Store<Mirror, Mirror>,
    pub namespaces: Store<Namespace, NamespaceInfo>,
    pub configmap_sources: SourceStores<ConfigMap>,
    pub secret_sources: SourceStores<Secret>,
    pub configmap_copies: Store<ConfigMap, CopyInfo>,
    pub secret_copies: Store<Secret, CopyInfo>,
}

fn namespace_info(ns: &Namespace) -> NamespaceInfo {
    NamespaceInfo {
        name: ns.metadata.name().to_owned(),
        labels: ns.metadata.labels.clone(),
        terminating: ns.is_terminating(),
    }
}

impl Caches {
    pub fn new(scope: &SourceScope) -> Caches {
        Caches {
            mirrors: Store::whole(),
            namespaces: Store::new(namespace_info),
            configmap_sources: SourceStores::new(scope, Payload::of_configmap),
            secret_sources: SourceStores::new(scope, Payload::of_secret),
            configmap_copies: Store::new(CopyInfo::of_configmap),
            secret_copies: Store::new(CopyInfo::of_secret),
        }
    }

    pub fn source(&self, kind: SourceKind, namespace: &str, name: &str) -> Option<Payload> {
        match kind {
            SourceKind::ConfigMap => self.configmap_sources.get(namespace, name),
            SourceKind::Secret => self.secret_sources.get(namespace, name),
        }
    }

    pub fn copy(&self, kind: SourceKind, namespace: &str, name: &str) -> Option<CopyInfo> {
        match kind {
            SourceKind::ConfigMap => self.configmap_copies.get(namespace, name),
            SourceKind::Secret => self.secret_copies.get(namespace, name),
        }
    }

    /// Every cached copy labelled for the Mirror `owner`, of either kind.
    pub fn copies_of(&self, owner: &super::copy::Owner) -> Vec<CopyInfo> {
        let mine = |c: &CopyInfo| c.owner.as_ref() == Some(owner);
        let mut copies = self.configmap_copies.filter(mine);
        copies.extend(self.secret_copies.filter(mine));
        copies
    }

    /// Waits until every store has its first full list.
    pub async fn wait_until_ready(&self) {
        self.mirrors.wait_until_ready().await;
        self.namespaces.wait_until_ready().await;
        for store in self.configmap_sources.stores.values() {
            store.wait_until_ready().await;
        }
        for store in self.secret_sources.stores.values() {
            store.wait_until_ready().await;
        }
        self.configmap_copies.wait_until_ready().await;
        self.secret_copies.wait_until_ready().await;
    }

    /// Starts one task per watch, feeding the stores and enqueueing the Mirrors each event
    /// concerns. Dropping the tasks stops the watches.
    pub fn spawn_watches(
        &self,
        client: &Client,
        queue: &WorkQueue<ObjectKey>,
    ) -> Vec<smol::Task<()>> {
        let copies = WatcherConfig::default().labels(&managed_selector());
        let mut tasks = vec![
            spawn(
                client,
                None,
                WatcherConfig::default(),
                self.mirrors.clone(),
                queue,
                mirror_keys(self.configmap_copies.clone(), self.secret_copies.clone()),
            ),
            spawn(
                client,
                None,
                WatcherConfig::default(),
                self.namespaces.clone(),
                queue,
                {
                    let mirrors = self.mirrors.clone();
                    move |_: &WatcherEvent<Namespace>| mirrors.keys()
                },
            ),
            spawn(
                client,
                None,
                copies.clone(),
                self.configmap_copies.clone(),
                queue,
                copy_owners(self.mirrors.clone()),
            ),
            spawn(
                client,
                None,
                copies,
                self.secret_copies.clone(),
                queue,
                copy_owners(self.mirrors.clone()),
            ),
        ];
        for (ns, store) in &self.configmap_sources.stores {
            let map = mirrors_of_source(self.mirrors.clone(), SourceKind::ConfigMap);
            tasks.push(spawn(
                client,
                ns.as_deref(),
                WatcherConfig::default(),
                store.clone(),
                queue,
                map,
            ));
        }
        for (ns, store) in &self.secret_sources.stores {
            let map = mirrors_of_source(self.mirrors.clone(), SourceKind::Secret);
            tasks.push(spawn(
                client,
                ns.as_deref(),
                WatcherConfig::default(),
                store.clone(),
                queue,
                map,
            ));
        }
        tasks
    }
}

fn spawn<K: Resource + Clone, P: Clone + Send + Sync + 'static>(
    client: &Client,
    namespace: Option<&str>,
    config: WatcherConfig,
    store: Store<K, P>,
    queue: &WorkQueue<ObjectKey>,
    map: impl Fn(&WatcherEvent<K>) -> Vec<ObjectKey> + Send + 'static,
) -> smol::Task<()> {
    let watcher = Watcher::new(ApiSource::new(client, namespace), config);
    smol::spawn(feed(watcher, store, queue.clone(), map))
}

/// The Mirrors a Mirror event concerns. After a relist, also every Mirror a cached copy
/// names: a Mirror that vanished while the watch was down is in no list, and only its
/// leftover copies remember it.
fn mirror_keys(
    configmap_copies: Store<ConfigMap, CopyInfo>,
    secret_copies: Store<Secret, CopyInfo>,
) -> impl Fn(&WatcherEvent<Mirror>) -> Vec<ObjectKey> + Send + 'static {
    move |event| {
        let mut keys: BTreeSet<ObjectKey> = object_keys(event).into_iter().collect();
        if let WatcherEvent::Restarted(_) = event {
            let copies = configmap_copies
                .list()
                .into_iter()
                .chain(secret_copies.list());
            keys.extend(
                copies
                    .filter_map(|c| c.owner)
                    .map(|o| ObjectKey::new(o.namespace, o.name)),
            );
        }
        keys.into_iter().collect()
    }
}

/// The Mirrors a copy event concerns; every Mirror when the event cannot say whose copy went:
/// - after a relist, as a copy deleted while the watch was down is in no list;
/// - for a copy that left the label selection (its labels were removed by hand): the watch
///   reports it deleted with its new, unlabelled state, which names no Mirror.
fn copy_owners<K: Resource>(
    mirrors: Store<Mirror, Mirror>,
) -> impl Fn(&WatcherEvent<K>) -> Vec<ObjectKey> + Send + 'static {
    move |event| {
        let mut keys: BTreeSet<ObjectKey> = owners(event).into_iter().collect();
        let anonymous = match event {
            WatcherEvent::Restarted(_) => true,
            WatcherEvent::Applied(o) | WatcherEvent::Deleted(o) => owner_of(o.metadata()).is_none(),
        };
        if anonymous {
            keys.extend(mirrors.keys());
        }
        keys.into_iter().collect()
    }
}

/// The Mirrors named by the labels of the copies in an event.
fn owners<K: Resource>(event: &WatcherEvent<K>) -> Vec<ObjectKey> {
    let key = |o: &K| owner_of(o.metadata()).map(|o| ObjectKey::new(o.namespace, o.name));
    let keys: BTreeSet<ObjectKey> = match event {
        WatcherEvent::Restarted(objects) => objects.iter().filter_map(key).collect(),
        WatcherEvent::Applied(o) | WatcherEvent::Deleted(o) => key(o).into_iter().collect(),
    };
    keys.into_iter().collect()
}

/// The Mirrors whose source is the object in an event (every Mirror after a relist).
fn mirrors_of_source<K: Resource>(
    mirrors: Store<Mirror, Mirror>,
    kind: SourceKind,
) -> impl Fn(&WatcherEvent<K>) -> Vec<ObjectKey> + Send + 'static {
    move |event| match event {
        WatcherEvent::Restarted(_) => mirrors.keys(),
        WatcherEvent::Applied(o) | WatcherEvent::Deleted(o) => {
            let (ns, name) = (o.metadata().namespace(), o.metadata().name());
            mirrors
                .filter(|m| {
                    m.spec.source.kind == kind
                        && m.spec.source.name == name
                        && m.metadata.namespace() == ns
                })
                .iter()
                .filter_map(ObjectKey::of)
                .collect()
        }
    }
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

    #[test]
    fn copy_events_enqueue_their_owning_mirror_once() {
        let cm = ConfigMap {
            metadata: super::super::copy::copy_meta(&mirror("src", "m"), "a", "h", None),
            ..ConfigMap::default()
        };
        let mut other = cm.clone();
        other.metadata.namespace = Some("b".into());
        let keys = owners(&WatcherEvent::Restarted(vec![
            cm.clone(),
            other,
            ConfigMap::default(),
        ]));
        assert_eq!(keys, vec![ObjectKey::new("src", "m")]);
        assert_eq!(
            owners(&WatcherEvent::Deleted(cm)),
            vec![ObjectKey::new("src", "m")]
        );
    }

    #[test]
    fn source_events_enqueue_the_mirrors_reading_that_source() {
        let mirrors: Store<Mirror, Mirror> = Store::whole();
        let mut secret_mirror = mirror("src", "s");
        secret_mirror.spec.source.kind = SourceKind::Secret;
        mirrors.apply(&WatcherEvent::Restarted(vec![
            mirror("src", "m"),
            mirror("other", "m2"),
            secret_mirror,
        ]));
        let map = mirrors_of_source::<ConfigMap>(mirrors, SourceKind::ConfigMap);
        let source = ConfigMap {
            metadata: crate::kube::api::ObjectMeta::named(Some("src"), "app-ca"),
            ..ConfigMap::default()
        };
        assert_eq!(
            map(&WatcherEvent::Applied(source)),
            vec![ObjectKey::new("src", "m")]
        );
    }

    #[test]
    fn a_copy_relist_enqueues_a_mirror_whose_last_copy_vanished() {
        let mirrors: Store<Mirror, Mirror> = Store::whole();
        mirrors.apply(&WatcherEvent::Restarted(vec![mirror("src", "m")]));
        let map = copy_owners::<ConfigMap>(mirrors);
        assert_eq!(
            map(&WatcherEvent::Restarted(Vec::new())),
            vec![ObjectKey::new("src", "m")]
        );
    }

    #[test]
    fn a_copy_leaving_the_selection_unlabelled_enqueues_every_mirror() {
        let mirrors: Store<Mirror, Mirror> = Store::whole();
        mirrors.apply(&WatcherEvent::Restarted(vec![
            mirror("src", "m"),
            mirror("src", "n"),
        ]));
        let map = copy_owners::<ConfigMap>(mirrors);
        let stripped = ConfigMap {
            metadata: crate::kube::api::ObjectMeta::named(Some("a"), "app-ca"),
            ..ConfigMap::default()
        };
        let mut keys = map(&WatcherEvent::Deleted(stripped));
        keys.sort();
        assert_eq!(
            keys,
            [ObjectKey::new("src", "m"), ObjectKey::new("src", "n")]
        );
        let labelled = ConfigMap {
            metadata: super::super::copy::copy_meta(&mirror("src", "m"), "a", "h", None),
            ..ConfigMap::default()
        };
        assert_eq!(
            map(&WatcherEvent::Deleted(labelled)),
            [ObjectKey::new("src", "m")]
        );
    }

    #[test]
    fn a_mirror_relist_enqueues_mirrors_only_leftover_copies_remember() {
        let copies: Store<ConfigMap, CopyInfo> = Store::new(CopyInfo::of_configmap);
        let orphan = ConfigMap {
            metadata: super::super::copy::copy_meta(&mirror("src", "gone"), "a", "h", None),
            ..ConfigMap::default()
        };
        copies.apply(&WatcherEvent::Restarted(vec![orphan]));
        let map = mirror_keys(copies, Store::new(CopyInfo::of_secret));
        assert_eq!(
            map(&WatcherEvent::Restarted(vec![mirror("src", "m")])),
            vec![ObjectKey::new("src", "gone"), ObjectKey::new("src", "m")]
        );
        assert_eq!(
            map(&WatcherEvent::Applied(mirror("src", "m"))),
            vec![ObjectKey::new("src", "m")]
        );
    }

    fn mirror(ns: &str, name: &str) -> Mirror {
        let mut m = Mirror {
            metadata: crate::kube::api::ObjectMeta::named(Some(ns), name),
            ..Mirror::default()
        };
        m.spec.source.name = "app-ca".into();
        m
    }
}
