use super::*;
use crate::kube::api::{ConfigMap, Secret};
use crate::mirror::fixtures::{self, map, mirror_of};
use crate::mirror::render::new_copy;
use crate::mirror::types::{Mirror, SourceKind};
use std::collections::BTreeMap;

fn me() -> Owner {
    Owner {
        namespace: "src".into(),
        name: "ca".into(),
    }
}

fn mirror(kind: SourceKind) -> Mirror {
    mirror_of("ca", kind)
}

fn data(value: &str) -> BTreeMap<String, String> {
    map(&[("k", value)])
}

fn configmap(value: &str, immutable: bool) -> ConfigMap {
    ConfigMap {
        data: data(value),
        immutable: immutable.then_some(true),
        ..ConfigMap::default()
    }
}

fn desired_of(source: &ConfigMap) -> DesiredCopy {
    let content = fixtures::source(SourceKind::ConfigMap, source);
    DesiredCopy::of(&mirror(SourceKind::ConfigMap), &content).expect("desired")
}

fn my_copy(source: &ConfigMap) -> ConfigMap {
    let copy = new_copy(&me(), "team-a", "app", &desired_of(source));
    serde_json::from_value(serde_json::to_value(copy).expect("encodes")).expect("a ConfigMap")
}

fn adopt(cm: &mut ConfigMap, value: &str) {
    cm.metadata
        .annotations
        .insert(ADOPT_ANNOTATION.into(), value.into());
}

#[test]
fn only_an_unmanaged_object_handed_to_this_mirror_is_adoptable() {
    let mut theirs = configmap("v", false);
    assert_eq!(
        fixtures::existing(SourceKind::ConfigMap, &theirs).claim(&me()),
        Claim::NotMine
    );
    adopt(&mut theirs, "src/ca");
    assert_eq!(
        fixtures::existing(SourceKind::ConfigMap, &theirs).claim(&me()),
        Claim::Adoptable
    );
    for wrong in ["src/other", "ca", "src/ca/x", "/ca", ""] {
        adopt(&mut theirs, wrong);
        assert_eq!(
            fixtures::existing(SourceKind::ConfigMap, &theirs).claim(&me()),
            Claim::NotMine,
            "{wrong:?}"
        );
    }
    let mut other_mirrors = my_copy(&configmap("v", false));
    other_mirrors
        .metadata
        .labels
        .insert("skiff.dev/mirror-name".into(), "other".into());
    adopt(&mut other_mirrors, "src/ca");
    let claim = fixtures::existing(SourceKind::ConfigMap, &other_mirrors).claim(&me());
    assert_eq!(
        claim,
        Claim::NotMine,
        "another Mirror's copy is never adopted"
    );
    let mine = fixtures::existing(SourceKind::ConfigMap, &my_copy(&configmap("v", false)));
    assert_eq!(mine.claim(&me()), Claim::Mine);
}

#[test]
fn an_immutable_copy_is_replaced_only_when_its_data_must_change() {
    let source = configmap("v", true);
    let copy = fixtures::existing(SourceKind::ConfigMap, &my_copy(&source));
    assert_eq!(copy.replacement_reason(&desired_of(&source)), None);
    let changed = copy.replacement_reason(&desired_of(&configmap("w", true)));
    assert!(changed.is_some_and(|r| r.contains("immutable")));
    let mutable = copy.replacement_reason(&desired_of(&configmap("v", false)));
    assert!(mutable.is_some_and(|r| r.contains("no longer")));
    let mutable_copy = fixtures::existing(SourceKind::ConfigMap, &my_copy(&configmap("v", false)));
    assert_eq!(mutable_copy.replacement_reason(&desired_of(&source)), None);
}

#[test]
fn a_secret_of_another_type_is_replaced() {
    let source = Secret {
        type_: Some("kubernetes.io/tls".into()),
        data: [
            ("tls.crt".into(), "Qw==".into()),
            ("tls.key".into(), "Sw==".into()),
        ]
        .into(),
        ..Secret::default()
    };
    let content = fixtures::source(SourceKind::Secret, &source);
    let desired = DesiredCopy::of(&mirror(SourceKind::Secret), &content).expect("desired");
    let opaque = Secret {
        data: data("v"),
        ..Secret::default()
    };
    let reason = fixtures::existing(SourceKind::Secret, &opaque).replacement_reason(&desired);
    assert!(
        reason.is_some_and(|r| r.contains("Opaque") && r.contains("kubernetes.io/tls")),
        "the type as the server stores it: Opaque when none was given"
    );
    assert_eq!(
        fixtures::existing(SourceKind::Secret, &source).replacement_reason(&desired),
        None
    );
}
