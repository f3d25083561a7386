use super::*;
use crate::kube::api::{ConfigMap, Resource, Secret};
use crate::testing::assert_mentions;

fn parse(kinds: &str, roles: &str) -> Result<Kinds, String> {
    Kinds::parse(&[kinds.to_owned()], &[roles.to_owned()])
}

#[test]
fn each_row_is_found_by_its_kind_and_named_as_the_api_names_it() {
    for (i, row) in TABLE.iter().enumerate() {
        assert_eq!(
            row.id as usize, i,
            "{} is out of SourceKind's order",
            row.name
        );
        assert_eq!(row.id.row().name, row.name);
        let json = serde_json::to_value(row.id).expect("encodes");
        assert_eq!(json, row.name, "spec.source.kind spells the row's name");
    }
    assert_eq!(SourceKind::all().count(), TABLE.len());
}

#[test]
fn paths_are_the_kinds_own() {
    let configmaps = SourceKind::ConfigMap.row();
    assert_eq!(
        configmaps.collection_path(None),
        ConfigMap::url_path(None, None)
    );
    let secret = SourceKind::Secret.row();
    assert_eq!(
        secret.object_path("a", "b"),
        Secret::url_path(Some("a"), Some("b"))
    );
    let binding = SourceKind::RoleBinding.row();
    assert_eq!(
        binding.object_path("a", "b"),
        "/apis/rbac.authorization.k8s.io/v1/namespaces/a/rolebindings/b"
    );
    assert_eq!(binding.api_version(), "rbac.authorization.k8s.io/v1");
    assert_eq!(SourceKind::LimitRange.row().api_version(), "v1");
}

#[test]
fn by_default_configmaps_alone_are_copied() {
    let none = Kinds::parse(&[], &[]).expect("valid");
    let on: Vec<SourceKind> = none.enabled().map(|k| k.id).collect();
    assert_eq!(on, [SourceKind::ConfigMap]);
    assert!(
        none.clone()
            .with_secret_targets(true)
            .is_enabled(SourceKind::Secret)
    );
    assert!(!none.is_enabled(SourceKind::NetworkPolicy));
}

#[test]
fn the_kit_kinds_are_enabled_by_resource_with_or_without_group() {
    let kinds = Kinds::parse(
        &[
            "networkpolicies.networking.k8s.io, limitranges".to_owned(),
            "resourcequotas,rolebindings".to_owned(),
        ],
        &["edit".to_owned()],
    )
    .expect("valid");
    let names: Vec<String> = kinds.flagged().map(Kind::flag_name).collect();
    assert_eq!(
        names,
        [
            "networkpolicies.networking.k8s.io",
            "limitranges",
            "resourcequotas",
            "rolebindings.rbac.authorization.k8s.io"
        ]
    );
    assert!(kinds.is_enabled(SourceKind::NetworkPolicy));
}

#[test]
fn denied_and_unknown_kinds_are_refused_naming_the_kind_and_why() {
    for (entry, why) in [
        ("pods", "runs code"),
        ("deployments.apps", "runs code"),
        ("cronjobs.batch", "runs code"),
        ("secrets", "--secret-target-names"),
        ("configmaps", "always copied"),
        ("roles.rbac.authorization.k8s.io", "escalate"),
        ("clusterroles", "escalate"),
        (
            "certificates.cert-manager.io",
            "Custom resources are not supported yet",
        ),
        ("networkpolicies.example.com", "not a kind skiff can copy"),
    ] {
        let error = parse(entry, "").expect_err(entry);
        assert_mentions(&error, &[entry, why, "networkpolicies.networking.k8s.io"]);
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
    let label = parse("rolebindings", "edit").expect("valid");
    let error = label
        .with_binding_namespace_label("")
        .expect_err("no label");
    assert_mentions(&error, &["--binding-namespace-label"]);
    let limits = parse("limitranges", "").expect("valid");
    let error = limits
        .with_binding_namespace_label("")
        .expect_err("a kit kind needs it");
    assert_mentions(&error, &["limitranges", "--binding-namespace-label"]);
    let without = parse("", "").expect("valid");
    assert!(
        without
            .with_binding_namespace_label("skiff.dev/kit")
            .is_err()
    );
}

#[test]
fn one_parser_reads_every_flag_that_names_kinds() {
    for row in TABLE.iter() {
        let found = names::lookup("--x", &row.flag_name()).expect("its own name");
        assert_eq!(found.id, row.id);
        let upper = row.resource.to_ascii_uppercase();
        assert_eq!(names::lookup("--x", &upper).map(|k| k.id), Ok(row.id));
    }
    let error = names::lookup("--self-service-kinds", "pods").expect_err("denied");
    assert_mentions(&error, &["--self-service-kinds", "runs code"]);
}

#[test]
fn reserved_names_are_the_ones_another_controller_keeps_everywhere() {
    let reserved: Vec<(SourceKind, &str)> = (TABLE.iter())
        .flat_map(|row| row.reserved.iter().map(move |r| (row.id, r.name)))
        .collect();
    assert_eq!(
        reserved,
        [
            (SourceKind::ConfigMap, "kube-root-ca.crt"),
            (SourceKind::ServiceAccount, "default")
        ]
    );
    assert!(
        SourceKind::ServiceAccount
            .row()
            .reserved("builder")
            .is_none()
    );
}

/// The kind table as README.md shows it, one line per row.
fn readme_table() -> String {
    let mut lines = Vec::new();
    for row in TABLE.iter() {
        let enabled = match row.enabled_by {
            EnabledBy::Always => "always".to_owned(),
            EnabledBy::SecretTargetNames => "`--secret-target-names`".to_owned(),
            EnabledBy::KindsFlag => format!("`--kinds={}`", row.flag_name()),
        };
        let carries: Vec<String> = row
            .content
            .iter()
            .map(|f| format!("`{}`", f.name))
            .collect();
        let never = match row.never {
            "" => "`status`".to_owned(),
            never => format!("`status`; {never}"),
        };
        let reserved: Vec<String> = row
            .reserved
            .iter()
            .map(|r| format!("`{}`", r.name))
            .collect();
        let keys: Vec<String> = row.key_fields().map(|f| format!("`{}`", f.name)).collect();
        let published: Vec<String> = (row.published_as.iter())
            .map(|p| {
                let to = p.to.row().name;
                format!("{to} (`{}`): {} only", p.to_field, p.admits)
            })
            .collect();
        let or_none = |items: Vec<String>| match items.is_empty() {
            true => "none".to_owned(),
            false => items.join(", "),
        };
        lines.push(format!(
            "| {} | `{}` | `{}` | {enabled} | {} | {} | {} | {never} | {} |",
            row.name,
            row.flag_name(),
            row.api_version(),
            carries.join(", "),
            or_none(keys),
            or_none(published),
            or_none(reserved)
        ));
    }
    lines.join("\n")
}

#[test]
fn readme_shows_the_kind_table_as_it_is() {
    let readme = include_str!("../../README.md");
    let start = readme
        .find("<!-- kind-table")
        .expect("README marks its kind table");
    let end = readme
        .find("<!-- /kind-table -->")
        .expect("and where it ends");
    let shown: Vec<&str> = readme[start..end].lines().skip(3).collect();
    let wanted = readme_table();
    assert_eq!(
        shown.join("\n"),
        wanted,
        "README.md's kind table differs from src/kind/table.rs; its rows should read:\n{wanted}"
    );
}

#[test]
fn the_crd_allows_exactly_the_projections_of_the_table() {
    let crd = include_str!("../../manifests/crd.yaml");
    let allowed: Vec<String> = (TABLE.iter())
        .flat_map(|row| {
            let pairs = row.published_as.iter();
            pairs.map(move |p| {
                let to = p.to.row().name;
                format!(
                    "(self.source.kind == '{}' && self.target.kind == '{to}')",
                    row.name
                )
            })
        })
        .collect();
    assert_eq!(
        crd.matches("&& self.target.kind == '").count(),
        allowed.len(),
        "manifests/crd.yaml allows other projections than src/kind/table.rs: {allowed:?}"
    );
    for pair in &allowed {
        assert!(
            crd.contains(pair.as_str()),
            "manifests/crd.yaml lacks {pair}"
        );
    }
    let names: Vec<String> = (TABLE.iter())
        .flat_map(|row| row.published_as.iter().map(move |p| row.projection_name(p)))
        .collect();
    assert_eq!(names, ["secrets-as-configmaps"]);
}
