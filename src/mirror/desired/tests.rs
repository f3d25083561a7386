use super::*;
use crate::kube::api::{ConfigMap, ObjectMeta, Secret};
use crate::mirror::fixtures;
use crate::mirror::fixtures::{map, mirror_of};
use crate::mirror::types::{SourceKind, TargetSpec};
use crate::testing::assert_mentions;

fn mirror(kind: SourceKind) -> Mirror {
    mirror_of("m", kind)
}

fn keys(m: &mut Mirror, keys: &[&str]) {
    m.spec.source.keys = keys.iter().map(|k| k.to_string()).collect();
}

fn configmap(data: &[(&str, &str)], labels: &[(&str, &str)]) -> Arc<SourceContent> {
    let mut cm = ConfigMap {
        data: map(data),
        ..ConfigMap::default()
    };
    cm.metadata.labels = map(labels);
    fixtures::source(SourceKind::ConfigMap, &cm)
}

fn secret(type_: &str, data: &[(&str, &str)]) -> Arc<SourceContent> {
    fixtures::source(
        SourceKind::Secret,
        &Secret {
            type_: Some(type_.into()),
            data: map(data),
            ..Secret::default()
        },
    )
}

fn refusal(m: &Mirror, source: &Arc<SourceContent>) -> Refusal {
    DesiredCopy::of(m, source).expect_err("refused")
}

#[test]
fn a_plain_mirror_wants_the_source_as_it_is_with_its_hash() {
    let source = configmap(&[("a", "1")], &[("team", "x")]);
    let desired = DesiredCopy::of(&mirror(SourceKind::ConfigMap), &source).expect("desired");
    assert_eq!(desired.hash, source.hash);
    assert_eq!(desired.payload(), &source.payload);
    assert!(desired.labels.is_empty() && desired.annotations.is_empty());
}

#[test]
fn listed_keys_are_the_only_ones_and_the_list_is_in_the_hash() {
    let source = configmap(&[("a", "1"), ("b", "2"), ("c", "3")], &[]);
    let mut m = mirror(SourceKind::ConfigMap);
    keys(&mut m, &["a", "b"]);
    let ab = DesiredCopy::of(&m, &source).expect("desired");
    assert!(ab.payload().has_key("b") && !ab.payload().has_key("c"));
    keys(&mut m, &["a"]);
    let a = DesiredCopy::of(&m, &source).expect("desired");
    assert_ne!(ab.hash, a.hash);
    assert_ne!(ab.hash, source.hash);
}

#[test]
fn a_listed_key_the_source_lacks_is_named() {
    let source = configmap(&[("a", "1")], &[]);
    let mut m = mirror(SourceKind::ConfigMap);
    keys(&mut m, &["a", "gone", "lost"]);
    let refused = refusal(&m, &source);
    assert_eq!(refused.reason, Reason::SourceKeyMissing);
    assert_mentions(&refused.message, &["gone and lost", "src/app"]);
}

#[test]
fn a_typed_secret_keeps_the_keys_its_type_requires() {
    let source = secret(
        "kubernetes.io/tls",
        &[("tls.crt", "Qw=="), ("tls.key", "Sw==")],
    );
    let mut m = mirror(SourceKind::Secret);
    keys(&mut m, &["tls.crt"]);
    let refused = refusal(&m, &source);
    assert_eq!(refused.reason, Reason::RequiredKeyNotListed);
    assert_mentions(
        &refused.message,
        &["kubernetes.io/tls", "leaves out tls.key"],
    );
    keys(&mut m, &["tls.key", "tls.crt"]);
    assert!(DesiredCopy::of(&m, &source).is_ok());
    let basic = secret(
        "kubernetes.io/basic-auth",
        &[("username", "dQ=="), ("x", "eA==")],
    );
    keys(&mut m, &["username"]);
    assert!(
        DesiredCopy::of(&m, &basic).is_ok(),
        "one of username or password"
    );
    keys(&mut m, &["x"]);
    assert!(refusal(&m, &basic).message.contains("username or password"));
}

#[test]
fn a_service_account_token_is_never_copied() {
    let source = secret("kubernetes.io/service-account-token", &[("token", "dA==")]);
    let refused = refusal(&mirror(SourceKind::Secret), &source);
    assert_eq!(refused.reason, Reason::SourceNotAllowed);
    assert_mentions(&refused.message, &["kubernetes.io/service-account-token"]);
}

#[test]
fn target_metadata_wins_over_carried_metadata_and_tracking_keys_stay_behind() {
    let source = configmap(
        &[("a", "1")],
        &[
            ("team", "source"),
            ("cnpg.io/reload", "true"),
            ("app.kubernetes.io/instance", "argo-app"),
        ],
    );
    let mut m = mirror(SourceKind::ConfigMap);
    m.spec.source.copy_labels = vec!["*".into()];
    m.spec.target = Some(TargetSpec {
        metadata: ObjectMeta {
            labels: map(&[("team", "target")]),
            annotations: map(&[("note", "n")]),
            ..ObjectMeta::default()
        },
        kind: None,
    });
    let desired = DesiredCopy::of(&m, &source).expect("desired");
    assert_eq!(
        desired.labels,
        map(&[("team", "target"), ("cnpg.io/reload", "true")])
    );
    assert_eq!(desired.annotations, map(&[("note", "n")]));
    assert_ne!(desired.hash, source.hash, "managed metadata is in the hash");
}

fn rename(m: &mut Mirror, renames: &[(&str, &str)]) {
    m.spec.source.rename = renames
        .iter()
        .map(|(from, to)| crate::mirror::types::Rename {
            from: from.to_string(),
            to: to.to_string(),
        })
        .collect();
}

#[test]
fn renamed_keys_are_copied_under_their_new_names_with_or_without_a_list() {
    let source = configmap(&[("tls.crt", "C"), ("other", "o")], &[]);
    let mut m = mirror(SourceKind::ConfigMap);
    rename(&mut m, &[("tls.crt", "ca.crt")]);
    let all = DesiredCopy::of(&m, &source).expect("every key, one renamed");
    assert!(all.payload().has_key("ca.crt") && all.payload().has_key("other"));
    assert!(!all.payload().has_key("tls.crt"));
    assert_ne!(all.hash, source.hash);
    keys(&mut m, &["tls.crt"]);
    let picked = DesiredCopy::of(&m, &source).expect("one key, renamed");
    assert!(picked.payload().has_key("ca.crt") && !picked.payload().has_key("other"));
}

#[test]
fn a_rename_of_a_key_not_copied_or_onto_a_copied_one_is_refused_naming_it() {
    let source = configmap(&[("a", "1"), ("b", "2")], &[]);
    let mut m = mirror(SourceKind::ConfigMap);
    rename(&mut m, &[("gone", "x")]);
    let refused = refusal(&m, &source);
    assert_eq!(refused.reason, Reason::SourceKeyMissing);
    assert_mentions(
        &refused.message,
        &["spec.source.rename renames gone", "src/app"],
    );
    keys(&mut m, &["a"]);
    rename(&mut m, &[("b", "x")]);
    let refused = refusal(&m, &source);
    assert_mentions(
        &refused.message,
        &["renames b", "spec.source.keys of ConfigMap src/app"],
    );
    keys(&mut m, &[]);
    rename(&mut m, &[("a", "b")]);
    let refused = refusal(&m, &source);
    assert_eq!(refused.reason, Reason::RenameCollides);
    assert_mentions(&refused.message, &["gives b to two keys"]);
    rename(&mut m, &[("a", "b"), ("b", "a")]);
    assert!(DesiredCopy::of(&m, &source).is_ok(), "a swap is two names");
}

#[test]
fn a_rename_that_takes_a_key_its_type_requires_is_refused() {
    let source = secret(
        "kubernetes.io/tls",
        &[("tls.crt", "Qw=="), ("tls.key", "Sw==")],
    );
    let mut m = mirror(SourceKind::Secret);
    rename(&mut m, &[("tls.crt", "ca.crt")]);
    let refused = refusal(&m, &source);
    assert_eq!(refused.reason, Reason::RequiredKeyNotListed);
    assert_mentions(
        &refused.message,
        &["spec.source.rename", "leaves out tls.crt"],
    );
}
