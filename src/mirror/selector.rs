//! Which namespaces a Mirror selects: its label selector, minus the ones that must never get a copy.

use super::types::{LabelSelector, LabelSelectorRequirement};
use crate::kube::api::Namespace;
use std::collections::BTreeMap;

/// Label that opts a namespace out of every Mirror.
pub const EXCLUDE_LABEL: &str = "skiff.dev/exclude";

/// What selection needs to know about a namespace (the cache keeps only this).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespaceInfo {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub terminating: bool,
}

impl NamespaceInfo {
    pub fn of(ns: &Namespace) -> NamespaceInfo {
        NamespaceInfo {
            name: ns.metadata.name().to_owned(),
            labels: ns.metadata.labels.clone(),
            terminating: ns.is_terminating(),
        }
    }
}

/// Whether `labels` satisfy `selector` (Kubernetes `metav1.LabelSelector` semantics).
/// An unknown operator matches nothing: the CRD schema rejects it, so this is only a guard.
pub fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    selector
        .match_labels
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
        && selector
            .match_expressions
            .iter()
            .all(|req| requirement_matches(req, labels))
}

fn requirement_matches(req: &LabelSelectorRequirement, labels: &BTreeMap<String, String>) -> bool {
    let value = labels.get(&req.key);
    match req.operator.as_str() {
        "In" => value.is_some_and(|v| req.values.contains(v)),
        "NotIn" => value.is_none_or(|v| !req.values.contains(v)),
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
    let Some(selector) = selector else {
        return false;
    };
    ns.name != mirror_namespace
        && !ns.terminating
        && ns.labels.get(EXCLUDE_LABEL).map(String::as_str) != Some("true")
        && matches(selector, &ns.labels)
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
        NamespaceInfo {
            name: name.into(),
            labels: labels(pairs),
            terminating: false,
        }
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelector {
        LabelSelector {
            match_expressions: vec![LabelSelectorRequirement {
                key: key.into(),
                operator: op.into(),
                values: values.iter().map(|v| v.to_string()).collect(),
            }],
            ..LabelSelector::default()
        }
    }

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
        let mut t = ns("a", &[]);
        t.terminating = true;
        assert!(!selects(Some(&all), "src", &t));
    }

    #[test]
    fn an_absent_selector_selects_nothing() {
        assert!(!selects(None, "src", &ns("a", &[])));
    }
}
