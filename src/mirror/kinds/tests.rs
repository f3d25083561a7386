use super::*;
use crate::kube::api::KitObject;
use crate::mirror::fixtures::mirror_of;
use crate::mirror::source::SourceContent;
use crate::testing::assert_mentions;
use serde_json::json;

fn parse(kinds: &str, roles: &str) -> Result<Kinds, String> {
    Kinds::parse(&[kinds.to_owned()], &[roles.to_owned()])
}

fn none() -> std::collections::BTreeSet<String> {
    std::collections::BTreeSet::new()
}

fn role_binding(role_kind: &str, role: &str) -> Payload {
    let object = KitObject {
        subjects: Some(json!([{"kind": "Group", "name": "team",
            "apiGroup": "rbac.authorization.k8s.io"}])),
        role_ref: Some(json!({"apiGroup": "rbac.authorization.k8s.io",
            "kind": role_kind, "name": role})),
        ..KitObject::default()
    };
    let fields = kit(SourceKind::RoleBinding).expect("in the table").fields;
    SourceContent::of_kit(SourceKind::RoleBinding, &object, fields)
        .payload
        .clone()
}

#[test]
fn by_default_no_kit_kind_is_enabled() {
    let none = Kinds::parse(&[], &[]).expect("valid");
    assert_eq!(none.enabled().count(), 0);
    assert!(none.is_enabled(SourceKind::ConfigMap) && none.is_enabled(SourceKind::Secret));
    assert!(!none.is_enabled(SourceKind::NetworkPolicy));
    let refusal = none
        .refusal(&mirror_of("m", SourceKind::LimitRange))
        .expect("refused");
    assert_eq!(refusal.reason, Reason::KindNotEnabled);
    assert_mentions(&refusal.message, &["LimitRange", "limitranges", "--kinds"]);
    assert_eq!(none.refusal(&mirror_of("m", SourceKind::ConfigMap)), None);
}

#[test]
fn the_four_kinds_are_enabled_by_resource_with_or_without_group() {
    let kinds = Kinds::parse(
        &[
            "networkpolicies.networking.k8s.io, limitranges".to_owned(),
            "resourcequotas,rolebindings".to_owned(),
        ],
        &["edit".to_owned()],
    )
    .expect("valid");
    let names: Vec<String> = kinds.enabled().map(KitKind::flag_name).collect();
    assert_eq!(
        names,
        [
            "networkpolicies.networking.k8s.io",
            "limitranges",
            "resourcequotas",
            "rolebindings.rbac.authorization.k8s.io"
        ]
    );
    assert_eq!(
        kinds.refusal(&mirror_of("m", SourceKind::NetworkPolicy)),
        None
    );
}

#[test]
fn denied_and_unknown_kinds_are_refused_naming_the_kind_and_why() {
    for (entry, why) in [
        ("pods", "runs code"),
        ("deployments.apps", "runs code"),
        ("cronjobs.batch", "runs code"),
        ("secrets", "--secret-target-names"),
        ("roles.rbac.authorization.k8s.io", "escalate"),
        ("clusterroles", "escalate"),
        (
            "certificates.cert-manager.io",
            "Custom resources are not supported yet",
        ),
        ("networkpolicies.example.com", "not a kind skiff can copy"),
    ] {
        let error = parse(entry, "").expect_err(entry);
        assert_mentions(
            &error,
            &[entry, why, "Supported: networkpolicies.networking.k8s.io"],
        );
    }
}

#[test]
fn rolebindings_and_bindable_roles_go_together() {
    let error = parse("rolebindings", "").expect_err("no roles");
    assert_mentions(&error, &["--bindable-roles", "bind"]);
    let error = parse("rolebindings", "edit,*").expect_err("a wildcard");
    assert_mentions(&error, &["--bindable-roles", "wildcard"]);
    let error = parse("limitranges", "edit").expect_err("roles without rolebindings");
    assert_mentions(&error, &["--bindable-roles", "rolebindings"]);
}

#[test]
fn a_role_binding_to_a_role_not_named_is_refused_before_any_write() {
    let kinds = parse("rolebindings", "edit,view").expect("valid");
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
    let kinds = parse("resourcequotas", "").expect("valid");
    let mut mirror = mirror_of("q", SourceKind::ResourceQuota);
    mirror.spec.source.keys = vec!["hard".into()];
    let refusal = kinds.refusal(&mirror).expect("refused");
    assert_eq!(refusal.reason, Reason::KeysNotApplicable);
}

#[test]
fn role_binding_mirrors_are_held_to_the_admission_policy_before_any_write() {
    let kinds = parse("rolebindings", "edit")
        .expect("valid")
        .with_binding_namespace_label("skiff.dev/kit")
        .expect("valid")
        .in_namespace(Some("skiff-system".into()));
    let mut mirror = mirror_of("team-edit", SourceKind::RoleBinding);
    let refusal = kinds.refusal(&mirror).expect("no selector");
    assert_eq!(refusal.reason, Reason::BindingNotAllowed);
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
    let without = parse("limitranges", "").expect("valid");
    assert!(
        without
            .with_binding_namespace_label("skiff.dev/kit")
            .is_err()
    );
}
