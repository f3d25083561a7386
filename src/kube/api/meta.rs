//! Object metadata and the envelopes every kind shares: lists, watch events, `Status`.

use super::field_manager::FieldManager;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Decoded by hand (`meta_decode.rs`): `managedFields` is read for one name and never built,
/// and only the rare other unknown fields land in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owner_references: Vec<OwnerReference>,
    /// Every other field skiff does not read (generateName, ...), kept so a PUT preserves it.
    /// Not `managedFields`: it is most of a real object's metadata, skiff never reads it, and
    /// the API server keeps an object's managedFields when an update omits them.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// The writer of the latest change skiff did not make, from `managedFields` (never sent).
    #[serde(skip)]
    pub other_manager: Option<FieldManager>,
}

impl ObjectMeta {
    /// Metadata naming an object, for creating it.
    pub fn named(namespace: Option<&str>, name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: namespace.map(str::to_owned),
            ..ObjectMeta::default()
        }
    }

    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }

    pub fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or_default()
    }

    pub fn resource_version(&self) -> &str {
        self.resource_version.as_deref().unwrap_or_default()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OwnerReference {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListMeta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
}

/// One page of a LIST.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectList<T> {
    #[serde(default)]
    pub metadata: ListMeta,
    #[serde(default = "Vec::new")]
    pub items: Vec<T>,
}

/// One line of a watch stream: `{"type": "ADDED", "object": {...}}`.
///
/// `object` stays raw JSON, borrowed from the line, because an `ERROR` event carries a
/// `Status` and a `BOOKMARK` only metadata: the watch stream decodes it per type, straight
/// into the typed object, without building a generic JSON tree first.
#[derive(Debug, Deserialize)]
pub struct WatchFrame<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    #[serde(borrow)]
    pub object: &'a RawValue,
}

/// The API server's error (and sometimes success) envelope, `kind: Status`. skiff only reads it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Status {
    pub message: Option<String>,
    pub reason: Option<String>,
    pub code: Option<u16>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_metadata_fields_survive_a_round_trip() {
        let json = r#"{"name":"a","resourceVersion":"7","generateName":"a-","selfLink":{"x":1}}"#;
        let meta: ObjectMeta = serde_json::from_str(json).expect("valid metadata");
        assert_eq!(meta.resource_version(), "7");
        let back = serde_json::to_value(&meta).expect("serializable");
        assert_eq!(back["generateName"], "a-");
        assert_eq!(back["selfLink"]["x"], 1);
    }

    #[test]
    fn list_continue_token_uses_the_api_field_name() {
        let list: ObjectList<Value> = serde_json::from_str(
            r#"{"metadata":{"continue":"abc","resourceVersion":"9"},"items":[]}"#,
        )
        .expect("valid list");
        assert_eq!(list.metadata.continue_token.as_deref(), Some("abc"));
    }
}
