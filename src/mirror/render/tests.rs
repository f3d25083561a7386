use super::*;
use crate::kube::api::ObjectMeta;
use crate::kube::api::{ConfigMap, Object, Secret};
use crate::mirror::copy::{CopyInfo, owner_of};
use crate::mirror::copy_body::{map_members, update_body};
use crate::mirror::fixtures::{self, map};
use crate::mirror::types::{Mirror, SourceKind, TargetSpec};

fn owner() -> Owner {
    Owner {
        namespace: "src".into(),
        name: "ca".into(),
    }
}

fn mirror(labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> Mirror {
    let mut m = Mirror {
        metadata: ObjectMeta::named(Some("src"), "ca"),
        ..Mirror::default()
    };
    m.spec.source.kind = SourceKind::ConfigMap;
    m.spec.source.name = "app-ca".into();
    m.spec.target = Some(TargetSpec {
        metadata: ObjectMeta {
            labels: map(labels),
            annotations: map(annotations),
            ..ObjectMeta::default()
        },
        kind: None,
    });
    m
}

fn desired(m: &Mirror, source: &ConfigMap) -> DesiredCopy {
    DesiredCopy::of(m, &fixtures::source(SourceKind::ConfigMap, source)).expect("desired")
}

fn source(data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        data: map(data),
        ..ConfigMap::default()
    }
}

fn created(d: &DesiredCopy) -> ConfigMap {
    typed(&new_copy(&owner(), "team-a", "app-ca", d))
}

/// `object` as the typed object it encodes.
fn typed<T: serde::de::DeserializeOwned>(object: &Object) -> T {
    let json = serde_json::to_value(object).expect("encodes");
    serde_json::from_value(json).expect("decodes")
}

/// A strategic merge patch as the API server applies one to these maps: `null` removes a key,
/// `$patch: replace` replaces the map whole, anything else merges.
fn apply(target: &mut Value, patch: &Value) {
    let (Value::Object(target), Value::Object(patch)) = (target, patch) else {
        return;
    };
    if patch.get("$patch") == Some(&json!("replace")) {
        target.clear();
    }
    for (key, value) in patch.iter().filter(|(k, _)| *k != "$patch") {
        match value {
            Value::Null => drop(target.remove(key)),
            Value::Object(_) if target.get(key).is_some_and(Value::is_object) => {
                apply(target.get_mut(key).expect("present"), value)
            }
            // The API server drops a map replaced whole that the object lacks.
            Value::Object(map) if map.get("$patch") == Some(&json!("replace")) => {}
            Value::Object(_) => {
                let mut fresh = json!({});
                apply(&mut fresh, value);
                target.insert(key.clone(), fresh);
            }
            _ => drop(target.insert(key.clone(), value.clone())),
        }
    }
}

/// What an update sends: the patch and the maps every update shares, as one JSON value.
fn update_sent(d: &DesiredCopy, info: &CopyInfo, rv: &str) -> Value {
    let patch = update_patch(&owner(), d, info.record.as_ref(), rv);
    let maps = map_members(d.payload()).expect("maps");
    let body = update_body(&patch, &maps, info.held).expect("body");
    serde_json::from_slice(&body.to_vec()).expect("the body is JSON")
}

fn patched(copy: &ConfigMap, d: &DesiredCopy) -> ConfigMap {
    let sent = update_sent(d, &fixtures::copy_info(SourceKind::ConfigMap, copy), "7");
    let mut object = serde_json::to_value(copy).expect("serializable");
    apply(&mut object, &sent);
    serde_json::from_value(object).expect("a ConfigMap")
}

#[test]
fn a_new_copy_is_owned_and_hashes_as_its_mirror_wants() {
    for m in [mirror(&[], &[]), mirror(&[("team", "a")], &[("note", "n")])] {
        let d = desired(&m, &source(&[("k", "v")]));
        let copy = created(&d);
        assert_eq!(copy.metadata.name(), "app-ca");
        assert_eq!(owner_of(&copy.metadata), Some(owner()));
        assert_eq!(
            fixtures::copy_info(SourceKind::ConfigMap, &copy).content_hash,
            d.hash
        );
        assert_eq!(
            copy.metadata.annotations[SOURCE_HASH_ANNOTATION],
            d.hash.hex()
        );
    }
}

#[test]
fn a_plain_copy_carries_only_skiffs_own_metadata() {
    let copy = created(&desired(&mirror(&[], &[]), &source(&[("k", "v")])));
    assert_eq!(copy.metadata.labels.len(), 3);
    assert_eq!(copy.metadata.annotations.len(), 1, "{:?}", copy.metadata);
    assert_eq!(copy.immutable, None);
}

#[test]
fn a_patched_copy_hashes_as_wanted_and_keeps_what_others_set() {
    let old = desired(
        &mirror(&[("a", "1"), ("b", "2")], &[("x", "1")]),
        &source(&[("k", "v")]),
    );
    let mut copy = created(&old);
    copy.metadata.labels.insert("theirs".into(), "kept".into());
    copy.metadata
        .annotations
        .insert("their-note".into(), "kept".into());
    copy.data.insert("hand-added".into(), "gone".into());
    let new = desired(&mirror(&[("a", "3")], &[]), &source(&[("k", "w")]));
    let after = patched(&copy, &new);
    assert_eq!(
        fixtures::copy_info(SourceKind::ConfigMap, &after).content_hash,
        new.hash
    );
    assert_eq!(after.data, map(&[("k", "w")]));
    assert_eq!(after.metadata.labels["a"], "3");
    assert!(
        !after.metadata.labels.contains_key("b"),
        "b was skiff's and is no longer set"
    );
    assert!(!after.metadata.annotations.contains_key("x"));
    assert_eq!(after.metadata.labels["theirs"], "kept");
    assert_eq!(after.metadata.annotations["their-note"], "kept");
    assert_eq!(owner_of(&after.metadata), Some(owner()));
}

#[test]
fn an_unmanaged_object_is_patched_into_a_copy_without_losing_its_own_labels() {
    let mut theirs = source(&[("old", "data")]);
    theirs.metadata.labels = map(&[("app.kubernetes.io/instance", "argo-app")]);
    let d = desired(&mirror(&[], &[]), &source(&[("k", "v")]));
    let adopted = patched(&theirs, &d);
    assert_eq!(owner_of(&adopted.metadata), Some(owner()));
    assert_eq!(
        fixtures::copy_info(SourceKind::ConfigMap, &adopted).content_hash,
        d.hash
    );
    assert_eq!(
        adopted.metadata.labels["app.kubernetes.io/instance"],
        "argo-app"
    );
}

#[test]
fn an_immutable_source_makes_an_immutable_copy() {
    let mut immutable = source(&[("k", "v")]);
    immutable.immutable = Some(true);
    let d = desired(&mirror(&[], &[]), &immutable);
    assert_eq!(created(&d).immutable, Some(true));
    let patch = update_patch(&owner(), &d, None, "1");
    assert_eq!(patch["immutable"], true);
    assert_eq!(patch["metadata"]["resourceVersion"], "1");
}

#[test]
fn a_secret_patch_names_the_type_it_must_keep() {
    let secret = Secret {
        type_: Some("kubernetes.io/tls".into()),
        data: map(&[("tls.crt", "Qw=="), ("tls.key", "Sw==")]),
        ..Secret::default()
    };
    let mut m = mirror(&[], &[]);
    m.spec.source.kind = SourceKind::Secret;
    let d = DesiredCopy::of(&m, &fixtures::source(SourceKind::Secret, &secret)).expect("desired");
    let held = fixtures::copy_info(SourceKind::Secret, &secret);
    let patch = update_sent(&d, &held, "1");
    assert_eq!(patch["type"], "kubernetes.io/tls");
    assert_eq!(patch["data"]["$patch"], "replace");
    assert_eq!(patch["data"]["tls.key"], "Sw==");
    let created: Secret = typed(&new_copy(&owner(), "ns", "tls", &d));
    assert_eq!(created.type_, secret.type_);
}

#[test]
fn a_map_the_copy_lacks_is_set_plainly_and_one_it_holds_replaced_whole() {
    let mut with_binary = source(&[("k", "v")]);
    with_binary.binary_data.insert("bin".into(), "AAE=".into());
    let d = desired(&mirror(&[], &[]), &with_binary);
    let copy = created(&desired(
        &mirror(&[], &[]),
        &source(&[("k", "v"), ("old", "x")]),
    ));
    let sent = update_sent(&d, &fixtures::copy_info(SourceKind::ConfigMap, &copy), "8");
    assert_eq!(sent["binaryData"], json!({"bin": "AAE="}));
    assert_eq!(sent["data"], json!({"$patch": "replace", "k": "v"}));
    let plain = update_sent(
        &desired(&mirror(&[], &[]), &source(&[("k", "v")])),
        &fixtures::copy_info(SourceKind::ConfigMap, &copy),
        "8",
    );
    assert!(
        plain.get("binaryData").is_none(),
        "a map neither has is left out: {plain}"
    );
    let after = patched(&copy, &d);
    assert_eq!(after.binary_data, map(&[("bin", "AAE=")]));
    assert_eq!(after.data, map(&[("k", "v")]));
    assert_eq!(
        fixtures::copy_info(SourceKind::ConfigMap, &after).content_hash,
        d.hash
    );
    // Losing both maps: each replaced by nothing.
    let empty = desired(&mirror(&[], &[]), &source(&[]));
    let bare = patched(&after, &empty);
    assert!(bare.data.is_empty() && bare.binary_data.is_empty());
    assert_eq!(
        fixtures::copy_info(SourceKind::ConfigMap, &bare).content_hash,
        empty.hash
    );
}

mod kit {
    use super::*;
    use crate::mirror::fixtures::existing;

    fn policy(spec: Value) -> Value {
        json!({"metadata": {}, "spec": spec})
    }

    fn kit_mirror(kind: SourceKind) -> Mirror {
        let mut m = mirror(&[], &[]);
        m.spec.target = None;
        m.spec.source.kind = kind;
        m
    }

    #[test]
    fn a_copy_carries_the_user_set_fields_only_and_hashes_as_its_source() {
        let spec = json!({"podSelector": {}, "policyTypes": ["Ingress"]});
        let mut source = policy(spec.clone());
        source["metadata"]["uid"] = "u".into();
        source["status"] = json!({"conditions": []});
        let kind = SourceKind::NetworkPolicy;
        let d =
            DesiredCopy::of(&kit_mirror(kind), &fixtures::source(kind, &source)).expect("desired");
        let copy = new_copy(&owner(), "team-a", "deny", &d);
        assert_eq!(copy.field("spec"), Some(&spec));
        assert_eq!(copy.content.len(), 1, "the spec alone: {copy:?}");
        assert_eq!(copy.metadata.uid, None);
        // The server's answer: the same spec (already defaulted in the source), and metadata
        // of its own; the cache sees no drift.
        let mut stored = copy.clone();
        stored.metadata.uid = Some("v".into());
        stored.metadata.resource_version = Some("7".into());
        let info = CopyInfo::of(kind.row(), &stored);
        assert_eq!(info.content_hash, d.hash);
        assert_eq!(info.owner.as_deref(), Some(&owner()));
    }

    #[test]
    fn the_patch_replaces_each_field_whole_and_sends_nothing_else() {
        let spec = json!({"podSelector": {"matchLabels": {"a": "b"}}});
        let kind = SourceKind::NetworkPolicy;
        let d = DesiredCopy::of(&kit_mirror(kind), &fixtures::source(kind, &policy(spec)))
            .expect("desired");
        let patch = update_patch(&owner(), &d, None, "5");
        assert_eq!(patch["spec"]["$patch"], "replace");
        assert_eq!(patch["spec"]["podSelector"]["matchLabels"]["a"], "b");
        assert!(patch.get("immutable").is_none() && patch.get("data").is_none());
        assert_eq!(patch["metadata"]["resourceVersion"], "5");
        let mut held = json!({"podSelector": {}, "egress": [{}]});
        apply(&mut held, &patch["spec"]);
        assert_eq!(held, json!({"podSelector": {"matchLabels": {"a": "b"}}}));
    }

    #[test]
    fn a_role_binding_whose_role_ref_differs_is_replaced() {
        let binding = |role: &str| {
            json!({"metadata": {}, "subjects": [],
                "roleRef": {"kind": "ClusterRole", "name": role}})
        };
        let kind = SourceKind::RoleBinding;
        let d = DesiredCopy::of(&kit_mirror(kind), &fixtures::source(kind, &binding("edit")))
            .expect("desired");
        let held = existing(kind, &binding("view"));
        let reason = held.replacement_reason(&d).expect("replaced");
        assert!(
            reason.contains("roleRef") && reason.contains("view"),
            "{reason}"
        );
        let same = existing(kind, &binding("edit"));
        assert_eq!(same.replacement_reason(&d), None);
    }
}
