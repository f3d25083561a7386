//! The Mirror controller's caches: what is watched and kept.
//!
//! Memory must not grow with objects skiff doesn't manage, so each watch is as narrow as the
//! API allows: Mirrors and Namespaces (small), ConfigMaps and Secrets only in the namespaces
//! sources may come from, and copies only by skiff's `managed-by` label, keeping a hash of
//! their content rather than the content. Secrets are watched only when Secret copies are
//! enabled, and their copies only by allowed name (see [`super::secret_copies`]); the kit kinds
//! only when `--kinds` enables them (see [`super::kit_caches`]).
//!
//! Each cache is indexed for the questions events and reconciles ask, so that their cost is
//! what they find, not the size of the cluster: Mirrors by source and by target name, copies by
//! owning Mirror ([`super::index`]), and each Mirror's selected namespaces ([`Selections`]).

use super::acceptance::{Acceptances, accepted_mirrors};
use super::copy::{CopyInfo, Owner, managed_selector};
use super::enqueue::{copy_owners, mirror_keys};
use super::index::{copies_of, copy_store, mirror_store};
use super::kinds::Kinds;
use super::kit_caches::KitCaches;
use super::namespace::NamespaceEntry;
use super::offers::{SelfService, offer_moved};
use super::secret_copies::SecretCopyStores;
use super::secret_targets::SecretTargets;
use super::selection::Selections;
use super::source::SourceContent;
pub use super::source_stores::{SourceScope, SourceStores};
use super::source_stores::{regardless, spawn};
use super::tenant_sources::TenantSources;
use super::types::{Mirror, SourceKind};
use crate::kube::Client;
use crate::kube::api::{ConfigMap, Namespace, Secret};
use crate::runtime::{Change, ObjectKey, Store, WatcherConfig, WorkQueue};
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
    pub configmap_sources: SourceStores<ConfigMap>,
    pub secret_sources: SourceStores<Secret>,
    pub configmap_copies: Store<ConfigMap, CopyInfo>,
    pub secret_copies: SecretCopyStores,
    /// Sources and copies of the kit kinds `--kinds` enables.
    pub kits: KitCaches,
    /// Which namespaces each Mirror selects, kept up to date by the Mirror and Namespace
    /// watches.
    pub selections: Selections,
    /// With `--self-service`: the guardrails, the acceptances (indexed by the Mirror they
    /// name) and the sources tenants offer (see [`super::consent`]).
    pub self_service: Option<SelfService>,
    pub acceptances: Option<Acceptances>,
    pub tenant_sources: Option<TenantSources>,
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
        // Without Secret copies no Mirror of a Secret is reconciled, so its source is not
        // needed either: the default install grants no Secret access at all.
        let secret_sources = if secret_targets.enabled() {
            SourceStores::new(scope, SourceContent::of_secret)
        } else {
            SourceStores::none()
        };
        Caches {
            selections: Selections::new(&namespaces, &mirrors),
            mirrors,
            namespaces,
            configmap_sources: SourceStores::new(scope, SourceContent::of_configmap),
            secret_sources,
            configmap_copies: copy_store(CopyInfo::of_configmap),
            secret_copies: SecretCopyStores::new(secret_targets),
            self_service: self_service.cloned(),
            acceptances: self_service.map(|_| Acceptances::default()),
            tenant_sources: self_service.map(|s| TenantSources::new(s, secret_targets)),
            kits: KitCaches::new(scope, kinds),
        }
    }

    pub fn source(
        &self,
        kind: SourceKind,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<SourceContent>> {
        let admin = match kind {
            SourceKind::ConfigMap => self.configmap_sources.get(namespace, name),
            SourceKind::Secret => self.secret_sources.get(namespace, name),
            kit => self.kits.source(kit, namespace, name),
        };
        admin.or_else(|| self.tenant_sources.as_ref()?.get(kind, namespace, name))
    }

    pub fn copy(&self, kind: SourceKind, namespace: &str, name: &str) -> Option<CopyInfo> {
        match kind {
            SourceKind::ConfigMap => self.configmap_copies.get(namespace, name),
            SourceKind::Secret => self.secret_copies.get(namespace, name),
            kit => self.kits.copy(kit, namespace, name),
        }
    }

    /// Every cached copy labelled for the Mirror `owner`, of every kind, each with its key.
    pub fn copies_of(&self, owner: &Owner) -> Vec<(ObjectKey, CopyInfo)> {
        let mut copies = copies_of(&self.configmap_copies, owner);
        copies.extend(self.secret_copies.copies_of(owner));
        copies.extend(self.kits.copies_of(owner));
        copies
    }

    /// Waits until every store holds a complete list: its first, and no relist under way.
    pub async fn wait_until_ready(&self) {
        self.mirrors.wait_until_ready().await;
        self.namespaces.wait_until_ready().await;
        self.configmap_sources.wait_until_ready().await;
        self.secret_sources.wait_until_ready().await;
        self.configmap_copies.wait_until_ready().await;
        self.secret_copies.wait_until_ready().await;
        if let Some(acceptances) = &self.acceptances {
            acceptances.store.wait_until_ready().await;
        }
        if let Some(store) = &self.tenant_sources {
            store.wait_until_ready().await;
        }
        self.kits.wait_until_ready().await;
    }

    /// Starts one task per watch, feeding the stores and enqueueing the Mirrors each event
    /// concerns. Dropping the tasks stops the watches.
    pub fn spawn_watches(
        &self,
        client: &Client,
        queue: &WorkQueue<ObjectKey>,
    ) -> Vec<smol::Task<()>> {
        let managed = managed_selector();
        let copies = WatcherConfig::default().labels(&managed);
        let mut tasks = vec![
            spawn(
                client,
                None,
                WatcherConfig::default(),
                self.mirrors.clone(),
                queue,
                {
                    let selections = self.selections.clone();
                    let keys =
                        mirror_keys(self.configmap_copies.clone(), self.secret_copies.clone());
                    let kits = self.kits.clone();
                    move |event: &Change<Mirror>, _: Option<&Mirror>| {
                        selections.mirror_changed(event);
                        let mut keys = keys(event);
                        // As `mirror_keys` does for ConfigMap and Secret copies.
                        if let Change::Relisted = event {
                            keys.extend(kits.owners());
                        }
                        keys
                    }
                },
            ),
            spawn(
                client,
                None,
                WatcherConfig {
                    page_size: NAMESPACE_PAGE,
                    ..WatcherConfig::default()
                },
                self.namespaces.clone(),
                queue,
                {
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
                },
            ),
            spawn(
                client,
                None,
                copies.clone(),
                self.configmap_copies.clone(),
                queue,
                regardless(copy_owners(self.mirrors.clone(), SourceKind::ConfigMap)),
            ),
        ];
        tasks.extend(self.secret_copies.watches(&managed).map(|(config, store)| {
            let map = regardless(copy_owners(self.mirrors.clone(), SourceKind::Secret));
            spawn(client, None, config, store.clone(), queue, map)
        }));
        tasks.extend(self.configmap_sources.spawn_watches(
            client,
            queue,
            &self.mirrors,
            SourceKind::ConfigMap,
        ));
        tasks.extend(self.secret_sources.spawn_watches(
            client,
            queue,
            &self.mirrors,
            SourceKind::Secret,
        ));
        tasks.extend(self.self_service_watches(client, queue));
        tasks.extend(
            self.kits
                .spawn_watches(client, queue, &self.mirrors, &copies),
        );
        tasks
    }

    /// With `--self-service`: the acceptances, and the sources tenants offer.
    fn self_service_watches(
        &self,
        client: &Client,
        queue: &WorkQueue<ObjectKey>,
    ) -> Vec<smol::Task<()>> {
        let mut tasks = Vec::new();
        if let Some(acceptances) = &self.acceptances {
            let map = accepted_mirrors(acceptances.clone(), self.mirrors.clone());
            let (config, store) = (WatcherConfig::default(), acceptances.store.clone());
            tasks.push(spawn(client, None, config, store, queue, map));
        }
        if let Some(sources) = &self.tenant_sources {
            tasks.extend(sources.spawn_watches(client, queue, &self.mirrors));
        }
        tasks
    }
}
