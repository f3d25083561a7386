//! The sources tenants offer (`--self-service`), watched across namespaces by their
//! `skiff.dev/offered=true` label and kept apart from the admin's sources.
//!
//! Only the kinds `--self-service-kinds` names are watched, each within what skiff's RBAC
//! already allows, so self-service adds no rule: ConfigMaps and the enabled kit kinds with the
//! rules that copy them (every namespace), and Secrets one `--secret-target-names` name at a
//! time (`fieldSelector=metadata.name=<name>`, what the `resourceNames` rule permits for list
//! and watch, as for Secret copies). So a tenant Secret source must carry an allowed name:
//! no other Secret outside the admin's source namespaces is readable to skiff, and none is
//! read. Each selector also leaves skiff's own copies out, so copies cannot chain.

use super::enqueue::mirrors_of_source;
use super::kit_table::kit;
use super::offers::SelfService;
use super::secret_targets::SecretTargets;
use super::source::SourceContent;
use super::source_stores::{regardless, spawn_from};
use super::types::{Mirror, SourceKind};
use crate::kube::Client;
use crate::kube::api::{ConfigMap, KitObject, Resource, Secret};
use crate::runtime::{ApiSource, ObjectKey, Store, WatcherConfig, WorkQueue};
use std::collections::BTreeMap;
use std::sync::Arc;

type Sources<K> = Store<K, Arc<SourceContent>>;

/// The offered sources of every kind tenants may share; no store for any other kind.
#[derive(Clone, Default)]
pub struct TenantSources {
    configmaps: Option<Sources<ConfigMap>>,
    /// One store per allowed Secret name: a store is filled by exactly one watch.
    secrets: BTreeMap<String, Sources<Secret>>,
    kits: BTreeMap<SourceKind, Sources<KitObject>>,
}

impl TenantSources {
    pub fn new(settings: &SelfService, secret_targets: &SecretTargets) -> TenantSources {
        let shares = |kind| settings.shares(kind);
        // Filled by insertion: collecting into a map would compile in a sort for each type.
        let mut sources = TenantSources {
            configmaps: shares(SourceKind::ConfigMap)
                .then(|| Store::new(SourceContent::of_configmap)),
            ..TenantSources::default()
        };
        for name in secret_targets
            .names()
            .filter(|_| shares(SourceKind::Secret))
        {
            let store = Store::new(SourceContent::of_secret);
            sources.secrets.insert(name.to_owned(), store);
        }
        for entry in settings.kinds.iter().filter_map(|&kind| kit(kind)) {
            let (of, fields) = (entry.kind, entry.fields);
            let store = Store::new(move |o| SourceContent::of_kit(of, o, fields));
            sources.kits.insert(of, store);
        }
        sources
    }

    pub fn get(&self, kind: SourceKind, namespace: &str, name: &str) -> Option<Arc<SourceContent>> {
        match kind {
            SourceKind::ConfigMap => self.configmaps.as_ref()?.get(namespace, name),
            SourceKind::Secret => self.secrets.get(name)?.get(namespace, name),
            kit => self.kits.get(&kit)?.get(namespace, name),
        }
    }

    pub async fn wait_until_ready(&self) {
        if let Some(store) = &self.configmaps {
            store.wait_until_ready().await;
        }
        for store in self.secrets.values() {
            store.wait_until_ready().await;
        }
        for store in self.kits.values() {
            store.wait_until_ready().await;
        }
    }

    /// One watch per store, across namespaces, each enqueueing the Mirrors that read the
    /// changed source.
    pub fn spawn_watches(
        &self,
        client: &Client,
        queue: &WorkQueue<ObjectKey>,
        mirrors: &Store<Mirror, Mirror>,
    ) -> Vec<smol::Task<()>> {
        let offered = WatcherConfig::default().labels(&SelfService::source_selector());
        let all = || ApiSource::new(client, None);
        let mut tasks = Vec::new();
        if let Some(store) = &self.configmaps {
            let to = (mirrors, SourceKind::ConfigMap);
            tasks.push(watch(all(), offered.clone(), store, queue, to));
        }
        for (name, store) in &self.secrets {
            let config = offered.clone().fields(&format!("metadata.name={name}"));
            tasks.push(watch(
                all(),
                config,
                store,
                queue,
                (mirrors, SourceKind::Secret),
            ));
        }
        for (&kind, store) in &self.kits {
            let Some(entry) = kit(kind) else { continue };
            let source = ApiSource::at(client, None, entry.collection_path(None));
            tasks.push(watch(
                source,
                offered.clone(),
                store,
                queue,
                (mirrors, kind),
            ));
        }
        tasks
    }
}

/// A watch filling `store`, enqueueing the Mirrors that read the changed source.
fn watch<K: Resource + Clone>(
    source: ApiSource,
    config: WatcherConfig,
    store: &Sources<K>,
    queue: &WorkQueue<ObjectKey>,
    (mirrors, kind): (&Store<Mirror, Mirror>, SourceKind),
) -> smol::Task<()> {
    let map = regardless(mirrors_of_source(mirrors.clone(), kind));
    spawn_from(source, config, store.clone(), queue, map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::ObjectMeta;
    use crate::mirror::namespace_selector::expr;
    use crate::runtime::Change;

    fn settings(kinds: &[SourceKind]) -> SelfService {
        SelfService {
            offer_selector: expr("offers", "Exists", &[]),
            max_copies: 10,
            kinds: kinds.iter().copied().collect(),
        }
    }

    #[test]
    fn only_the_kinds_tenants_share_are_kept_and_secrets_only_under_allowed_names() {
        let targets = SecretTargets::new(["app-tls".to_string()]);
        let configmaps_only = TenantSources::new(&settings(&[SourceKind::ConfigMap]), &targets);
        assert!(configmaps_only.secrets.is_empty(), "no Secret is watched");
        let both = [SourceKind::ConfigMap, SourceKind::Secret];
        let sources = TenantSources::new(&settings(&both), &targets);
        assert_eq!(sources.secrets.keys().collect::<Vec<_>>(), ["app-tls"]);
        let secret = |name: &str| Secret {
            metadata: ObjectMeta::named(Some("team-a"), name),
            ..Secret::default()
        };
        sources.secrets["app-tls"].apply(&Change::Applied(secret("app-tls")));
        assert!(
            sources
                .get(SourceKind::Secret, "team-a", "app-tls")
                .is_some()
        );
        assert!(sources.get(SourceKind::Secret, "team-a", "other").is_none());
        assert!(sources.get(SourceKind::LimitRange, "team-a", "x").is_none());
        assert!(
            sources.kits.is_empty(),
            "no kit kind is watched unless shared"
        );
        let kit = settings(&[SourceKind::LimitRange]);
        let kit = TenantSources::new(&kit, &SecretTargets::default());
        assert!(kit.configmaps.is_none() && kit.secrets.is_empty());
        assert_eq!(
            kit.kits.keys().collect::<Vec<_>>(),
            [&SourceKind::LimitRange]
        );
    }
}
