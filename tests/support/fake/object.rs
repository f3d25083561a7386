//! Server-side bookkeeping on stored objects: metadata fields, merge patches, generation rules
//! and RFC 3339 timestamps.

use serde_json::{Map, Value};

pub fn name_of(object: &Value) -> Option<&str> {
    object.pointer("/metadata/name").and_then(Value::as_str)
}

pub fn namespace_of(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|ns| !ns.is_empty())
}

pub fn resource_version_of(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty())
}

pub fn finalizers_empty(object: &Value) -> bool {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
}

pub fn is_deleting(object: &Value) -> bool {
    object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// The `metadata` map of an object, created when missing.
pub fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.is_object() {
        *object = Value::Object(Map::new());
    }
    let Value::Object(fields) = object else {
        unreachable!("object was just made a JSON object")
    };
    let metadata = fields
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    match metadata {
        Value::Object(map) => map,
        _ => unreachable!("metadata was just made a JSON object"),
    }
}

/// RFC 7386 JSON merge patch.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    merge(target, patch, false);
}

/// A strategic merge patch, as the API server applies one to the maps of built-in kinds
/// (labels, annotations, `data`): a merge patch, except that a map holding the directive
/// `$patch: replace` replaces its target whole, and, as kube-apiserver does, is dropped when
/// the target has no such map at all. List merge keys are not modelled.
pub fn strategic_merge_patch(target: &mut Value, patch: &Value) {
    merge(target, patch, true);
}

const DIRECTIVE: &str = "$patch";

fn merge(target: &mut Value, patch: &Value, strategic: bool) {
    let Value::Object(patch_fields) = patch else {
        *target = patch.clone();
        return;
    };
    let replace = strategic && patch_fields.get(DIRECTIVE) == Some(&Value::from("replace"));
    if replace || !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(target_fields) = target {
        for (key, value) in patch_fields {
            if strategic && key == DIRECTIVE {
                continue;
            }
            let replaces = value.get(DIRECTIVE) == Some(&Value::from("replace"));
            if value.is_null() {
                target_fields.remove(key);
            } else if strategic && replaces && !target_fields.contains_key(key) {
                continue;
            } else {
                let field = target_fields.entry(key.clone()).or_insert(Value::Null);
                merge(field, value, strategic);
            }
        }
    }
}

/// Everything but `metadata` and `status`: a change here bumps `metadata.generation`.
pub fn spec_part(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Value::Object(fields) = &mut copy {
        fields.remove("metadata");
        fields.remove("status");
    }
    copy
}

/// Now as RFC 3339 UTC with second precision, as metadata timestamps are written.
pub fn now_rfc3339() -> String {
    skiff::time::now_seconds()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_strategic_patch_replaces_a_map_marked_replace_and_merges_the_rest() {
        let mut target = json!({"data": {"a": "1", "b": "2"}, "labels": {"x": "1", "y": "2"}});
        let patch = json!({"data": {"$patch": "replace", "c": "3"}, "labels": {"y": null}});
        strategic_merge_patch(&mut target, &patch);
        assert_eq!(target, json!({"data": {"c": "3"}, "labels": {"x": "1"}}));
        let absent = json!({"binaryData": {"$patch": "replace", "b": "AA=="}});
        strategic_merge_patch(&mut target, &absent);
        assert_eq!(
            target,
            json!({"data": {"c": "3"}, "labels": {"x": "1"}}),
            "dropped"
        );
        let mut plain = json!({"data": {"a": "1"}});
        merge_patch(&mut plain, &json!({"data": {"$patch": "replace"}}));
        assert_eq!(plain, json!({"data": {"a": "1", "$patch": "replace"}}));
    }

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut target = json!({"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]});
        merge_patch(&mut target, &json!({"a": "z", "c": {"f": null}, "l": [3]}));
        assert_eq!(target, json!({"a": "z", "c": {"d": "e"}, "l": [3]}));
    }
}
