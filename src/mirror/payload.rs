//! The content a copy carries (its data, and a Secret's type, and whether it is immutable; or a
//! kit kind's user-set fields), and the hash that tells whether a copy still holds what its
//! Mirror wants.
//!
//! The hash is taken over a canonical JSON form, the same on both sides: of what the Mirror
//! wants, and of what a copy in the cache holds. A copy without any label or annotation of its
//! own from skiff hashes exactly as skiff's copies always have, so an upgrade rewrites nothing.

use super::types::SourceKind;
use crate::kube::api::{ConfigMap, KitObject, Secret};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;
use std::fmt;

/// A sha256, kept as its 32 bytes (a copy cache entry holds one; hex only for the status).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Digest([u8; 32]);

impl Digest {
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(Sha256::digest(bytes).into())
    }

    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex()[..12])
    }
}

/// The content a copy carries. Field order is the hash's canonical order; `immutable` appears
/// only when true, so the hash of a mutable copy is what it always was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind")]
pub enum Payload {
    ConfigMap {
        data: BTreeMap<String, String>,
        #[serde(rename = "binaryData")]
        binary_data: BTreeMap<String, String>,
        #[serde(skip_serializing_if = "is_false")]
        immutable: bool,
    },
    Secret {
        #[serde(rename = "type")]
        type_: Option<String>,
        data: BTreeMap<String, String>,
        #[serde(skip_serializing_if = "is_false")]
        immutable: bool,
    },
    /// A kit kind's user-set fields (see [`super::kinds`]), as the server stores them: the
    /// source's fields are already defaulted, so a copy the server defaults again hashes the
    /// same, and no default looks like drift.
    Kit {
        of: SourceKind,
        #[serde(flatten)]
        fields: BTreeMap<String, Value>,
    },
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Payload {
    /// The maps an update replaces whole, by field: a ConfigMap's `data` and `binaryData`, a
    /// Secret's `data`; none of a kit kind (its fields are set as values).
    pub fn maps(&self) -> Vec<(&'static str, &BTreeMap<String, String>)> {
        match self {
            Payload::ConfigMap {
                data, binary_data, ..
            } => vec![("data", data), ("binaryData", binary_data)],
            Payload::Secret { data, .. } => vec![("data", data)],
            Payload::Kit { .. } => Vec::new(),
        }
    }

    pub fn of_configmap(cm: &ConfigMap) -> Payload {
        Payload::ConfigMap {
            data: cm.data.clone(),
            binary_data: cm.binary_data.clone(),
            immutable: cm.immutable == Some(true),
        }
    }

    pub fn of_secret(secret: &Secret) -> Payload {
        Payload::Secret {
            type_: secret.type_.clone(),
            data: secret.data.clone(),
            immutable: secret.immutable == Some(true),
        }
    }

    /// The `fields` of a kit object of kind `of` (absent ones are not part of it).
    pub fn of_kit(of: SourceKind, object: &KitObject, fields: &[&str]) -> Payload {
        let fields = fields
            .iter()
            .filter_map(|f| Some(((*f).to_owned(), object.field(f)?.clone())))
            .collect();
        Payload::Kit { of, fields }
    }

    pub fn kind(&self) -> SourceKind {
        match self {
            Payload::ConfigMap { .. } => SourceKind::ConfigMap,
            Payload::Secret { .. } => SourceKind::Secret,
            Payload::Kit { of, .. } => *of,
        }
    }

    pub fn immutable(&self) -> bool {
        match self {
            Payload::ConfigMap { immutable, .. } | Payload::Secret { immutable, .. } => *immutable,
            Payload::Kit { .. } => false,
        }
    }

    /// A kit payload's field named as on the wire (`spec`, `roleRef`).
    pub fn field(&self, name: &str) -> Option<&Value> {
        match self {
            Payload::Kit { fields, .. } => fields.get(name),
            Payload::ConfigMap { .. } | Payload::Secret { .. } => None,
        }
    }

    /// A Secret's type as the API server stores it (`Opaque` when none was given).
    pub fn secret_type(&self) -> Option<&str> {
        match self {
            Payload::Secret { type_, .. } => Some(type_.as_deref().unwrap_or(OPAQUE)),
            Payload::ConfigMap { .. } | Payload::Kit { .. } => None,
        }
    }

    /// Whether the payload holds `key` (in `data`, or a ConfigMap's `binaryData`).
    pub fn has_key(&self, key: &str) -> bool {
        match self {
            Payload::ConfigMap {
                data, binary_data, ..
            } => data.contains_key(key) || binary_data.contains_key(key),
            Payload::Secret { data, .. } => data.contains_key(key),
            Payload::Kit { .. } => false,
        }
    }

    /// The bytes of data the payload carries, keys and values as the API sends them.
    pub fn bytes(&self) -> usize {
        let size = |map: &BTreeMap<String, String>| -> usize {
            map.iter().map(|(k, v)| k.len() + v.len()).sum()
        };
        match self {
            Payload::ConfigMap {
                data, binary_data, ..
            } => size(data) + size(binary_data),
            Payload::Secret { data, .. } => size(data),
            // Kit objects are small (a spec); their JSON length is what they weigh.
            Payload::Kit { fields, .. } => fields
                .iter()
                .map(|(k, v)| k.len() + v.to_string().len())
                .sum(),
        }
    }

    /// The same payload holding only `keys` (those it has).
    pub fn only(&self, keys: &[String]) -> Payload {
        // Inserted, not collected: see `carry::only`.
        let pick = |map: &BTreeMap<String, String>| {
            let mut picked = BTreeMap::new();
            for (k, v) in keys.iter().filter_map(|k| map.get_key_value(k)) {
                picked.insert(k.clone(), v.clone());
            }
            picked
        };
        match self {
            Payload::ConfigMap {
                data,
                binary_data,
                immutable,
            } => Payload::ConfigMap {
                data: pick(data),
                binary_data: pick(binary_data),
                immutable: *immutable,
            },
            Payload::Secret {
                type_,
                data,
                immutable,
            } => Payload::Secret {
                type_: type_.clone(),
                data: pick(data),
                immutable: *immutable,
            },
            // Copied whole: a Mirror listing keys of one is refused (see `kinds`).
            Payload::Kit { .. } => self.clone(),
        }
    }

    /// The hash of the payload alone.
    pub fn hash(&self) -> Digest {
        Digest::of(&self.canonical())
    }

    /// The hash of the payload with the labels and annotations skiff manages on the copy
    /// (`managed`, see [`super::managed`]); the payload's own hash when there are none.
    pub fn hash_with<M: Serialize>(&self, managed: Option<&M>) -> Digest {
        let mut bytes = self.canonical();
        if let Some(managed) = managed {
            bytes.push(b'\n');
            bytes.extend(serde_json::to_vec(managed).unwrap_or_default());
        }
        Digest::of(&bytes)
    }

    fn canonical(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// The type the API server gives a Secret created without one.
pub const OPAQUE: &str = "Opaque";

/// Which of an object's [`Payload::maps`] it holds at all, a bit each (an absent map and an
/// empty one are the same to the API server). A strategic patch's `$patch: replace` of a map
/// the object lacks is dropped by the server, so an update sets such a map plainly instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeldMaps(u8);

impl HeldMaps {
    pub fn of(payload: &Payload) -> HeldMaps {
        let maps = payload.maps();
        let held = maps.iter().enumerate();
        HeldMaps(held.fold(0, |bits, (i, (_, map))| {
            bits | u8::from(!map.is_empty()) << i
        }))
    }

    /// Whether the object holds the `index`th of its [`Payload::maps`].
    pub fn holds(self, index: usize) -> bool {
        self.0 & 1 << index != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::fixtures::map;

    fn cm(data: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            data: map(data),
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
    }

    #[test]
    fn a_mutable_configmap_hashes_as_it_always_has() {
        let payload = Payload::of_configmap(&cm(&[("ca.crt", "PEM")]));
        let canonical = r#"{"kind":"ConfigMap","data":{"ca.crt":"PEM"},"binaryData":{}}"#;
        assert_eq!(payload.hash(), Digest::of(canonical.as_bytes()));
        assert_eq!(payload.hash().hex().len(), 64);
        assert_eq!(payload.hash_with::<()>(None), payload.hash());
    }

    #[test]
    fn immutability_and_managed_metadata_change_the_hash() {
        let mut source = cm(&[("k", "v")]);
        let mutable = Payload::of_configmap(&source);
        source.immutable = Some(true);
        let immutable = Payload::of_configmap(&source);
        assert!(immutable.immutable());
        assert_ne!(mutable.hash(), immutable.hash());
        let labels = BTreeMap::from([("team", "a")]);
        assert_ne!(mutable.hash_with(Some(&labels)), mutable.hash());
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
        assert_eq!(Payload::of_secret(&s).secret_type(), Some(OPAQUE));
    }

    #[test]
    fn only_keeps_the_listed_keys_from_data_and_binary_data() {
        let mut source = cm(&[("a", "1"), ("b", "2")]);
        source.binary_data.insert("c".into(), "Aw==".into());
        let payload = Payload::of_configmap(&source);
        let picked = payload.only(&["b".into(), "c".into(), "absent".into()]);
        assert!(picked.has_key("b") && picked.has_key("c"));
        assert!(!picked.has_key("a") && !picked.has_key("absent"));
        assert_eq!(payload.only(&["a".into(), "b".into(), "c".into()]), payload);
    }
}
