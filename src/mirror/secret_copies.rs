//! Secret copies, watched one allowed name at a time.
//!
//! The secret-targets RBAC grants list and watch on Secrets only by `resourceNames`, which the
//! API server honours for a request carrying `fieldSelector=metadata.name=<name>`. So each name
//! in `--secret-target-names` gets its own watch across all namespaces (narrowed further by
//! skiff's `managed-by` label) and its own store, since a store is filled by exactly one watcher
//! whose relist replaces its whole content. No names: no watch, and no Secret is read.

use super::copy::{CopyInfo, Owner};
use super::index::{copies_of, copy_store};
use super::secret_targets::SecretTargets;
use crate::kube::api::Secret;
use crate::runtime::{ObjectKey, Store, WatcherConfig};
use std::collections::BTreeMap;

#[derive(Clone)]
pub struct SecretCopyStores {
    by_name: BTreeMap<String, Store<Secret, CopyInfo>>,
}

impl SecretCopyStores {
    pub fn new(targets: &SecretTargets) -> SecretCopyStores {
        let by_name = targets
            .names()
            .map(|name| (name.to_owned(), copy_store(CopyInfo::of_secret)))
            .collect();
        SecretCopyStores { by_name }
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<CopyInfo> {
        self.by_name.get(name)?.get(namespace, name)
    }

    pub fn list(&self) -> Vec<CopyInfo> {
        self.by_name.values().flat_map(Store::list).collect()
    }

    /// The copies labelled for the Mirror `owner`, of every name.
    pub fn copies_of(&self, owner: &Owner) -> Vec<(ObjectKey, CopyInfo)> {
        self.by_name
            .values()
            .flat_map(|store| copies_of(store, owner))
            .collect()
    }

    pub async fn wait_until_ready(&self) {
        for store in self.by_name.values() {
            store.wait_until_ready().await;
        }
    }

    /// Each store with the watch that fills it: `labels` plus this store's name.
    pub fn watches(
        &self,
        labels: &str,
    ) -> impl Iterator<Item = (WatcherConfig, &Store<Secret, CopyInfo>)> {
        self.by_name.iter().map(move |(name, store)| {
            let config = WatcherConfig::default()
                .labels(labels)
                .fields(&format!("metadata.name={name}"));
            (config, store)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::ObjectMeta;

    fn secret(namespace: &str, name: &str) -> Secret {
        Secret {
            metadata: ObjectMeta::named(Some(namespace), name),
            ..Secret::default()
        }
    }

    #[test]
    fn one_watch_per_allowed_name_selected_by_name_and_label() {
        let none = SecretCopyStores::new(&SecretTargets::default());
        assert_eq!(none.watches("l=v").count(), 0);
        let targets = SecretTargets::new(["b".to_string(), "a".to_string()]);
        let stores = SecretCopyStores::new(&targets);
        let selectors: Vec<_> = stores
            .watches("l=v")
            .map(|(c, _)| (c.selectors.labels, c.selectors.fields))
            .collect();
        let wanted = |name: &str| (Some("l=v".into()), Some(format!("metadata.name={name}")));
        assert_eq!(selectors, [wanted("a"), wanted("b")]);
    }

    #[test]
    fn a_relist_of_one_name_leaves_the_other_names_copies() {
        let targets = SecretTargets::new(["a".to_string(), "b".to_string()]);
        let stores = SecretCopyStores::new(&targets);
        let mut watches = stores.watches("l=v");
        let (_, a) = watches.next().expect("a");
        let (_, b) = watches.next().expect("b");
        a.relist(vec![secret("x", "a")]);
        b.relist(vec![secret("x", "b")]);
        a.relist(Vec::new());
        assert!(stores.get("x", "a").is_none());
        assert!(stores.get("x", "b").is_some());
        assert_eq!(stores.list().len(), 1);
        assert!(stores.get("x", "unlisted").is_none());
    }
}
