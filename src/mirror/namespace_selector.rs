//! Which namespaces a Mirror's `namespaceSelector` selects: Kubernetes label selector
//! semantics ([`LabelSelector::matches`]), minus the namespaces that must never get a copy (the
//! Mirror's own, those opted out, those terminating).
//!
//! These are the rules for one namespace; [`super::selection`] keeps each Mirror's selected
//! namespaces up to date with them, event by event.

use super::namespace::NamespaceInfo;
use super::placement::MEMBER_LABEL;
use super::types::{LabelSelector, LabelSelectorRequirement, Mirror};

/// Label that opts a namespace out of every Mirror.
pub const EXCLUDE_LABEL: &str = "skiff.dev/exclude";

/// The selector a Mirror's selection is computed with: a local Mirror's `namespaceSelector`,
/// which never selects a member cluster's namespace on a hub (a Secret copied there would be
/// that member's to read); a fleet Mirror's `clusterSelector`, which selects only those.
pub fn effective(mirror: &Mirror) -> Option<LabelSelector> {
    let (mut selector, member) = match &mirror.spec.cluster_selector {
        Some(clusters) => (clusters.clone(), "Exists"),
        None => (mirror.spec.namespace_selector.clone()?, "DoesNotExist"),
    };
    selector.match_expressions.push(LabelSelectorRequirement {
        key: MEMBER_LABEL.to_owned(),
        operator: member.to_owned(),
        values: Vec::new(),
    });
    Some(selector)
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
    !ns.terminating() && ns.label(EXCLUDE_LABEL) != Some("true")
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
    ns.name != mirror_namespace && selector.matches(|key| ns.label(key))
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
    use crate::mirror::fixtures::map as labels;
    use crate::mirror::namespace::NAME_LABEL;
    use std::collections::BTreeMap;

    fn ns(name: &str, pairs: &[(&str, &str)]) -> NamespaceInfo<'static> {
        NamespaceInfo::new(name, &labels(pairs), false)
    }

    /// `matches` over a plain map, as the selector tests write their labels.
    fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
        selector.matches(|k| labels.get(k).map(String::as_str))
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
