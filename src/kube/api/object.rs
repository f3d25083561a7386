//! An object of any kind skiff copies, held as its metadata and its top-level content fields
//! in plain JSON.
//!
//! One type for every kind: the watch, store and request code is compiled in once, and a kind
//! is addressed by its collection's path (its row in `crate::kind`), not by a Rust type.
//! `status` is never decoded (a ResourceQuota's `status.used` costs nothing), nor are
//! `apiVersion` and `kind` kept beyond what a write sends back.

use super::ObjectMeta;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// An object: its metadata and its content, each top-level field by its wire name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Object {
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub metadata: ObjectMeta,
    pub content: BTreeMap<String, Value>,
}

impl Object {
    /// The content field named as on the wire (`data`, `spec`, `roleRef`).
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.content.get(name)
    }

    pub fn set_field(&mut self, name: &str, value: Value) {
        self.content.insert(name.to_owned(), value);
    }
}

impl Serialize for Object {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if let Some(v) = &self.api_version {
            map.serialize_entry("apiVersion", v)?;
        }
        if let Some(k) = &self.kind {
            map.serialize_entry("kind", k)?;
        }
        map.serialize_entry("metadata", &self.metadata)?;
        for (field, value) in &self.content {
            map.serialize_entry(field, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Object, D::Error> {
        deserializer.deserialize_map(ObjectVisitor)
    }
}

struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = Object;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object, A::Error> {
        let mut object = Object::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "apiVersion" => object.api_version = map.next_value()?,
                "kind" => object.kind = map.next_value()?,
                "metadata" => object.metadata = map.next_value()?,
                "status" => drop(map.next_value::<IgnoredAny>()?),
                _ => drop(object.content.insert(key, map.next_value()?)),
            }
        }
        Ok(object)
    }
}

/// Watched and cached as one type, each watch naming its kind's collection by path
/// (`ApiSource::at`); requests on one object give their path too. So this `url_path` addresses
/// nothing.
impl super::Resource for Object {
    const API_VERSION: &'static str = "skiff.dev/addressed-by-path";
    const KIND: &'static str = "Object";
    const PLURAL: &'static str = "addressed-by-path";
    const NAMESPACED: bool = true;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn status_is_not_decoded_and_content_round_trips() {
        let json = r#"{"apiVersion":"v1","kind":"ResourceQuota",
            "metadata":{"name":"q","namespace":"a"},
            "spec":{"hard":{"pods":"10"}},"status":{"used":{"pods":"3"}}}"#;
        let q: Object = serde_json::from_str(json).expect("valid quota");
        assert_eq!(q.field("spec"), Some(&json!({"hard": {"pods": "10"}})));
        assert_eq!(q.field("status"), None);
        let back = serde_json::to_value(&q).expect("encodes");
        assert!(back.get("status").is_none());
        assert_eq!(back["metadata"]["name"], "q");
        assert_eq!(back["apiVersion"], "v1");
    }

    #[test]
    fn data_maps_and_flags_are_content_too() {
        let json = r#"{"metadata":{"name":"c"},"data":{"a":"1"},"immutable":true,"type":"x"}"#;
        let o: Object = serde_json::from_str(json).expect("valid");
        assert_eq!(o.field("data"), Some(&json!({"a": "1"})));
        assert_eq!(o.field("immutable"), Some(&json!(true)));
        assert_eq!(o.field("type"), Some(&json!("x")));
        assert!(serde_json::from_str::<Object>("[]").is_err());
    }
}
