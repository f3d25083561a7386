//! What a copy is: the payload taken from the source, its hash, and the labels that mark it as
//! skiff's, for one Mirror.
//!
//! The copy cache keeps a [`CopyInfo`] per object, never the data: the hash of the content
//! the copy actually holds is enough to tell whether it must be rewritten (a hand edit changes
//! it; the `source-hash` annotation would not).

use super::types::{Mirror, SourceKind};
use crate::kube::api::{ConfigMap, ObjectMeta, Secret};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Arc;

pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY_VALUE: &str = "skiff";
pub const MIRROR_NAMESPACE_LABEL: &str = "skiff.dev/mirror-namespace";
pub const MIRROR_NAME_LABEL: &str = "skiff.dev/mirror-name";
pub const SOURCE_HASH_ANNOTATION: &str = "skiff.dev/source-hash";

/// The label selector that finds every copy skiff manages (the copy watch uses it).
pub fn managed_selector() -> String {
    format!("{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}")
}

/// The content a copy carries. Field order is the hash's canonical order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind")]
pub enum Payload {
    ConfigMap {
        data: BTreeMap<String, String>,
        #[serde(rename = "binaryData")]
        binary_data: BTreeMap<String, String>,
    },
    Secret {
        #[serde(rename = "type")]
        type_: Option<String>,
        data: BTreeMap<String, String>,
    },
}

impl Payload {
    pub fn of_configmap(cm: &ConfigMap) -> Payload {
        Payload::ConfigMap {
            data: cm.data.clone(),
            binary_data: cm.binary_data.clone(),
        }
    }

    pub fn of_secret(secret: &Secret) -> Payload {
        Payload::Secret {
            type_: secret.type_.clone(),
            data: secret.data.clone(),
        }
    }

    pub fn kind(&self) -> SourceKind {
        match self {
            Payload::ConfigMap { .. } => SourceKind::ConfigMap,
            Payload::Secret { .. } => SourceKind::Secret,
        }
    }

    /// Hex sha256 of the canonical JSON of the payload.
    pub fn hash(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        let digest = Sha256::digest(&json);
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A source's payload with its hash, made once when the source enters the cache: every
/// reconcile of every Mirror reading it shares this one (through an `Arc`), unhashed again.
#[derive(Debug, PartialEq, Eq)]
pub struct SourceContent {
    pub payload: Payload,
    pub hash: String,
}

impl SourceContent {
    pub fn of_configmap(cm: &ConfigMap) -> Arc<SourceContent> {
        SourceContent::new(Payload::of_configmap(cm))
    }

    pub fn of_secret(secret: &Secret) -> Arc<SourceContent> {
        SourceContent::new(Payload::of_secret(secret))
    }

    fn new(payload: Payload) -> Arc<SourceContent> {
        let hash = payload.hash();
        Arc::new(SourceContent { payload, hash })
    }
}

/// Who a copy belongs to, read from its labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner {
    pub namespace: String,
    pub name: String,
}

impl Owner {
    pub fn of(mirror: &Mirror) -> Owner {
        Owner {
            namespace: mirror.metadata.namespace().to_owned(),
            name: mirror.metadata.name().to_owned(),
        }
    }
}

/// What the cache keeps of a copy: enough to decide, nothing of the data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyInfo {
    pub kind: SourceKind,
    pub namespace: String,
    pub name: String,
    pub owner: Option<Owner>,
    pub resource_version: String,
    /// Hash of the content the copy holds now.
    pub content_hash: String,
}

impl CopyInfo {
    pub fn of_configmap(cm: &ConfigMap) -> CopyInfo {
        CopyInfo::new(&cm.metadata, Payload::of_configmap(cm))
    }

    pub fn of_secret(secret: &Secret) -> CopyInfo {
        CopyInfo::new(&secret.metadata, Payload::of_secret(secret))
    }

    fn new(meta: &ObjectMeta, payload: Payload) -> CopyInfo {
        CopyInfo {
            kind: payload.kind(),
            namespace: meta.namespace().to_owned(),
            name: meta.name().to_owned(),
            owner: owner_of(meta),
            resource_version: meta.resource_version().to_owned(),
            content_hash: payload.hash(),
        }
    }
}

/// The Mirror named by a skiff-managed object's labels, if it is one.
pub fn owner_of(meta: &ObjectMeta) -> Option<Owner> {
    if meta.labels.get(MANAGED_BY_LABEL).map(String::as_str) != Some(MANAGED_BY_VALUE) {
        return None;
    }
    Some(Owner {
        namespace: meta.labels.get(MIRROR_NAMESPACE_LABEL)?.clone(),
        name: meta.labels.get(MIRROR_NAME_LABEL)?.clone(),
    })
}

/// Metadata of the copy of `mirror`'s source in `namespace`. `resource_version` makes an
/// update conditional on the version the cache saw.
pub fn copy_meta(
    mirror: &Mirror,
    namespace: &str,
    hash: &str,
    resource_version: Option<&str>,
) -> ObjectMeta {
    let mut meta = ObjectMeta::named(Some(namespace), mirror.spec.target_name());
    meta.labels = BTreeMap::from([
        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned()),
        (
            MIRROR_NAMESPACE_LABEL.to_owned(),
            mirror.metadata.namespace().to_owned(),
        ),
        (
            MIRROR_NAME_LABEL.to_owned(),
            mirror.metadata.name().to_owned(),
        ),
    ]);
    meta.annotations = BTreeMap::from([(SOURCE_HASH_ANNOTATION.to_owned(), hash.to_owned())]);
    meta.resource_version = resource_version.map(str::to_owned);
    meta
}

pub fn configmap_copy(meta: ObjectMeta, payload: &Payload) -> Option<ConfigMap> {
    match payload {
        Payload::ConfigMap { data, binary_data } => Some(ConfigMap {
            metadata: meta,
            data: data.clone(),
            binary_data: binary_data.clone(),
            ..ConfigMap::default()
        }),
        Payload::Secret { .. } => None,
    }
}

pub fn secret_copy(meta: ObjectMeta, payload: &Payload) -> Option<Secret> {
    match payload {
        Payload::Secret { type_, data } => Some(Secret {
            metadata: meta,
            type_: type_.clone(),
            data: data.clone(),
            ..Secret::default()
        }),
        Payload::ConfigMap { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::types::{MirrorSpec, SourceRef};

    fn mirror() -> Mirror {
        Mirror {
            metadata: ObjectMeta::named(Some("src"), "ca"),
            spec: MirrorSpec {
                source: SourceRef {
                    kind: SourceKind::ConfigMap,
                    name: "app-ca".into(),
                },
                ..MirrorSpec::default()
            },
            ..Mirror::default()
        }
    }

    fn cm(data: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            data: data
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..ConfigMap::default()
        }
    }

    #[test]
    fn hash_changes_with_content_and_not_with_metadata() {
        let a = cm(&[("k", "v")]);
        let mut b = a.clone();
        b.metadata.name = Some("other".into());
        assert_eq!(
            Payload::of_configmap(&a).hash(),
            Payload::of_configmap(&b).hash()
        );
        assert_ne!(
            Payload::of_configmap(&a).hash(),
            Payload::of_configmap(&cm(&[("k", "w")])).hash()
        );
        assert_eq!(Payload::of_configmap(&a).hash().len(), 64);
    }

    #[test]
    fn a_secret_and_a_configmap_with_equal_data_hash_differently() {
        let data: BTreeMap<_, _> = [("k".to_string(), "dg==".to_string())].into();
        let s = Secret {
            data: data.clone(),
            ..Secret::default()
        };
        let c = ConfigMap {
            data,
            ..ConfigMap::default()
        };
        assert_ne!(
            Payload::of_secret(&s).hash(),
            Payload::of_configmap(&c).hash()
        );
    }

    #[test]
    fn a_copy_is_labelled_for_its_mirror_and_read_back_as_owned() {
        let payload = Payload::of_configmap(&cm(&[("k", "v")]));
        let meta = copy_meta(&mirror(), "team-a", &payload.hash(), None);
        let copy = configmap_copy(meta, &payload).expect("configmap payload");
        assert_eq!(copy.metadata.name(), "app-ca");
        assert_eq!(copy.metadata.namespace(), "team-a");
        let info = CopyInfo::of_configmap(&copy);
        assert_eq!(info.owner, Some(Owner::of(&mirror())));
        assert_eq!(info.content_hash, payload.hash());
    }

    #[test]
    fn an_object_without_the_managed_by_label_has_no_owner() {
        let mut meta = copy_meta(&mirror(), "team-a", "h", None);
        meta.labels.remove(MANAGED_BY_LABEL);
        assert_eq!(owner_of(&meta), None);
    }

    #[test]
    fn a_secret_copy_keeps_its_type() {
        let s = Secret {
            type_: Some("kubernetes.io/tls".into()),
            ..Secret::default()
        };
        let payload = Payload::of_secret(&s);
        let copy = secret_copy(ObjectMeta::default(), &payload).expect("secret payload");
        assert_eq!(copy.type_.as_deref(), Some("kubernetes.io/tls"));
        assert!(configmap_copy(ObjectMeta::default(), &payload).is_none());
    }
}
