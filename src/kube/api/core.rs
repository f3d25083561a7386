//! Core (`v1`) kinds: ConfigMap, Secret, Namespace, Event, and a Pod's metadata.

use super::ObjectMeta;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConfigMap {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub metadata: ObjectMeta,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
    /// Values are base64, as on the wire.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub binary_data: BTreeMap<String, String>,
    /// Once true, `data` and `binaryData` can no longer change (labels and annotations can).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub immutable: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Secret {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub metadata: ObjectMeta,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Values are base64, as on the wire; skiff copies them without decoding.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
    /// Once true, `data` can no longer change (labels and annotations can).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub immutable: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Namespace {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub metadata: ObjectMeta,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<NamespaceStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NamespaceStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

impl Namespace {
    pub fn is_terminating(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
            || self.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Terminating")
    }
}

/// `v1` Event (the core API, which every cluster serves and `kubectl describe` shows).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CoreEvent {
    pub metadata: ObjectMeta,
    pub involved_object: ObjectReference,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `Normal` or `Warning`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<EventSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reporting_component: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reporting_instance: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectReference {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EventSource {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
}

crate::impl_resource!(
    ConfigMap,
    "v1",
    "ConfigMap",
    "configmaps",
    namespaced = true
);
crate::impl_resource!(Secret, "v1", "Secret", "secrets", namespaced = true);
crate::impl_resource!(
    Namespace,
    "v1",
    "Namespace",
    "namespaces",
    namespaced = false
);
crate::impl_resource!(CoreEvent, "v1", "Event", "events", namespaced = true);

/// A Pod as far as skiff reads one: its metadata (its own Pod's deletion-cost annotation and
/// deletion), never its spec or status.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PodMeta {
    pub metadata: ObjectMeta,
}
crate::impl_resource!(PodMeta, "v1", "Pod", "pods", namespaced = true);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::collections::BTreeSet;

    /// A Namespace as kube-apiserver sends it to a watch or list.
    const REAL_NAMESPACE: &str = r#"{"kind":"Namespace","apiVersion":"v1",
        "metadata":{"name":"team-a","uid":"0b5c2a51","resourceVersion":"1042",
            "creationTimestamp":"2026-11-30T00:00:00Z",
            "labels":{"kubernetes.io/metadata.name":"team-a","mirror":"yes"},
            "managedFields":[{"manager":"kubectl-create","operation":"Update","apiVersion":"v1",
                "time":"2026-11-30T00:00:00Z","fieldsType":"FieldsV1",
                "fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:mirror":{}}}}}]},
        "spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}"#;

    /// A copy as kube-apiserver sends it to skiff's copy watch.
    const REAL_COPY: &str = r#"{"kind":"ConfigMap","apiVersion":"v1",
        "metadata":{"name":"app-ca","namespace":"team-a","uid":"6d1f","resourceVersion":"9001",
            "creationTimestamp":"2026-11-30T00:00:00Z",
            "labels":{"app.kubernetes.io/managed-by":"skiff","skiff.dev/mirror-name":"ca",
                "skiff.dev/mirror-namespace":"skiff-system"},
            "annotations":{"skiff.dev/source-hash":"9f2c"},
            "managedFields":[{"manager":"skiff","operation":"Update","apiVersion":"v1",
                "time":"2026-11-30T00:00:00Z","fieldsType":"FieldsV1",
                "fieldsV1":{"f:data":{".":{},"f:ca.crt":{}}}}]},
        "data":{"ca.crt":"pem"}}"#;

    /// The paths of every leaf and object key in `value` (`metadata.labels.x`), maps of
    /// data and labels collapsed to their own path.
    fn paths(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
        let collapsed = ["metadata.labels", "metadata.annotations", "data"];
        match value {
            Value::Object(map) if !collapsed.contains(&prefix) => {
                for (key, value) in map {
                    let path = if prefix.is_empty() {
                        key.clone()
                    } else {
                        format!("{prefix}.{key}")
                    };
                    paths(value, &path, out);
                }
            }
            _ => {
                out.insert(prefix.to_owned());
            }
        }
    }

    /// What a decoded object still holds: everything it would write back.
    fn kept<K: Serialize + serde::de::DeserializeOwned>(json: &str) -> BTreeSet<String> {
        let decoded: K = serde_json::from_str(json).expect("a real object decodes");
        let mut out = BTreeSet::new();
        paths(
            &serde_json::to_value(&decoded).expect("serializable"),
            "",
            &mut out,
        );
        out
    }

    fn set(paths: &[&str]) -> BTreeSet<String> {
        paths.iter().map(|p| (*p).to_owned()).collect()
    }

    #[test]
    fn a_decoded_namespace_or_copy_keeps_no_field_skiff_never_reads() {
        let meta = [
            "apiVersion",
            "kind",
            "metadata.creationTimestamp",
            "metadata.name",
            "metadata.resourceVersion",
            "metadata.uid",
        ];
        let mut namespace = set(&meta);
        namespace.extend(set(&["metadata.labels", "status.phase"]));
        assert_eq!(kept::<Namespace>(REAL_NAMESPACE), namespace);
        let mut copy = set(&meta);
        copy.extend(set(&[
            "metadata.namespace",
            "metadata.labels",
            "metadata.annotations",
            "data",
        ]));
        assert_eq!(kept::<ConfigMap>(REAL_COPY), copy);
    }
}
