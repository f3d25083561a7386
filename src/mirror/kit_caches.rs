//! The caches of the kit kinds `--kinds` enables: for each, its sources (in the namespaces
//! sources may come from) and its copies (by skiff's `managed-by` label), watched only when the
//! kind is enabled, so a default install opens no watch and needs no right on any of them.
//!
//! A copy is kept as for ConfigMaps: a [`CopyInfo`] (the hash of its user-set fields, its
//! resourceVersion and skiff's record), never the object. A ResourceQuota whose `status.used`
//! changes is seen as a new resourceVersion with the same hash: nothing is read or written.

use super::copy::{CopyInfo, Owner};
use super::enqueue::copy_owners;
use super::index::{copies_of, copy_store};
use super::kinds::Kinds;
use super::kit_table::KitKind;
use super::source::SourceContent;
use super::source_stores::{SourceScope, SourceStores, regardless, spawn_from};
use super::types::{Mirror, SourceKind};
use crate::kube::Client;
use crate::kube::api::KitObject;
use crate::runtime::{ApiSource, ObjectKey, Store, WatcherConfig, WorkQueue};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The caches of one kit kind. Every kind is kept as [`KitObject`], its watches addressed by
/// its collection's path, so the watch and store code is compiled in once for all kinds.
#[derive(Clone)]
struct KindStores {
    kind: &'static KitKind,
    sources: SourceStores<KitObject>,
    copies: Store<KitObject, CopyInfo>,
}

impl KindStores {
    fn new(scope: &SourceScope, kind: &'static KitKind) -> KindStores {
        let (of, fields) = (kind.kind, kind.fields);
        KindStores {
            kind,
            sources: SourceStores::new(scope, move |o| SourceContent::of_kit(of, o, fields)),
            copies: copy_store(move |o| CopyInfo::of_kit_object(of, o, fields)),
        }
    }

    fn spawn_watches(
        &self,
        client: &Client,
        queue: &WorkQueue<ObjectKey>,
        mirrors: &Store<Mirror, Mirror>,
        copies: &WatcherConfig,
    ) -> Vec<smol::Task<()>> {
        let (kind, of) = (self.kind, self.kind.kind);
        let owners = regardless(copy_owners(mirrors.clone(), of));
        let all = ApiSource::at(client, None, kind.collection_path(None));
        let copy_store = self.copies.clone();
        let mut tasks = vec![spawn_from(all, copies.clone(), copy_store, queue, owners)];
        let source = |ns: Option<&str>| ApiSource::at(client, ns, kind.collection_path(ns));
        tasks.extend(self.sources.spawn_watches_from(queue, mirrors, of, source));
        tasks
    }
}

/// The caches of every enabled kit kind; none for a kind not enabled.
#[derive(Clone, Default)]
pub struct KitCaches {
    kinds: Arc<BTreeMap<SourceKind, KindStores>>,
}

impl KitCaches {
    pub fn new(scope: &SourceScope, kinds: &Kinds) -> KitCaches {
        let kinds = kinds
            .enabled()
            .map(|entry| (entry.kind, KindStores::new(scope, entry)))
            .collect();
        KitCaches {
            kinds: Arc::new(kinds),
        }
    }

    pub fn source(
        &self,
        kind: SourceKind,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<SourceContent>> {
        self.kinds.get(&kind)?.sources.get(namespace, name)
    }

    pub fn copy(&self, kind: SourceKind, namespace: &str, name: &str) -> Option<CopyInfo> {
        self.kinds.get(&kind)?.copies.get(namespace, name)
    }

    /// The copies of every enabled kind labelled for the Mirror `owner`.
    pub fn copies_of(&self, owner: &Owner) -> Vec<(ObjectKey, CopyInfo)> {
        self.kinds
            .values()
            .flat_map(|c| copies_of(&c.copies, owner))
            .collect()
    }

    /// Every Mirror a cached copy names: after a relist of the Mirrors, one that vanished while
    /// the watch was down is remembered only by its copies.
    pub fn owners(&self) -> Vec<ObjectKey> {
        let copies = self.kinds.values().flat_map(|c| c.copies.list());
        copies
            .filter_map(|c| c.owner)
            .map(|o| ObjectKey::new(&o.namespace, &o.name))
            .collect()
    }

    pub async fn wait_until_ready(&self) {
        for cache in self.kinds.values() {
            cache.sources.wait_until_ready().await;
            cache.copies.wait_until_ready().await;
        }
    }

    /// The watches of every enabled kind: copies with `copies` (skiff's label), sources in the
    /// source namespaces.
    pub fn spawn_watches(
        &self,
        client: &Client,
        queue: &WorkQueue<ObjectKey>,
        mirrors: &Store<Mirror, Mirror>,
        copies: &WatcherConfig,
    ) -> Vec<smol::Task<()>> {
        self.kinds
            .values()
            .flat_map(|c| c.spawn_watches(client, queue, mirrors, copies))
            .collect()
    }
}
