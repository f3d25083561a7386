//! The Mirror controller's caches: what is watched and kept.
//!
//! Mirrors and Namespaces (small) are cached whole or nearly; every kind skiff copies has
//! caches of its own ([`KindCaches`]), one entry per enabled kind of a map keyed by kind, each
//! as narrow as its row allows. Each cache is indexed for the questions events and reconciles
//! ask, so that their cost is what they find, not the size of the cluster: Mirrors by source
//! and by target name, copies by owning Mirror ([`super::index`]), and each Mirror's selected
//! namespaces ([`Selections`]).

use super::acceptance::{Acceptances, accepted_mirrors};
use super::copy::{CopyInfo, Owner};
use super::enqueue::mirror_keys;
use super::index::mirror_store;
use super::kind_caches::KindCaches;
use super::namespace::NamespaceEntry;
use super::offers::offer_moved;
use super::secret_targets::SecretTargets;
use super::selection::Selections;
use super::source::SourceContent;
pub use super::source_stores::SourceScope;
use super::types::{Mirror, SourceKind};
use crate::flags::SelfService;
use crate::kind::Kinds;
use crate::kube::Client;
use crate::kube::api::Namespace;
use crate::runtime::{ApiSource, Change, ObjectKey, Store, WatcherConfig, WorkQueue, spawn_watch};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Namespaces per page of the Namespace relist: the largest collection skiff lists (every
/// namespace of the cluster), of small objects, so pages of 1,000 (about 1.3 MB decoded and on
/// the wire together) halve the requests a relist takes from the token bucket; every other
/// watch lists 500 a page.
pub const NAMESPACE_PAGE: u32 = 1_000;

/// Everything the reconciler reads. Clones of the stores are shared with the watch tasks, and
/// clones of the caches share their stores.
#[derive(Clone)]
pub struct Caches {
    pub mirrors: Store<Mirror, Mirror>,
    pub namespaces: Store<Namespace, NamespaceEntry>,
    /// The sources and copies of each enabled kind.
    kinds: Arc<BTreeMap<SourceKind, KindCaches>>,
    /// Which namespaces each Mirror selects, kept up to date by the Mirror and Namespace
    /// watches.
    pub selections: Selections,
    /// With `--self-service`: the guardrails and the acceptances (indexed by the Mirror they
    /// name; see [`super::consent`]).
    pub self_service: Option<SelfService>,
    pub acceptances: Option<Acceptances>,
}

impl Caches {
    pub fn new(
        scope: &SourceScope,
        secret_targets: &SecretTargets,
        self_service: Option<&SelfService>,
        kinds: &Kinds,
    ) -> Caches {
        let mirrors = mirror_store();
        let namespaces = Store::new(NamespaceEntry::of);
        let kinds = kinds.enabled().map(|row| {
            let caches = KindCaches::new(row, scope, secret_targets, self_service);
            (row.id, caches)
        });
        Caches {
            selections: Selections::new(&namespaces, &mirrors),
            mirrors,
            namespaces,
            kinds: Arc::new(kinds.collect()),
            self_service: self_service.cloned(),
            acceptances: self_service.map(|_| Acceptances::default()),
        }
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

    /// Every cached copy labelled for the Mirror `owner`, of every kind, each with its key.
    pub fn copies_of(&self, owner: &Owner) -> Vec<(ObjectKey, CopyInfo)> {
        let kinds = self.kinds.values();
        kinds.flat_map(|caches| caches.copies_of(owner)).collect()
    }

    /// Applies `event` to the copy cache of `kind`, as its watch would.
    #[cfg(test)]
    pub fn apply_copy(&self, kind: SourceKind, event: &Change<crate::kube::api::Object>) {
        self.kinds[&kind].apply_copy(event);
    }

    /// Every Mirror a cached copy names.
    pub fn owners(&self) -> Vec<ObjectKey> {
        self.kinds.values().flat_map(KindCaches::owners).collect()
    }

    /// Waits until every store holds a complete list: its first, and no relist under way.
    pub async fn wait_until_ready(&self) {
        self.mirrors.wait_until_ready().await;
        self.namespaces.wait_until_ready().await;
        if let Some(acceptances) = &self.acceptances {
            acceptances.store.wait_until_ready().await;
        }
        for caches in self.kinds.values() {
            caches.wait_until_ready().await;
        }
    }

    /// Starts one task per watch, feeding the stores and enqueueing the Mirrors each event
    /// concerns. Dropping the tasks stops the watches.
    pub fn spawn_watches(
        &self,
        client: &Client,
        queue: &WorkQueue<ObjectKey>,
    ) -> Vec<smol::Task<()>> {
        let all = || ApiSource::new(client, None);
        let mirrors = {
            let caches = self.clone();
            let (selections, keys) = (
                self.selections.clone(),
                mirror_keys(move || caches.owners()),
            );
            move |event: &Change<Mirror>, _: Option<&Mirror>| {
                selections.mirror_changed(event);
                keys(event)
            }
        };
        let namespaces = {
            let selections = self.selections.clone();
            let (mirrors, self_service) = (self.mirrors.clone(), self.self_service.clone());
            move |event: &Change<Namespace>, previous: Option<&NamespaceEntry>| {
                let mut keys = selections.namespace_changed(event, previous);
                if let Some(s) = &self_service {
                    let offer = &s.offer_selector;
                    keys.extend(offer_moved(offer, &mirrors, event, previous));
                }
                keys
            }
        };
        let paged = WatcherConfig {
            page_size: NAMESPACE_PAGE,
            ..WatcherConfig::default()
        };
        let mut tasks = vec![
            spawn_watch(
                all(),
                WatcherConfig::default(),
                self.mirrors.clone(),
                queue,
                mirrors,
            ),
            spawn_watch(all(), paged, self.namespaces.clone(), queue, namespaces),
        ];
        if let Some(acceptances) = &self.acceptances {
            let map = accepted_mirrors(acceptances.clone(), self.mirrors.clone());
            let store = acceptances.store.clone();
            tasks.push(spawn_watch(
                all(),
                WatcherConfig::default(),
                store,
                queue,
                map,
            ));
        }
        for caches in self.kinds.values() {
            tasks.extend(caches.spawn_watches(client, queue, &self.mirrors));
        }
        tasks
    }
}
