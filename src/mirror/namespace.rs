//! What the namespace cache keeps of a namespace: its labels and whether it is terminating,
//! what deciding whether a Mirror selects it needs, and nothing more; its name is the cache's
//! key, held once.
//!
//! The cache holds one per namespace of the cluster, so its size is skiff's memory per
//! namespace. Namespaces share label sets heavily (a team's namespaces, `env=prod`), so what
//! an entry says is held once for every namespace that says the same ([`Interner`]) and the
//! entry is one pointer: the labels packed into one string, and the label every namespace
//! carries with its own name kept as a flag, so that it does not make every set distinct.

use crate::kube::api::Namespace;
use crate::runtime::Interner;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The label the API server puts on every namespace, its value the namespace's name.
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// What the namespace cache keeps of a namespace, under its name: its [`Facts`], shared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceEntry(Arc<Facts>);

/// What an entry says of a namespace, one allocation for every namespace that says the same.
///
/// Labels are packed into one string (`key\0value\0key\0value`, sorted by key; label keys and
/// values cannot hold a NUL), and [`NAME_LABEL`], equal to the name on every namespace, is kept
/// as a flag: namespaces that differ only by name then share their facts.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Facts {
    labels: Box<str>,
    has_name_label: bool,
    terminating: bool,
}

static FACTS: Interner<Facts> = Interner::new();

impl NamespaceEntry {
    /// The entry the namespace cache keeps of `ns`.
    pub fn of(ns: &Namespace) -> NamespaceEntry {
        NamespaceEntry::new(ns.metadata.name(), &ns.metadata.labels, ns.is_terminating())
    }

    pub fn new(name: &str, labels: &BTreeMap<String, String>, terminating: bool) -> NamespaceEntry {
        let has_name_label = labels.get(NAME_LABEL).map(String::as_str) == Some(name);
        let packed: Vec<&str> = labels
            .iter()
            .filter(|(k, _)| !(has_name_label && k.as_str() == NAME_LABEL))
            .flat_map(|(k, v)| [k.as_str(), v.as_str()])
            .collect();
        NamespaceEntry(FACTS.share(Facts {
            labels: packed.join("\0").into_boxed_str(),
            has_name_label,
            terminating,
        }))
    }
}

/// A namespace as selection reads it: its name and its [`NamespaceEntry`], borrowed from the
/// cache or from a watched object, or owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceInfo<'a> {
    pub name: Cow<'a, str>,
    entry: Cow<'a, NamespaceEntry>,
}

impl<'a> NamespaceInfo<'a> {
    /// `ns` as selection reads it.
    pub fn of(ns: &'a Namespace) -> NamespaceInfo<'a> {
        NamespaceInfo {
            name: Cow::Borrowed(ns.metadata.name()),
            entry: Cow::Owned(NamespaceEntry::of(ns)),
        }
    }

    /// The namespace the cache keeps as `entry` under `name`.
    pub fn view(name: &'a str, entry: &'a NamespaceEntry) -> NamespaceInfo<'a> {
        NamespaceInfo {
            name: Cow::Borrowed(name),
            entry: Cow::Borrowed(entry),
        }
    }

    pub fn new(
        name: &str,
        labels: &BTreeMap<String, String>,
        terminating: bool,
    ) -> NamespaceInfo<'static> {
        NamespaceInfo {
            entry: Cow::Owned(NamespaceEntry::new(name, labels, terminating)),
            name: Cow::Owned(name.to_owned()),
        }
    }

    pub fn terminating(&self) -> bool {
        self.entry.0.terminating
    }

    /// The value of the label `key`, if the namespace has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        if self.entry.0.has_name_label && key == NAME_LABEL {
            return Some(&self.name);
        }
        self.packed_labels()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }

    /// Every label, in no particular order.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        let name_label = (self.entry.0.has_name_label).then_some((NAME_LABEL, &*self.name));
        name_label.into_iter().chain(self.packed_labels())
    }

    fn packed_labels(&self) -> impl Iterator<Item = (&str, &str)> {
        let labels = &self.entry.0.labels;
        let mut parts = labels.split('\0');
        let parts = (!labels.is_empty()).then_some(std::iter::from_fn(move || {
            Some((parts.next()?, parts.next()?))
        }));
        parts.into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::fixtures::map as labels;

    #[test]
    fn packed_labels_read_back_as_given() {
        let given = labels(&[(NAME_LABEL, "team-a"), ("env", ""), ("team", "a")]);
        let info = NamespaceInfo::new("team-a", &given, false);
        assert_eq!(info.label(NAME_LABEL), Some("team-a"));
        assert_eq!(info.label("env"), Some(""));
        assert_eq!(info.label("team"), Some("a"));
        assert_eq!(info.label("other"), None);
        let back: BTreeMap<String, String> = info
            .labels()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        assert_eq!(back, given);
        assert_eq!(
            NamespaceInfo::new("b", &labels(&[]), false)
                .labels()
                .count(),
            0
        );
    }

    #[test]
    fn the_name_label_is_read_from_the_key_the_cache_keeps_it_under() {
        let given = labels(&[(NAME_LABEL, "team-a"), ("team", "a")]);
        let entry = NamespaceEntry::new("team-a", &given, false);
        assert!(entry.0.has_name_label);
        assert_eq!(
            &*entry.0.labels, "team\0a",
            "the name is not kept in the entry"
        );
        let info = NamespaceInfo::view("team-a", &entry);
        assert_eq!(info.label(NAME_LABEL), Some("team-a"));
        // A name label that differs from the name is kept as any other label.
        let odd = NamespaceEntry::new("team-a", &labels(&[(NAME_LABEL, "team-b")]), false);
        assert_eq!(
            NamespaceInfo::view("team-a", &odd).label(NAME_LABEL),
            Some("team-b")
        );
    }

    #[test]
    fn an_entry_is_one_pointer() {
        assert_eq!(size_of::<NamespaceEntry>(), size_of::<usize>());
        assert_eq!(size_of::<Option<NamespaceEntry>>(), size_of::<usize>());
    }

    #[test]
    fn namespaces_with_the_same_labels_share_them() {
        let team = |name: &str| labels(&[(NAME_LABEL, name), ("team", "shared")]);
        let (a, b) = (
            NamespaceEntry::new("shared-a", &team("shared-a"), false),
            NamespaceEntry::new("shared-b", &team("shared-b"), false),
        );
        assert!(Arc::ptr_eq(&a.0, &b.0));
        let other = NamespaceEntry::new("shared-c", &labels(&[("team", "other")]), false);
        assert!(!Arc::ptr_eq(&a.0, &other.0));
        let terminating = NamespaceEntry::new("shared-a", &team("shared-a"), true);
        assert!(!Arc::ptr_eq(&a.0, &terminating.0));
        assert!(NamespaceInfo::view("shared-a", &terminating).terminating());
    }

    #[test]
    fn a_relabelled_namespace_reads_its_new_labels_and_the_others_keep_theirs() {
        let before = NamespaceEntry::new("relabel-a", &labels(&[("env", "dev")]), false);
        let neighbour = before.clone();
        let after = NamespaceEntry::new("relabel-a", &labels(&[("env", "prod")]), false);
        assert_eq!(
            NamespaceInfo::view("relabel-a", &after).label("env"),
            Some("prod")
        );
        assert_eq!(
            NamespaceInfo::view("relabel-b", &neighbour).label("env"),
            Some("dev")
        );
    }

    #[test]
    fn label_churn_does_not_grow_the_shared_sets() {
        for i in 0..5_000 {
            let churned = labels(&[("churn", &i.to_string())]);
            drop(NamespaceEntry::new("churn", &churned, false));
        }
        // Other tests' entries may be held meanwhile, but not thousands.
        assert!(FACTS.len() < 1_000, "{} label sets kept", FACTS.len());
    }
}
