//! Which namespaces a Mirror selects: its label selector, minus the ones that must never get a copy.

use super::types::{LabelSelector, LabelSelectorRequirement};
use crate::kube::api::Namespace;
use std::collections::BTreeMap;

/// Label that opts a namespace out of every Mirror.
pub const EXCLUDE_LABEL: &str = "skiff.dev/exclude";

/// The label the API server puts on every namespace, its value the namespace's name.
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// What selection needs to know about a namespace (the cache keeps only this, one per
/// namespace of the cluster, so its size is skiff's memory per namespace).
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

/// Whether the labels `label(key)` reads satisfy `selector` (Kubernetes `metav1.LabelSelector`
/// semantics). An unknown operator matches nothing: the CRD schema rejects it, so this is only
/// a guard.
pub fn matches<'a>(selector: &LabelSelector, label: impl Fn(&str) -> Option<&'a str>) -> bool {
    selector
        .match_labels
        .iter()
        .all(|(k, v)| label(k) == Some(v.as_str()))
        && selector
            .match_expressions
            .iter()
            .all(|req| requirement_matches(req, label(&req.key)))
}

fn requirement_matches(req: &LabelSelectorRequirement, value: Option<&str>) -> bool {
    let listed = |v: &str| req.values.iter().any(|listed| listed == v);
    match req.operator.as_str() {
        "In" => value.is_some_and(listed),
        "NotIn" => value.is_none_or(|v| !listed(v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        _ => false,
    }
}

/// Whether a Mirror living in `mirror_namespace` with `selector` copies into `ns`.
pub fn selects(
    selector: Option<&LabelSelector>,
    mirror_namespace: &str,
    ns: &NamespaceInfo,
) -> bool {
    eligible(ns) && chooses(selector, mirror_namespace, ns)
}

/// Whether any Mirror may copy into `ns` at all: it is not Terminating and not opted out. The
/// same for every Mirror, so a Namespace event asks it once, not once per Mirror.
pub fn eligible(ns: &NamespaceInfo) -> bool {
    !ns.terminating && ns.label(EXCLUDE_LABEL) != Some("true")
}

/// The Mirror's own part of [`selects`], for a namespace already known [`eligible`].
pub fn chooses(
    selector: Option<&LabelSelector>,
    mirror_namespace: &str,
    ns: &NamespaceInfo,
) -> bool {
    let Some(selector) = selector else {
        return false;
    };
    ns.name != mirror_namespace && matches(selector, |key| ns.label(key))
}

/// A selector of one requirement `key operator values` (for tests).
#[cfg(test)]
pub(crate) fn expr(key: &str, operator: &str, values: &[&str]) -> LabelSelector {
    LabelSelector {
        match_expressions: vec![LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        }],
        ..LabelSelector::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn ns(name: &str, pairs: &[(&str, &str)]) -> NamespaceInfo {
        NamespaceInfo::new(name, &labels(pairs), false)
    }

    /// `matches` over a plain map, as the selector tests write their labels.
    fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
        super::matches(selector, |k| labels.get(k).map(String::as_str))
    }

    use super::expr;

    #[test]
    fn empty_selector_matches_everything() {
        assert!(matches(&LabelSelector::default(), &labels(&[])));
    }

    #[test]
    fn match_labels_need_every_pair() {
        let sel = LabelSelector {
            match_labels: labels(&[("team", "a"), ("env", "prod")]),
            ..Default::default()
        };
        assert!(matches(
            &sel,
            &labels(&[("team", "a"), ("env", "prod"), ("x", "y")])
        ));
        assert!(!matches(&sel, &labels(&[("team", "a")])));
    }

    #[test]
    fn expressions_follow_kubernetes_operators() {
        let l = labels(&[("env", "prod")]);
        assert!(matches(&expr("env", "In", &["prod", "qa"]), &l));
        assert!(!matches(&expr("env", "In", &["qa"]), &l));
        assert!(matches(&expr("env", "NotIn", &["qa"]), &l));
        assert!(
            matches(&expr("team", "NotIn", &["a"]), &l),
            "NotIn matches a missing key"
        );
        assert!(matches(&expr("env", "Exists", &[]), &l));
        assert!(matches(&expr("team", "DoesNotExist", &[]), &l));
        assert!(!matches(&expr("env", "Bogus", &[]), &l));
    }

    #[test]
    fn own_excluded_and_terminating_namespaces_are_never_selected() {
        let all = LabelSelector::default();
        assert!(selects(Some(&all), "src", &ns("a", &[])));
        assert!(!selects(Some(&all), "src", &ns("src", &[])));
        assert!(!selects(
            Some(&all),
            "src",
            &ns("a", &[(EXCLUDE_LABEL, "true")])
        ));
        assert!(selects(
            Some(&all),
            "src",
            &ns("a", &[(EXCLUDE_LABEL, "false")])
        ));
        let t = NamespaceInfo::new("a", &labels(&[]), true);
        assert!(!selects(Some(&all), "src", &t));
    }

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
    fn a_name_label_naming_another_namespace_is_kept_as_it_is() {
        let info = NamespaceInfo::new("team-a", &labels(&[(NAME_LABEL, "team-b")]), false);
        assert_eq!(info.label(NAME_LABEL), Some("team-b"));
        let sel = LabelSelector {
            match_labels: labels(&[(NAME_LABEL, "team-a")]),
            ..Default::default()
        };
        assert!(!selects(Some(&sel), "src", &info));
        let own = NamespaceInfo::new("team-a", &labels(&[(NAME_LABEL, "team-a")]), false);
        assert!(selects(Some(&sel), "src", &own));
    }

    #[test]
    fn an_absent_selector_selects_nothing() {
        assert!(!selects(None, "src", &ns("a", &[])));
    }
}
