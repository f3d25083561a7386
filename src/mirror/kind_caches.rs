//! The caches of one kind: its sources, the sources tenants offer, and its copies, each watched
//! as narrowly as the kind's row and the admin's flags allow.
//!
//! Memory must not grow with objects skiff doesn't manage, so:
//! - sources are watched only in the namespaces sources may come from (`--source-namespaces`);
//! - with `--self-service` and the kind shared (`--self-service-kinds`) or published as another
//!   (`--self-service-projections`), tenants' sources are
//!   watched across namespaces by their `skiff.dev/offered=true` label, leaving skiff's own
//!   copies out so that copies cannot chain;
//! - copies are watched by skiff's `managed-by` label and kept as a [`CopyInfo`] (a hash of
//!   their content, never the content): a ResourceQuota whose `status.used` changes is seen as
//!   a new resourceVersion with the same hash, and nothing is read or written;
//! - a kind RBAC grants only by name is watched one allowed name at a time ([`NamedStores`]).
//!
//! A kind not enabled has no caches at all: a default install opens no watch and needs no
//! right on it.

use super::copy::{CopyInfo, Owner, managed_selector};
use super::enqueue::{copy_owners, mirrors_of_source};
use super::index::{copies_of, copy_store};
use super::named_stores::NamedStores;
use super::offers::offered_selector;
use super::own_writes::CopyWrites;
use super::secret_targets::SecretTargets;
use super::source::SourceContent;
use super::source_stores::{SourceScope, SourceStores};
use super::types::Mirror;
use crate::flags::SelfService;
use crate::kind::Kind;
use crate::kube::Client;
use crate::kube::api::Object;
use crate::runtime::{
    ApiSource, Change, ObjectKey, Store, WatcherConfig, WorkQueue, regardless, spawn_watch,
};
use std::sync::Arc;

type Sources = Store<Object, Arc<SourceContent>>;

/// The caches of one enabled kind.
#[derive(Clone)]
pub struct KindCaches {
    pub row: &'static Kind,
    sources: SourceStores,
    /// With the kind shared by tenants: the sources they offer.
    offered: Option<NamedStores<Arc<SourceContent>>>,
    copies: NamedStores<CopyInfo>,
}

impl KindCaches {
    pub fn new(
        row: &'static Kind,
        scope: &SourceScope,
        names: &SecretTargets,
        self_service: Option<&SelfService>,
    ) -> KindCaches {
        let source = move |o: &Object| SourceContent::of(row, o);
        let shared = self_service.filter(|s| s.reads(row.id));
        KindCaches {
            row,
            sources: SourceStores::new(scope, source),
            offered: shared.map(|_| NamedStores::new(row, names, || Sources::new(source))),
            copies: NamedStores::new(row, names, || copy_store(move |o| CopyInfo::of(row, o))),
        }
    }

    /// The source named `name` in `namespace`: an admin's, or one a tenant offers.
    pub fn source(&self, namespace: &str, name: &str) -> Option<Arc<SourceContent>> {
        let offered = || self.offered.as_ref()?.get(namespace, name);
        self.sources.get(namespace, name).or_else(offered)
    }

    pub fn copy(&self, namespace: &str, name: &str) -> Option<CopyInfo> {
        self.copies.get(namespace, name)
    }

    /// Applies `event` to the copy store that holds its name, as its watch would.
    #[cfg(test)]
    pub fn apply_copy(&self, event: &crate::runtime::Change<Object>) {
        for store in self.copies.stores() {
            store.apply(event);
        }
    }

    /// The cached copies labelled for the Mirror `owner`, each with its key.
    pub fn copies_of(&self, owner: &Owner) -> Vec<(ObjectKey, CopyInfo)> {
        let stores = self.copies.stores();
        stores.flat_map(|store| copies_of(store, owner)).collect()
    }

    /// Every Mirror a cached copy names.
    pub fn owners(&self) -> impl Iterator<Item = ObjectKey> + '_ {
        let copies = self.copies.stores().flat_map(Store::list);
        copies
            .filter_map(|c| c.owner)
            .map(|o| ObjectKey::new(&o.namespace, &o.name))
    }

    pub async fn wait_until_ready(&self) {
        self.sources.wait_until_ready().await;
        if let Some(offered) = &self.offered {
            offered.wait_until_ready().await;
        }
        self.copies.wait_until_ready().await;
    }

    /// The watches of this kind: copies by skiff's label, sources in the source namespaces,
    /// and offered sources by their label, each enqueueing the Mirrors it concerns.
    pub fn spawn_watches(
        &self,
        client: &Client,
        queue: &WorkQueue<ObjectKey>,
        (mirrors, written): (&Store<Mirror, Mirror>, &Arc<CopyWrites>),
    ) -> Vec<smol::Task<()>> {
        let (row, kind) = (self.row, self.row.id);
        let at = |ns: Option<&str>| ApiSource::at(client, ns, row.collection_path(ns));
        let reading = || regardless(mirrors_of_source(mirrors.clone(), kind));
        let mut tasks = Vec::new();
        let managed = WatcherConfig::default().labels(&managed_selector());
        for (config, store) in self.copies.watches(&managed) {
            let (owners, written) = (copy_owners(mirrors.clone(), kind), Arc::clone(written));
            let owners = move |event: &Change<Object>, previous: Option<&CopyInfo>| {
                written.observe_event(kind, event, previous);
                owners(event)
            };
            tasks.push(spawn_watch(at(None), config, store.clone(), queue, owners));
        }
        for (ns, store) in self.sources.stores() {
            let config = WatcherConfig::default();
            tasks.push(spawn_watch(at(ns), config, store.clone(), queue, reading()));
        }
        let offered = WatcherConfig::default().labels(&offered_selector());
        for (config, store) in self.offered.iter().flat_map(|o| o.watches(&offered)) {
            tasks.push(spawn_watch(
                at(None),
                config,
                store.clone(),
                queue,
                reading(),
            ));
        }
        tasks
    }
}
