use super::*;
use serde_json::json;

fn of(kind: SourceKind, object: Value) -> Payload {
    let object: Object = serde_json::from_value(object).expect("an object");
    Payload::of(kind.row(), &object)
}

fn cm(data: Value) -> Payload {
    of(SourceKind::ConfigMap, json!({"metadata": {}, "data": data}))
}

#[test]
fn hash_changes_with_content_and_not_with_metadata() {
    let named = of(
        SourceKind::ConfigMap,
        json!({"metadata": {"name": "other"}, "data": {"k": "v"}}),
    );
    assert_eq!(cm(json!({"k": "v"})).hash(), named.hash());
    assert_ne!(cm(json!({"k": "v"})).hash(), cm(json!({"k": "w"})).hash());
}

#[test]
fn a_mutable_configmap_hashes_as_it_always_has() {
    let payload = cm(json!({"ca.crt": "PEM"}));
    let canonical = r#"{"kind":"ConfigMap","data":{"ca.crt":"PEM"},"binaryData":{}}"#;
    assert_eq!(payload.hash(), Digest::of(canonical.as_bytes()));
    assert_eq!(payload.hash().hex().len(), 64);
    assert_eq!(payload.hash_with::<()>(None), payload.hash());
}

#[test]
fn immutability_and_managed_metadata_change_the_hash() {
    let mutable = cm(json!({"k": "v"}));
    let immutable = of(
        SourceKind::ConfigMap,
        json!({"metadata": {}, "data": {"k": "v"}, "immutable": true}),
    );
    assert!(immutable.immutable() && !mutable.immutable());
    assert_ne!(mutable.hash(), immutable.hash());
    let labels = std::collections::BTreeMap::from([("team", "a")]);
    assert_ne!(mutable.hash_with(Some(&labels)), mutable.hash());
}

#[test]
fn a_secret_and_a_configmap_with_equal_data_hash_differently() {
    let secret = of(
        SourceKind::Secret,
        json!({"metadata": {}, "data": {"k": "dg=="}}),
    );
    assert_ne!(secret.hash(), cm(json!({"k": "dg=="})).hash());
    assert_eq!(secret.text("type"), Some("Opaque"));
    assert_eq!(cm(json!({})).text("type"), None);
}

#[test]
fn only_keeps_the_listed_keys_from_every_map() {
    let payload = of(
        SourceKind::ConfigMap,
        json!({"metadata": {}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "Aw=="}}),
    );
    let picked = payload.only(&["b".into(), "c".into(), "absent".into()]);
    assert!(picked.has_key("b") && picked.has_key("c"));
    assert!(!picked.has_key("a") && !picked.has_key("absent"));
    assert_eq!(payload.only(&["a".into(), "b".into(), "c".into()]), payload);
    assert_eq!(HeldMaps::of(&payload.only(&["a".into()])), HeldMaps(0b01));
}

#[test]
fn null_and_empty_fields_are_absent() {
    let explicit = of(
        SourceKind::ConfigMap,
        json!({"metadata": {}, "data": {}, "binaryData": null, "immutable": false}),
    );
    assert_eq!(explicit, cm(json!(null)));
    assert_eq!(explicit.held().count(), 0);
    let quota = of(
        SourceKind::ResourceQuota,
        json!({"metadata": {}, "spec": null}),
    );
    assert_eq!(quota.field("spec"), None);
}

#[test]
fn renamed_keys_move_in_every_map_and_two_keys_under_one_name_are_named() {
    let both = of(
        SourceKind::ConfigMap,
        json!({"metadata": {}, "data": {"tls.crt": "C", "a": "1"}, "binaryData": {"b": "AA=="}}),
    );
    let renamed = both
        .renamed(|k| (k == "tls.crt").then_some("ca.crt"))
        .expect("no collision");
    assert_eq!(
        renamed.field("data"),
        Some(&json!({"ca.crt": "C", "a": "1"}))
    );
    assert_eq!(renamed.field("binaryData"), Some(&json!({"b": "AA=="})));
    assert_ne!(renamed.hash(), both.hash());
    let twice = both
        .renamed(|k| (k == "a").then_some("b"))
        .expect_err("b twice");
    assert_eq!(twice.into_iter().collect::<Vec<_>>(), ["b"]);
}

#[test]
fn a_projections_payload_holds_its_one_field() {
    let mut data = Map::new();
    data.insert("ca.crt".into(), "PEM".into());
    let payload = Payload::keys_of(SourceKind::ConfigMap.row(), "data", data);
    assert_eq!(
        payload,
        cm(json!({"ca.crt": "PEM"})),
        "as a ConfigMap holding it"
    );
    let empty = Payload::keys_of(SourceKind::ConfigMap.row(), "data", Map::new());
    assert_eq!(empty, cm(json!({})));
}
