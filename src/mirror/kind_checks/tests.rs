use super::*;
use crate::kind::{Kinds, SourceKind};
use crate::mirror::fixtures::{self, mirror_of};
use crate::testing::assert_mentions;
use serde_json::json;

fn checks(kinds: &str, roles: &str) -> KindChecks {
    let kinds = Kinds::parse(&[kinds.to_owned()], &[roles.to_owned()]).expect("valid");
    KindChecks::new(kinds, None)
}

fn none() -> BTreeSet<String> {
    BTreeSet::new()
}

fn role_binding(role_kind: &str, role: &str) -> Payload {
    let object = json!({"metadata": {},
        "subjects": [{"kind": "Group", "name": "team", "apiGroup": "rbac.authorization.k8s.io"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role}});
    let source = fixtures::source(SourceKind::RoleBinding, &object);
    source.payload.clone()
}

#[test]
fn a_mirror_of_a_kind_not_enabled_is_refused_naming_the_flag() {
    let none = checks("", "");
    let refusal = none
        .refusal(&mirror_of("m", SourceKind::LimitRange))
        .expect("refused");
    assert_eq!(refusal.reason, Reason::KindNotEnabled);
    assert_mentions(&refusal.message, &["LimitRange", "limitranges", "--kinds"]);
    assert_eq!(none.refusal(&mirror_of("m", SourceKind::ConfigMap)), None);
    let enabled = checks("networkpolicies", "");
    assert_eq!(
        enabled.refusal(&mirror_of("m", SourceKind::NetworkPolicy)),
        None
    );
}

#[test]
fn a_role_binding_to_a_role_not_named_is_refused_before_any_write() {
    let kinds = checks("rolebindings", "edit,view");
    let mirror = mirror_of("team-edit", SourceKind::RoleBinding);
    assert_eq!(
        kinds.binding_refusal(&mirror, &role_binding("ClusterRole", "edit"), none),
        None
    );
    let refusal = kinds
        .binding_refusal(&mirror, &role_binding("ClusterRole", "cluster-admin"), none)
        .expect("cluster-admin is not bindable");
    assert_eq!(refusal.reason, Reason::RoleNotBindable);
    assert_mentions(
        &refusal.message,
        &["cluster-admin", "edit,view", "--bindable-roles"],
    );
    let refusal = kinds.binding_refusal(&mirror, &role_binding("Role", "edit"), none);
    assert!(
        refusal.is_some(),
        "a namespaced Role named edit is not the ClusterRole"
    );
}

#[test]
fn keys_are_refused_on_a_kind_copied_whole() {
    let kinds = checks("resourcequotas", "");
    let mut mirror = mirror_of("q", SourceKind::ResourceQuota);
    mirror.spec.source.keys = vec!["hard".into()];
    let refusal = kinds.refusal(&mirror).expect("refused");
    assert_eq!(refusal.reason, Reason::KeysNotApplicable);
    assert_mentions(&refusal.message, &["ResourceQuota", "spec"]);
}

#[test]
fn a_copy_may_not_take_a_name_another_controller_keeps() {
    let kinds = checks("serviceaccounts", "");
    let mut mirror = mirror_of("sa", SourceKind::ServiceAccount);
    mirror.spec.source.name = "default".into();
    let refusal = kinds.refusal(&mirror).expect("default is reserved");
    assert_eq!(refusal.reason, Reason::NameReserved);
    assert_mentions(&refusal.message, &["default", "spec.targetName"]);
    mirror.spec.target_name = Some("builder".into());
    assert_eq!(kinds.refusal(&mirror), None, "renamed, it may be copied");
    let mut ca = mirror_of("ca", SourceKind::ConfigMap);
    ca.spec.target_name = Some("kube-root-ca.crt".into());
    let refusal = checks("", "").refusal(&ca).expect("the root CA's name");
    assert_eq!(refusal.reason, Reason::NameReserved);
}

#[test]
fn role_binding_mirrors_are_held_to_the_admission_policy_before_any_write() {
    let kinds = Kinds::parse(&["rolebindings".to_owned()], &["edit".to_owned()])
        .expect("valid")
        .with_binding_namespace_label("skiff.dev/kit")
        .expect("valid");
    let kinds = KindChecks::new(kinds, Some("skiff-system".into()));
    let mut mirror = mirror_of("team-edit", SourceKind::RoleBinding);
    let refusal = kinds.refusal(&mirror).expect("no selector");
    assert_eq!(refusal.reason, Reason::NamespaceNotLabelled);
    mirror.spec.namespace_selector = Some(crate::mirror::types::LabelSelector {
        match_labels: [("skiff.dev/kit".to_owned(), "team".to_owned())].into(),
        ..Default::default()
    });
    assert_eq!(kinds.refusal(&mirror), None);
    let edit = role_binding("ClusterRole", "edit");
    let selected = || ["kube-system".to_owned()].into();
    let refusal = kinds.binding_refusal(&mirror, &edit, selected);
    assert_mentions(&refusal.expect("kube-system").message, &["kube-system"]);
    let team = || ["team-a".to_owned()].into();
    assert_eq!(kinds.binding_refusal(&mirror, &edit, team), None);
}

/// The Mirror `m` of the Secret `app` publishing `keys` as a ConfigMap.
fn publishing(keys: &[&str]) -> Mirror {
    let mut m = mirror_of("m", SourceKind::Secret);
    m.spec.source.keys = keys.iter().map(|k| k.to_string()).collect();
    m.spec.target = Some(crate::mirror::types::TargetSpec {
        kind: Some(SourceKind::ConfigMap),
        ..Default::default()
    });
    m
}

#[test]
fn a_projection_needs_secrets_read_keys_listed_and_a_row_that_allows_it() {
    let without = KindChecks::new(Kinds::default(), None);
    let refusal = without
        .refusal(&publishing(&["ca.crt"]))
        .expect("Secrets off");
    assert_eq!(refusal.reason, Reason::SecretTargetsDisabled);
    assert_mentions(
        &refusal.message,
        &["--secret-target-names", "secret-targets"],
    );
    let with = KindChecks::new(Kinds::default().with_secret_targets(true), None);
    assert_eq!(with.refusal(&publishing(&["ca.crt"])), None);
    let refusal = with.refusal(&publishing(&[])).expect("no keys");
    assert_eq!(refusal.reason, Reason::KeysRequired);
    assert_mentions(&refusal.message, &["spec.source.keys", "PEM certificates"]);
    let mut back = publishing(&["ca.crt"]);
    back.spec.source.kind = SourceKind::ConfigMap;
    back.spec.target.as_mut().expect("target").kind = Some(SourceKind::Secret);
    let refusal = with.refusal(&back).expect("no such projection");
    assert_eq!(refusal.reason, Reason::ProjectionNotSupported);
}

#[test]
fn renames_like_keys_need_a_kind_that_has_keys() {
    let kinds = checks("limitranges", "");
    let mut m = mirror_of("m", SourceKind::LimitRange);
    m.spec.source.rename = vec![crate::mirror::types::Rename {
        from: "a".into(),
        to: "b".into(),
    }];
    let refusal = kinds.refusal(&m).expect("refused");
    assert_eq!(refusal.reason, Reason::KeysNotApplicable);
    assert_mentions(
        &refusal.message,
        &["spec.source.rename", "LimitRange", "spec"],
    );
}

#[test]
fn a_name_is_reserved_by_the_copies_kind() {
    let kinds = KindChecks::new(Kinds::default().with_secret_targets(true), None);
    let mut m = publishing(&["ca.crt"]);
    m.spec.target_name = Some("kube-root-ca.crt".into());
    let refusal = kinds
        .refusal(&m)
        .expect("a ConfigMap the controller-manager keeps");
    assert_eq!(refusal.reason, Reason::NameReserved);
}

#[test]
fn every_kit_kind_copies_only_into_namespaces_the_admin_labelled() {
    let enabled = "networkpolicies,limitranges,resourcequotas,serviceaccounts";
    let names: Vec<String> = enabled.split(',').map(str::to_owned).collect();
    let kinds = Kinds::parse(&names, &[])
        .expect("valid")
        .with_binding_namespace_label("skiff.dev/kit")
        .expect("valid");
    let kinds = KindChecks::new(kinds, Some("skiff-system".into()));
    for kind in SourceKind::all().filter(|k| k.row().guard == Guard::LabelledNamespaces) {
        let mut mirror = mirror_of("defaults", kind);
        mirror.spec.namespace_selector = Some(Default::default());
        let refusal = kinds.refusal(&mirror).expect("every namespace selected");
        assert_eq!(refusal.reason, Reason::NamespaceNotLabelled, "{kind:?}");
        assert_mentions(&refusal.message, &["skiff.dev/kit", "namespaceSelector"]);
        mirror.spec.namespace_selector = Some(crate::mirror::types::LabelSelector {
            match_labels: [("skiff.dev/kit".to_owned(), "team".to_owned())].into(),
            ..Default::default()
        });
        assert_eq!(kinds.refusal(&mirror), None, "{kind:?}");
    }
}
