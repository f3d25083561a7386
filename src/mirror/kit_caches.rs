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
use super::kit_types::{KitResource, with_kit_type};
use super::source::SourceContent;
use super::source_stores::{SourceScope, SourceStores, regardless, spawn};
use super::types::{Mirror, SourceKind};
use crate::kube::Client;
use crate::runtime::{ObjectKey, Store, WatcherConfig, WorkQueue};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The caches of one kit kind, whatever its API type.
trait KindCache: Send + Sync {
    fn source(&self, namespace: &str, name: &str) -> Option<Arc<SourceContent>>;
    fn copy(&self, namespace: &str, name: &str) -> Option<CopyInfo>;
    fn copies_of(&self, owner: &Owner) -> Vec<CopyInfo>;
    fn copies(&self) -> Vec<CopyInfo>;
    fn wait_until_ready(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
    fn spawn_watches(
        &self,
        client: &Client,
        queue: &WorkQueue<ObjectKey>,
        mirrors: &Store<Mirror, Mirror>,
        copies: &WatcherConfig,
    ) -> Vec<smol::Task<()>>;
}

struct KindStores<K: KitResource> {
    sources: SourceStores<K>,
    copies: Store<K, CopyInfo>,
}

impl<K: KitResource> KindStores<K> {
    fn new(scope: &SourceScope) -> KindStores<K> {
        KindStores {
            sources: SourceStores::new(scope, SourceContent::of_kit::<K>),
            copies: copy_store(CopyInfo::of_kit::<K>),
        }
    }
}

impl<K: KitResource> KindCache for KindStores<K> {
    fn source(&self, namespace: &str, name: &str) -> Option<Arc<SourceContent>> {
        self.sources.get(namespace, name)
    }

    fn copy(&self, namespace: &str, name: &str) -> Option<CopyInfo> {
        self.copies.get(namespace, name)
    }

    fn copies_of(&self, owner: &Owner) -> Vec<CopyInfo> {
        copies_of(&self.copies, owner)
    }

    fn copies(&self) -> Vec<CopyInfo> {
        self.copies.list()
    }

    fn wait_until_ready(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            self.sources.wait_until_ready().await;
            self.copies.wait_until_ready().await;
        })
    }

    fn spawn_watches(
        &self,
        client: &Client,
        queue: &WorkQueue<ObjectKey>,
        mirrors: &Store<Mirror, Mirror>,
        copies: &WatcherConfig,
    ) -> Vec<smol::Task<()>> {
        let owners = regardless(copy_owners(mirrors.clone(), K::SOURCE_KIND));
        let copy_store = self.copies.clone();
        let mut tasks = vec![spawn(
            client,
            None,
            copies.clone(),
            copy_store,
            queue,
            owners,
        )];
        tasks.extend(
            self.sources
                .spawn_watches(client, queue, mirrors, K::SOURCE_KIND),
        );
        tasks
    }
}

/// The caches of every enabled kit kind; none for a kind not enabled.
#[derive(Clone, Default)]
pub struct KitCaches {
    kinds: BTreeMap<SourceKind, Arc<dyn KindCache>>,
}

impl KitCaches {
    pub fn new(scope: &SourceScope, kinds: &Kinds) -> KitCaches {
        let kinds = kinds
            .enabled()
            .filter_map(|entry| {
                let cache: Arc<dyn KindCache> = with_kit_type!(entry.kind,
                    K => Arc::new(KindStores::<K>::new(scope)), else return None);
                Some((entry.kind, cache))
            })
            .collect();
        KitCaches { kinds }
    }

    pub fn source(
        &self,
        kind: SourceKind,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<SourceContent>> {
        self.kinds.get(&kind)?.source(namespace, name)
    }

    pub fn copy(&self, kind: SourceKind, namespace: &str, name: &str) -> Option<CopyInfo> {
        self.kinds.get(&kind)?.copy(namespace, name)
    }

    /// The copies of every enabled kind labelled for the Mirror `owner`.
    pub fn copies_of(&self, owner: &Owner) -> Vec<CopyInfo> {
        self.kinds
            .values()
            .flat_map(|c| c.copies_of(owner))
            .collect()
    }

    /// Every Mirror a cached copy names: after a relist of the Mirrors, one that vanished while
    /// the watch was down is remembered only by its copies.
    pub fn owners(&self) -> Vec<ObjectKey> {
        let copies = self.kinds.values().flat_map(|c| c.copies());
        copies
            .filter_map(|c| c.owner)
            .map(|o| ObjectKey::new(o.namespace, o.name))
            .collect()
    }

    pub async fn wait_until_ready(&self) {
        for cache in self.kinds.values() {
            cache.wait_until_ready().await;
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
