//! Decoding `ObjectMeta` field by field, so what skiff never reads costs nothing to skip.
//!
//! A derived decoder with a `#[serde(flatten)]` map buffers the whole metadata as generic
//! content and turns every unknown field into a `serde_json::Value` tree. On a real cluster
//! the largest unknown field is `managedFields` (most of an object's metadata, for every object
//! a watch delivers), so it is read here for one name only (see `field_manager.rs`), its
//! entries' `fieldsV1` skipped without being built; the few other unknown fields
//! (e.g. `generateName`) are kept in `extra` so a PUT of the object preserves them.

use super::field_manager::LatestOther;
use super::meta::{ObjectMeta, OwnerReference};
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum Field {
    Name,
    Namespace,
    Uid,
    ResourceVersion,
    Generation,
    CreationTimestamp,
    DeletionTimestamp,
    Labels,
    Annotations,
    Finalizers,
    OwnerReferences,
    ManagedFields,
    Other(String),
}

impl<'de> Deserialize<'de> for ObjectMeta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ObjectMeta, D::Error> {
        deserializer.deserialize_map(MetaVisitor)
    }
}

struct MetaVisitor;

impl<'de> Visitor<'de> for MetaVisitor {
    type Value = ObjectMeta;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("object metadata (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ObjectMeta, A::Error> {
        let mut meta = ObjectMeta::default();
        while let Some(field) = map.next_key::<Field>()? {
            read_field(&mut meta, field, &mut map)?;
        }
        Ok(meta)
    }
}

/// Reads the value of `field` into `meta`. `null` reads as absent, as the derived decoder
/// with `default` did for the optional fields.
fn read_field<'de, A: MapAccess<'de>>(
    meta: &mut ObjectMeta,
    field: Field,
    map: &mut A,
) -> Result<(), A::Error> {
    match field {
        Field::Name => meta.name = map.next_value()?,
        Field::Namespace => meta.namespace = map.next_value()?,
        Field::Uid => meta.uid = map.next_value()?,
        Field::ResourceVersion => meta.resource_version = map.next_value()?,
        Field::Generation => meta.generation = map.next_value()?,
        Field::CreationTimestamp => meta.creation_timestamp = map.next_value()?,
        Field::DeletionTimestamp => meta.deletion_timestamp = map.next_value()?,
        Field::Labels => meta.labels = or_empty::<BTreeMap<_, _>, A>(map)?,
        Field::Annotations => meta.annotations = or_empty::<BTreeMap<_, _>, A>(map)?,
        Field::Finalizers => meta.finalizers = or_empty::<Vec<_>, A>(map)?,
        Field::OwnerReferences => {
            meta.owner_references = or_empty::<Vec<OwnerReference>, A>(map)?;
        }
        Field::ManagedFields => meta.other_manager = map.next_value::<LatestOther>()?.0,
        Field::Other(name) => {
            let value: Value = map.next_value()?;
            meta.extra.insert(name, value);
        }
    }
    Ok(())
}

fn or_empty<'de, T: Deserialize<'de> + Default, A: MapAccess<'de>>(
    map: &mut A,
) -> Result<T, A::Error> {
    Ok(map.next_value::<Option<T>>()?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Metadata as a real kube-apiserver sends it: managedFields is most of it.
    const REAL: &str = r#"{
        "name": "team-a",
        "uid": "7c1a",
        "resourceVersion": "42",
        "creationTimestamp": "2026-11-30T00:00:00Z",
        "labels": {"kubernetes.io/metadata.name": "team-a"},
        "managedFields": [{"manager": "kubectl-create", "operation": "Update",
            "apiVersion": "v1", "time": "2026-11-30T00:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}}}],
        "generateName": "team-"
    }"#;

    #[test]
    fn managed_fields_are_read_for_one_name_and_other_unknown_fields_kept() {
        let meta: ObjectMeta = serde_json::from_str(REAL).expect("valid metadata");
        let manager = meta.other_manager.map(|m| m.name().to_string());
        assert_eq!(manager.as_deref(), Some("kubectl-create"));
        assert_eq!(meta.name(), "team-a");
        assert_eq!(meta.resource_version(), "42");
        assert_eq!(meta.labels["kubernetes.io/metadata.name"], "team-a");
        assert!(
            !meta.extra.contains_key("managedFields"),
            "{:?}",
            meta.extra
        );
        assert_eq!(meta.extra.len(), 1, "{:?}", meta.extra);
        let back = serde_json::to_value(&meta).expect("serializable");
        assert_eq!(back["generateName"], "team-");
        assert!(back.get("managedFields").is_none(), "{back}");
    }

    #[test]
    fn null_collections_read_as_empty() {
        let meta: ObjectMeta =
            serde_json::from_str(r#"{"name":"a","labels":null,"finalizers":null,"uid":null}"#)
                .expect("valid metadata");
        assert!(meta.labels.is_empty() && meta.finalizers.is_empty());
        assert_eq!(meta.uid, None);
    }

    #[test]
    fn a_wrongly_typed_field_is_an_error_naming_it() {
        let err = serde_json::from_str::<ObjectMeta>(r#"{"labels":["a"]}"#)
            .expect_err("labels must be a map");
        assert!(err.to_string().contains("map"), "{err}");
        assert!(serde_json::from_str::<ObjectMeta>("[]").is_err());
    }
}
