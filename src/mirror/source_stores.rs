//! Where sources are read from, and the stores that keep them: one store per watched namespace
//! for each kind read, each filled by exactly one watch.

use super::source::SourceContent;
use crate::kube::api::Object;
use crate::runtime::Store;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

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

/// Sources of one kind, one store per watched namespace (a store is filled by exactly one
/// watcher, whose relist replaces its whole content).
#[derive(Clone)]
pub struct SourceStores {
    stores: HashMap<Option<String>, Store<Object, Arc<SourceContent>>>,
}

impl SourceStores {
    pub fn new(
        scope: &SourceScope,
        project: impl Fn(&Object) -> Arc<SourceContent> + Clone + Send + Sync + 'static,
    ) -> SourceStores {
        let stores = scope
            .watch_namespaces()
            .into_iter()
            .map(|ns| (ns, Store::new(project.clone())))
            .collect();
        SourceStores { stores }
    }

    /// Each store with the namespace its watch reads (`None`: every namespace).
    pub fn stores(
        &self,
    ) -> impl Iterator<Item = (Option<&str>, &Store<Object, Arc<SourceContent>>)> {
        self.stores.iter().map(|(ns, store)| (ns.as_deref(), store))
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<SourceContent>> {
        let store = self
            .stores
            .get(&Some(namespace.to_owned()))
            .or_else(|| self.stores.get(&None))?;
        store.get(namespace, name)
    }

    pub async fn wait_until_ready(&self) {
        for store in self.stores.values() {
            store.wait_until_ready().await;
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
}
