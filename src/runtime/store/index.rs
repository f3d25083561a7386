//! A store's secondary index: the keys of the objects under each index value.
//!
//! The keys under one value mostly share their name (the copies of one Mirror, in many
//! namespaces, under the Mirror's target name), so they are kept by name, then namespace: the
//! name once a value, and a namespace once a key. A set of whole keys would keep every key's
//! name again, 16 more bytes inline and a heap block a key; the copy caches hold one key a copy.

use super::ObjectKey;
use std::collections::{HashMap, HashSet};

#[derive(Default)]
pub(super) struct Index {
    /// Index value, then name, then the namespaces under both.
    by_value: HashMap<String, HashMap<Box<str>, HashSet<Box<str>>>>,
}

impl Index {
    pub(super) fn insert(&mut self, value: String, key: &ObjectKey) {
        let names = self.by_value.entry(value).or_default();
        let Some(namespaces) = names.get_mut(&*key.name) else {
            let namespaces = HashSet::from([key.namespace.clone()]);
            names.insert(key.name.clone(), namespaces);
            return;
        };
        if !namespaces.contains(&*key.namespace) {
            namespaces.insert(key.namespace.clone());
        }
    }

    /// Drops `key` from under `value`, and whatever that leaves empty.
    pub(super) fn remove(&mut self, value: &str, key: &ObjectKey) {
        let Some(names) = self.by_value.get_mut(value) else {
            return;
        };
        if let Some(namespaces) = names.get_mut(&*key.name) {
            namespaces.remove(&*key.namespace);
            if namespaces.is_empty() {
                names.remove(&*key.name);
            }
        }
        if names.is_empty() {
            self.by_value.remove(value);
        }
    }

    /// The keys under `value`, in no particular order.
    pub(super) fn keys(&self, value: &str) -> impl Iterator<Item = ObjectKey> + '_ {
        let names = self.by_value.get(value).into_iter().flatten();
        names.flat_map(|(name, namespaces)| {
            namespaces.iter().map(|namespace| ObjectKey {
                namespace: namespace.clone(),
                name: name.clone(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(index: &Index, value: &str) -> Vec<ObjectKey> {
        let mut keys: Vec<_> = index.keys(value).collect();
        keys.sort();
        keys
    }

    #[test]
    fn keys_come_back_as_inserted_and_go_when_removed() {
        let mut index = Index::default();
        let (a, b, c) = (
            ObjectKey::new("a", "ca"),
            ObjectKey::new("b", "ca"),
            ObjectKey::new("a", "local"),
        );
        for key in [&a, &b, &c, &a] {
            index.insert("m".into(), key);
        }
        assert_eq!(sorted(&index, "m"), [a.clone(), c.clone(), b.clone()]);
        index.remove("m", &a);
        index.remove("m", &ObjectKey::new("x", "ca"));
        index.remove("other", &b);
        assert_eq!(sorted(&index, "m"), [c.clone(), b.clone()]);
        index.remove("m", &b);
        index.remove("m", &c);
        assert!(index.keys("m").next().is_none());
        assert!(index.by_value.is_empty(), "nothing empty is left behind");
    }

    #[test]
    fn a_name_is_kept_once_under_a_value() {
        let mut index = Index::default();
        index.insert("m".into(), &ObjectKey::new("a", "ca"));
        index.insert("m".into(), &ObjectKey::new("b", "ca"));
        assert_eq!(index.by_value["m"].len(), 1);
        assert_eq!(index.by_value["m"]["ca"].len(), 2);
    }
}
