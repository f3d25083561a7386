//! What skiff sends for a copy: the object it creates, and the patch that brings an existing
//! copy back to what its Mirror wants.
//!
//! An update is a strategic merge patch, not a PUT of a whole object: the copy cache holds no
//! copy's metadata, and a PUT would drop the labels, annotations, finalizers and owner
//! references others put on the copy. The patch sets skiff's own labels and annotations,
//! removes those the copy's record lists that the Mirror no longer sets (see
//! [`super::managed`]), and is conditional on the resourceVersion the cache saw; `data` (and
//! `binaryData`) are replaced whole by members every update shares (see
//! [`super::copy_body::update_body`]). A kit kind's fields (`spec`, a RoleBinding's `subjects` and
//! `roleRef`) are replaced whole the same way; a RoleBinding whose `roleRef` must change is
//! replaced instead (the server refuses the patch, see `apply/replace.rs`).

use super::copy::{Owner, SOURCE_HASH_ANNOTATION, labelled_for};
use super::desired::DesiredCopy;
use super::managed::{Record, record_annotations};
use crate::kind::Shape;
use crate::kube::api::ObjectMeta;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

#[cfg(test)]
/// The copy of `desired` for `owner`, named `name` in `namespace`, as an object (a create sends
/// it as [`super::copy_body`] encodes it).
pub fn new_copy(
    owner: &Owner,
    namespace: &str,
    name: &str,
    desired: &DesiredCopy,
) -> crate::kube::api::Object {
    let mut object = crate::kube::api::Object {
        metadata: new_copy_meta(owner, namespace, name, desired),
        ..crate::kube::api::Object::default()
    };
    for (field, value) in desired.payload().held() {
        object.set_field(field.name, value.clone());
    }
    object
}

/// The metadata of the copy of `desired` for `owner`, named `name` in `namespace`.
pub fn new_copy_meta(
    owner: &Owner,
    namespace: &str,
    name: &str,
    desired: &DesiredCopy,
) -> ObjectMeta {
    let mut meta = labelled_for(owner, namespace, name);
    for (key, value) in &desired.labels {
        meta.labels
            .entry(key.clone())
            .or_insert_with(|| value.clone());
    }
    meta.annotations = desired.annotations.clone();
    let record = record_annotations(&desired.labels, &desired.annotations);
    for (key, value) in record {
        if let Some(value) = value {
            meta.annotations.insert(key.to_owned(), value);
        }
    }
    meta.annotations
        .insert(SOURCE_HASH_ANNOTATION.to_owned(), desired.hash.hex());
    meta
}

/// The strategic merge patch that makes a copy at `resource_version`, whose record is
/// `record`, what `desired` wants for `owner`, but for its maps ([`Payload::maps`]), which
/// [`super::copy_body::update_body`] adds.
pub fn update_patch(
    owner: &Owner,
    desired: &DesiredCopy,
    record: Option<&Record>,
    resource_version: &str,
) -> Value {
    let mut labels = set_and_remove(&desired.labels, record.into_iter().flat_map(Record::labels));
    // skiff's own labels, last so that nothing overrides them.
    let own = labelled_for(owner, "", "").labels;
    labels.extend(own.into_iter().map(|(k, v)| (k, Value::String(v))));
    let mut annotations = set_and_remove(
        &desired.annotations,
        record.into_iter().flat_map(Record::annotations),
    );
    for (key, value) in record_annotations(&desired.labels, &desired.annotations) {
        annotations.insert(key.to_owned(), value.map_or(Value::Null, Value::String));
    }
    annotations.insert(SOURCE_HASH_ANNOTATION.to_owned(), desired.hash.hex().into());
    let mut patch = json!({"metadata": {
        "resourceVersion": resource_version,
        "labels": labels,
        "annotations": annotations,
    }});
    for (field, value) in content_patch(desired) {
        patch[field] = value;
    }
    patch
}

/// What an update sets of the content, but for its maps of keys (see
/// [`super::copy_body::update_body`]): each field as its shape says.
fn content_patch(desired: &DesiredCopy) -> Vec<(&'static str, Value)> {
    let payload = desired.payload();
    let row = payload.row().content.iter();
    row.filter_map(|field| {
        let value = match (&field.shape, payload.field(field.name)) {
            (Shape::Keys, _) => return None,
            // A fixed text (a Secret's type) that differs makes the server refuse the patch,
            // and skiff replaces the copy instead (see `apply/replace.rs`).
            (Shape::Text { .. }, _) => payload.text(field.name).map_or(Value::Null, Value::from),
            (Shape::Seal, held) => held.cloned().unwrap_or(Value::Null),
            // A field the source leaves out (a ServiceAccount without
            // `automountServiceAccountToken`) is removed from the copy.
            (Shape::Value, held) => held.map_or(Value::Null, replace_value),
        };
        Some((field.name, value))
    })
    .collect()
}

/// A field the patch sets whole: a map replaced (`$patch: replace`), so fields the copy
/// holds that the source does not (a hand edit) go; any other value (a RoleBinding's
/// `subjects`, a list without a merge key) the patch replaces anyway.
fn replace_value(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut map = map.clone();
            map.insert("$patch".into(), "replace".into());
            Value::Object(map)
        }
        other => other.clone(),
    }
}

/// `wanted`, plus a removal (`null`) for each previously recorded key no longer wanted.
fn set_and_remove<'a>(
    wanted: &BTreeMap<String, String>,
    recorded: impl Iterator<Item = &'a str>,
) -> Map<String, Value> {
    let mut map = Map::new();
    for key in recorded.filter(|key| !wanted.contains_key(*key)) {
        map.insert(key.to_owned(), Value::Null);
    }
    for (key, value) in wanted {
        map.insert(key.clone(), value.clone().into());
    }
    map
}

#[cfg(test)]
mod tests;
