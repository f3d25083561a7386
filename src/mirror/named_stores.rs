//! The stores of one kind's copies, or of the sources tenants offer, watched across every
//! namespace: one store across every name, or one per allowed name where RBAC grants the kind
//! only by name.
//!
//! RBAC restricts a kind by name only with `resourceNames`, which the API server honours for a
//! list or watch carrying `fieldSelector=metadata.name=<name>`. So a kind whose row says
//! `NameRule::SecretTargetNames` gets one watch and one store per name in
//! `--secret-target-names` (a store is filled by exactly one watcher, whose relist replaces its
//! whole content), and no name means no watch: nothing of that kind is read.

use super::secret_targets::SecretTargets;
use crate::kind::{Kind, NameRule};
use crate::kube::api::Object;
use crate::runtime::{Store, WatcherConfig};
use std::collections::BTreeMap;

/// The names objects of the kind `row` are watched and listed by: every name (`None`), or each
/// allowed name where RBAC grants the kind by name (none when no name is allowed).
pub fn watched_names(row: &Kind, names: &SecretTargets) -> Vec<Option<String>> {
    match row.names {
        NameRule::Any => vec![None],
        NameRule::SecretTargetNames => names.names().map(|n| Some(n.to_owned())).collect(),
    }
}

#[derive(Clone)]
pub struct NamedStores<P> {
    /// By the name the store's watch selects; `None` selects every name.
    by_name: BTreeMap<Option<String>, Store<Object, P>>,
}

impl<P: Clone + Send + Sync + 'static> NamedStores<P> {
    /// The stores of the kind `row`, each made by `store`.
    pub fn new(
        row: &Kind,
        names: &SecretTargets,
        store: impl Fn() -> Store<Object, P>,
    ) -> NamedStores<P> {
        NamedStores {
            by_name: (watched_names(row, names).into_iter())
                .map(|name| (name, store()))
                .collect(),
        }
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<P> {
        let store =
            (self.by_name.get(&None)).or_else(|| self.by_name.get(&Some(name.to_owned())))?;
        store.get(namespace, name)
    }

    pub fn stores(&self) -> impl Iterator<Item = &Store<Object, P>> {
        self.by_name.values()
    }

    /// Each store with the watch that fills it: `config`, narrowed to the store's name.
    pub fn watches<'a>(
        &'a self,
        config: &'a WatcherConfig,
    ) -> impl Iterator<Item = (WatcherConfig, &'a Store<Object, P>)> + 'a {
        self.by_name.iter().map(move |(name, store)| {
            let config = match name {
                Some(name) => config.clone().fields(&format!("metadata.name={name}")),
                None => config.clone(),
            };
            (config, store)
        })
    }

    pub async fn wait_until_ready(&self) {
        for store in self.by_name.values() {
            store.wait_until_ready().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::SourceKind;
    use crate::kube::api::ObjectMeta;
    use crate::runtime::Change;

    fn named(kind: SourceKind, names: &[&str]) -> NamedStores<String> {
        let names = SecretTargets::new(names.iter().map(|n| n.to_string()));
        NamedStores::new(kind.row(), &names, || {
            Store::new(|o: &Object| o.metadata.name().to_owned())
        })
    }

    fn object(namespace: &str, name: &str) -> Object {
        Object {
            metadata: ObjectMeta::named(Some(namespace), name),
            ..Object::default()
        }
    }

    #[test]
    fn one_watch_per_allowed_name_selected_by_name_and_label() {
        assert_eq!(named(SourceKind::Secret, &[]).stores().count(), 0);
        let config = WatcherConfig::default().labels("l=v");
        let stores = named(SourceKind::Secret, &["b", "a"]);
        let selectors: Vec<_> = (stores.watches(&config))
            .map(|(c, _)| (c.selectors.labels, c.selectors.fields))
            .collect();
        let wanted = |name: &str| (Some("l=v".into()), Some(format!("metadata.name={name}")));
        assert_eq!(selectors, [wanted("a"), wanted("b")]);
        let any = named(SourceKind::ConfigMap, &["a"]);
        let one: Vec<_> = any
            .watches(&config)
            .map(|(c, _)| c.selectors.fields)
            .collect();
        assert_eq!(one, [None]);
    }

    #[test]
    fn a_relist_of_one_name_leaves_the_other_names_objects() {
        let stores = named(SourceKind::Secret, &["a", "b"]);
        let config = WatcherConfig::default();
        let mut watches = stores.watches(&config);
        let (_, a) = watches.next().expect("a");
        let (_, b) = watches.next().expect("b");
        a.apply(&Change::Applied(object("x", "a")));
        b.apply(&Change::Applied(object("x", "b")));
        a.relist(Vec::new());
        assert!(stores.get("x", "a").is_none());
        assert!(stores.get("x", "b").is_some());
        assert!(stores.get("x", "unlisted").is_none());
    }
}
