use super::*;
use crate::mirror::fixtures::mirror_of;
use crate::mirror::types::{LabelSelector, LabelSelectorRequirement, SourceKind};
use crate::testing::assert_mentions;
use serde_json::json;

fn guard() -> BindingGuard {
    BindingGuard::new("skiff.dev/kit".into()).in_namespace(Some("skiff-system".into()))
}

fn selecting(selector: Option<LabelSelector>) -> Mirror {
    let mut mirror = mirror_of("team-edit", SourceKind::RoleBinding);
    mirror.spec.namespace_selector = selector;
    mirror
}

fn expression(key: &str, operator: &str) -> LabelSelector {
    LabelSelector {
        match_expressions: vec![LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: vec!["team".into()],
        }],
        ..LabelSelector::default()
    }
}

#[test]
fn a_selector_must_require_the_label_the_policy_requires() {
    let matching = LabelSelector {
        match_labels: [("skiff.dev/kit".to_owned(), "team".to_owned())].into(),
        ..LabelSelector::default()
    };
    for selector in [
        matching,
        expression("skiff.dev/kit", "In"),
        expression("skiff.dev/kit", "Exists"),
    ] {
        assert_eq!(
            guard().selector_refusal(SourceKind::RoleBinding.row(), &selecting(Some(selector))),
            None
        );
    }
    for selector in [
        None,
        Some(LabelSelector::default()),
        Some(expression("skiff.dev/kit", "NotIn")),
        Some(expression("team", "In")),
    ] {
        let refusal = guard()
            .selector_refusal(SourceKind::RoleBinding.row(), &selecting(selector.clone()))
            .unwrap_or_else(|| panic!("{selector:?} selects unlabelled namespaces"));
        assert_eq!(refusal.reason, Reason::NamespaceNotLabelled);
        assert_mentions(
            &refusal.message,
            &[
                "skiff.dev/kit",
                "--binding-namespace-label",
                "namespaceSelector",
            ],
        );
    }
}

#[test]
fn kube_namespaces_and_skiffs_own_are_never_targets() {
    let set = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect();
    assert_eq!(
        guard().namespace_refusal(&set(&["team-a", "kubeflow"])),
        None
    );
    for protected in [
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "skiff-system",
    ] {
        let refusal = guard()
            .namespace_refusal(&set(&["team-a", protected]))
            .unwrap_or_else(|| panic!("{protected} is protected"));
        assert_mentions(&refusal.message, &[protected]);
        assert!(!refusal.message.contains("team-a"), "{}", refusal.message);
    }
}

#[test]
fn no_subject_may_be_or_hold_skiffs_own_service_account() {
    let refused = [
        json!({"kind": "ServiceAccount", "name": "skiff", "namespace": "skiff-system"}),
        json!({"kind": "ServiceAccount", "name": "other", "namespace": "skiff-system"}),
        json!({"kind": "User", "name": "system:serviceaccount:skiff-system:skiff"}),
        json!({"kind": "Group", "name": "system:serviceaccounts:skiff-system"}),
        json!({"kind": "Group", "name": "system:serviceaccounts"}),
        json!({"kind": "Group", "name": "system:authenticated"}),
    ];
    let team = json!({"kind": "Group", "name": "team-a"});
    for subject in refused {
        let subjects = json!([team, subject]);
        let refusal = guard()
            .subject_refusal(&subjects)
            .unwrap_or_else(|| panic!("{subject} holds skiff"));
        assert_eq!(refusal.reason, Reason::BindingNotAllowed);
        assert_mentions(&refusal.message, &[subject["name"].as_str().unwrap_or("")]);
    }
    let allowed = json!([
        team,
        {"kind": "ServiceAccount", "name": "skiff", "namespace": "team-a"},
        {"kind": "ServiceAccount", "name": "builder"},
        {"kind": "Group", "name": "system:serviceaccounts:team-a"},
        {"kind": "User", "name": "system:serviceaccount:team-a:skiff"},
    ]);
    assert_eq!(guard().subject_refusal(&allowed), None);
}
