//! What the namespace cache keeps of a namespace: its name, its labels, whether it is
//! terminating; what deciding whether a Mirror selects it needs, and nothing more.
//!
//! The cache holds one per namespace of the cluster, so its size is skiff's memory per
//! namespace: the labels are packed into one string, and the label every namespace carries
//! with its own name is kept as a flag.

use crate::kube::api::Namespace;
use std::collections::BTreeMap;

/// The label the API server puts on every namespace, its value the namespace's name.
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// What selection needs to know about a namespace.
///
/// Labels are packed into one string (`key\0value\0key\0value`, sorted by key; label keys and
/// values cannot hold a NUL), and [`NAME_LABEL`], equal to `name` on every namespace, is kept
/// as a flag: most namespaces then cost no allocation besides their name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespaceInfo {
    pub name: String,
    labels: Box<str>,
    has_name_label: bool,
    pub terminating: bool,
}

impl NamespaceInfo {
    /// The projection the namespace cache keeps of `ns`.
    pub fn of(ns: &Namespace) -> NamespaceInfo {
        NamespaceInfo::new(ns.metadata.name(), &ns.metadata.labels, ns.is_terminating())
    }

    pub fn new(name: &str, labels: &BTreeMap<String, String>, terminating: bool) -> NamespaceInfo {
        let has_name_label = labels.get(NAME_LABEL).map(String::as_str) == Some(name);
        let packed: Vec<&str> = labels
            .iter()
            .filter(|(k, _)| !(has_name_label && k.as_str() == NAME_LABEL))
            .flat_map(|(k, v)| [k.as_str(), v.as_str()])
            .collect();
        NamespaceInfo {
            name: name.to_owned(),
            labels: packed.join("\0").into_boxed_str(),
            has_name_label,
            terminating,
        }
    }

    /// The value of the label `key`, if the namespace has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        if self.has_name_label && key == NAME_LABEL {
            return Some(&self.name);
        }
        self.packed_labels()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }

    /// Every label, in no particular order.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        let name_label = self
            .has_name_label
            .then_some((NAME_LABEL, self.name.as_str()));
        name_label.into_iter().chain(self.packed_labels())
    }

    fn packed_labels(&self) -> impl Iterator<Item = (&str, &str)> {
        let mut parts = self.labels.split('\0');
        let parts = (!self.labels.is_empty()).then_some(std::iter::from_fn(move || {
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
}
