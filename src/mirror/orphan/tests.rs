use super::*;
use crate::mirror::fixtures::{map, mirror_of};
use crate::mirror::render::new_copy_meta;
use crate::mirror::types::{SourceKind, TargetSpec};

/// `meta` after the merge patch `patch` (RFC 7386, as the server applies it to metadata).
fn patched(meta: &ObjectMeta, patch: &Value) -> ObjectMeta {
    fn merge(target: &mut Value, patch: &Value) {
        let (Value::Object(target), Value::Object(patch)) = (target, patch) else {
            return;
        };
        for (key, value) in patch {
            match value {
                Value::Null => drop(target.remove(key)),
                Value::Object(_) => merge(target.entry(key).or_insert(json!({})), value),
                _ => drop(target.insert(key.clone(), value.clone())),
            }
        }
    }
    let mut object = json!({"metadata": meta});
    merge(&mut object, patch);
    serde_json::from_value(object["metadata"].clone()).expect("metadata")
}

#[test]
fn orphaning_takes_skiffs_marks_and_keeps_what_the_mirror_set_for_workloads() {
    let mut mirror = mirror_of("m", SourceKind::ConfigMap);
    mirror.spec.target = Some(TargetSpec {
        metadata: ObjectMeta {
            labels: map(&[("argocd.argoproj.io/secret-type", "repository")]),
            annotations: map(&[("reloader.stakater.com/match", "true")]),
            ..ObjectMeta::default()
        },
        kind: None,
    });
    let source =
        crate::mirror::fixtures::source(SourceKind::ConfigMap, &json!({"data": {"a": "1"}}));
    let desired = crate::mirror::desired::DesiredCopy::of(&mirror, &source).expect("desired");
    let mut meta = new_copy_meta(&Owner::of(&mirror), "team-a", "app", &desired);
    meta.labels.insert("theirs".into(), "x".into());
    meta.annotations
        .insert(ADOPT_ANNOTATION.into(), "src/m".into());
    meta.resource_version = Some("41".into());
    let orphaned = patched(&meta, &orphaning_patch("41"));
    assert_eq!(
        orphaned.labels,
        map(&[
            ("argocd.argoproj.io/secret-type", "repository"),
            ("theirs", "x")
        ])
    );
    assert_eq!(
        orphaned.annotations,
        map(&[("reloader.stakater.com/match", "true")])
    );
    assert_eq!(crate::mirror::copy::owner_of(&orphaned), None);
    assert_eq!(orphaning_patch("41")["metadata"]["resourceVersion"], "41");
}

#[test]
fn copies_are_orphaned_only_when_asked_and_for_offers_only_when_the_admin_allows() {
    let mut mirror = mirror_of("m", SourceKind::ConfigMap);
    assert_eq!(policy(&mirror, false, true), DeletionPolicy::Delete);
    mirror.spec.deletion_policy = Some(DeletionPolicy::Orphan);
    assert_eq!(policy(&mirror, false, false), DeletionPolicy::Orphan);
    assert_eq!(policy(&mirror, true, false), DeletionPolicy::Delete);
    assert_eq!(policy(&mirror, true, true), DeletionPolicy::Orphan);
}

#[test]
fn a_mirrors_copies_are_listed_by_its_labels() {
    let owner = Owner {
        namespace: "src".into(),
        name: "m".into(),
    };
    assert_eq!(
        owner_selector(&owner),
        "app.kubernetes.io/managed-by=skiff,skiff.dev/mirror-namespace=src,skiff.dev/mirror-name=m"
    );
}
