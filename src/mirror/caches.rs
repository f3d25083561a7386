//! The Mirror controller's caches: what is watched and kept.
//!
//! Mirrors and Namespaces (small) are cached whole or nearly; every kind skiff copies has
//! caches of its own ([`KindCaches`]), one entry per enabled kind of a map keyed by kind, each
//! as narrow as its row allows. Each cache is indexed for the questions events and reconciles
//! ask, so that their cost is what they find, not the size of the cluster: Mirrors by source
//! and by target name, copies by owning Mirror ([`super::index`]), and each Mirror's selected
//! namespaces ([`Selections`]).

use super::acceptance::{Acceptances, accepted_mirrors};
use super::copy::{CopyInfo, Owner, managed_selector, owner_of};
use super::enqueue::mirror_keys;
use super::index::mirror_store;
use super::kind_caches::KindCaches;
use super::namespace::NamespaceEntry;
use super::offers::offer_moved;
use super::own_writes::CopyWrites;
use super::placed::{Placed, PlacedStores, as_mirror_event, carried_by, placed_keys};
use super::placement::{FleetStores, HEARTBEAT_LABEL, Placement};
use super::secret_targets::SecretTargets;
use super::selection::Selections;
use super::source::SourceContent;
pub use super::source_stores::SourceScope;
use super::types::Mirror;
use crate::flags::SelfService;
use crate::kind::{Kinds, SourceKind};
use crate::kube::Client;
use crate::kube::api::{Lease, Namespace, Object};
use crate::runtime::{
    ApiSource, Change, ObjectKey, Store, WatcherConfig, WorkQueue, regardless, spawn_watch,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Namespaces per page of the Namespace relist: the largest collection skiff lists (every
/// namespace of the cluster), of small objects, so pages of 1,000 (about 1.3 MB decoded and on
/// the wire together) halve the requests a relist takes from the token bucket; every other
/// watch lists 500 a page.
pub const NAMESPACE_PAGE: u32 = 1_000;

/// A member's relist of its hub watches after 410 Gone waits a random part of this: when the
/// hub's API server restarts, every member's watch expires at once, and hundreds of members
/// relisting together would be the hub's worst minute.
pub const HUB_RELIST_SPREAD: Duration = Duration::from_secs(10);
/// Once the hub answers a member again after an outage, its hub watches waiting out their
/// backoff retry after a random part of this: soon, and a thousand members not all at once.
pub const HUB_RECOVERY_SPREAD: Duration = Duration::from_secs(3);

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
    /// On a member (`--hub-kubeconfig`): its share of the hub, read through the hub client.
    pub placed: Option<PlacedStores>,
    /// On a hub (`--fleet-hub`): the Placements of its fleet Mirrors and its members'
    /// heartbeats.
    pub fleet: Option<FleetStores>,
    /// The copies this replica wrote that the copy caches may not show yet: the reconciler
    /// reads the copy caches through it, and the copy watches tell it what they see.
    pub copy_writes: Arc<CopyWrites>,
}

impl Caches {
    pub fn new(
        scope: &SourceScope,
        secret_targets: &SecretTargets,
        self_service: Option<&SelfService>,
        kinds: &Kinds,
        (placed, fleet): (Option<PlacedStores>, Option<FleetStores>),
    ) -> Caches {
        let mirrors = mirror_store();
        let namespaces = Store::new(NamespaceEntry::of);
        let kinds = kinds.enabled().map(|row| {
            let caches = KindCaches::new(row, scope, secret_targets, self_service);
            (row.id, caches)
        });
        let known = {
            let (mirrors, placed) = (mirrors.clone(), placed.clone());
            move |key: &ObjectKey| {
                mirrors.contains(key) || placed.as_ref().is_some_and(|p| p.contains(key))
            }
        };
        Caches {
            selections: Selections::new(&namespaces, known),
            mirrors,
            namespaces,
            kinds: Arc::new(kinds.collect()),
            self_service: self_service.cloned(),
            acceptances: self_service.map(|_| Acceptances::default()),
            placed,
            fleet,
            copy_writes: Arc::default(),
        }
    }

    /// The Mirror `key` names: a local one, or, on a member, one its hub placed.
    pub fn mirror(&self, key: &ObjectKey) -> Option<Mirror> {
        match &self.placed {
            Some(placed) if key.namespace.contains('/') => Some(placed.get(key)?.mirror),
            _ => self.mirrors.get(&key.namespace, &key.name),
        }
    }

    pub fn source(
        &self,
        kind: SourceKind,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<SourceContent>> {
        if let Some(placed) = self.placed.as_ref().filter(|_| namespace.contains('/')) {
            return placed.source(&ObjectKey::new(namespace, name));
        }
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
            tasks.extend(caches.spawn_watches(client, queue, (&self.mirrors, &self.copy_writes)));
        }
        if let Some(placed) = &self.placed {
            tasks.extend(self.placed_watches(placed, queue));
        }
        if let Some(fleet) = &self.fleet {
            tasks.extend(self.fleet_watches(fleet, client, queue));
        }
        tasks
    }

    /// On a hub: the Placements of its fleet Mirrors (by skiff's label, across namespaces), each
    /// waking the Mirror that owns it, and its members' heartbeats, a member heard again after a
    /// silence waking the fleet Mirrors that select it.
    fn fleet_watches(
        &self,
        fleet: &FleetStores,
        client: &Client,
        queue: &WorkQueue<ObjectKey>,
    ) -> [smol::Task<()>; 2] {
        let all = || ApiSource::new(client, None);
        let managed = WatcherConfig::default().labels(&managed_selector());
        let owners = {
            let mirrors = self.mirrors.clone();
            regardless(move |event: &Change<Placement>| match event {
                Change::Listed(p) | Change::Applied(p) | Change::Deleted(p) => {
                    let owner = owner_of(&p.metadata);
                    owner
                        .map(|o| ObjectKey::new(o.namespace, o.name))
                        .into_iter()
                        .collect()
                }
                Change::Relisting => Vec::new(),
                // A Mirror whose Placements went while the watch was down is in no event.
                Change::Relisted => mirrors.keys(),
            })
        };
        let heard = {
            let (mirrors, selections, silence) =
                (self.mirrors.clone(), self.selections.clone(), fleet.silence);
            move |event: &Change<Lease>, previous: Option<&Instant>| {
                let (Change::Listed(lease) | Change::Applied(lease)) = event else {
                    return Vec::new();
                };
                if previous.is_some_and(|at| at.elapsed() < silence) {
                    return Vec::new();
                }
                let ns = lease.metadata.namespace();
                let fleet = mirrors.list().into_iter().filter(|m| m.spec.is_fleet());
                let selecting = fleet.filter(|m| selections.of(m).contains(ns));
                selecting
                    .filter_map(|m| ObjectKey::from_meta(&m.metadata))
                    .collect()
            }
        };
        let heartbeats = WatcherConfig::default().labels(HEARTBEAT_LABEL);
        [
            spawn_watch(all(), managed, fleet.placements.clone(), queue, owners),
            spawn_watch(all(), heartbeats, fleet.heartbeats.clone(), queue, heard),
        ]
    }

    /// On a member: its Placements and carriers on the hub, watched through the hub client in
    /// its own namespace there. A Placement event moves its Mirror's selection and wakes it; a
    /// carrier's, the Mirrors whose Placement names it.
    fn placed_watches(
        &self,
        placed: &PlacedStores,
        queue: &WorkQueue<ObjectKey>,
    ) -> [smol::Task<()>; 2] {
        let (client, hub) = (&placed.client, &placed.hub);
        let placements = {
            let (selections, name) = (self.selections.clone(), hub.name.clone());
            move |event: &Change<Placement>, _: Option<&Placed>| {
                selections.mirror_changed(&as_mirror_event(event, &name));
                placed_keys(event, &name)
            }
        };
        let carriers = {
            let (stores, name) = (placed.placements.clone(), hub.name.clone());
            regardless(move |event: &Change<Object>| carried_by(&stores, &name, event))
        };
        let secrets = SourceKind::Secret
            .row()
            .collection_path(Some(&hub.namespace));
        let config = WatcherConfig {
            relist_spread: HUB_RELIST_SPREAD,
            recovery: Some(placed.recovery.clone()),
            recovery_spread: HUB_RECOVERY_SPREAD,
            ..WatcherConfig::default()
        };
        [
            spawn_watch(
                ApiSource::new(client, Some(&hub.namespace)),
                config.clone(),
                placed.placements.clone(),
                queue,
                placements,
            ),
            spawn_watch(
                ApiSource::at(client, Some(&hub.namespace), secrets),
                config,
                placed.carriers.clone(),
                queue,
                carriers,
            ),
        ]
    }
}
