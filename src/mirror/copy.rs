//! What a copy is: who it belongs to, and what the copy cache keeps of it.
//!
//! The copy cache keeps a [`CopyInfo`] per object, never the data: the hash of the content
//! the copy actually holds is enough to tell whether it must be rewritten (a hand edit changes
//! it; the `source-hash` annotation would not). The hash covers the labels and annotations
//! skiff manages on the copy too (see [`super::managed`]), whose record the entry keeps.

use super::managed::{Managed, Record};
pub use super::owners::Owner;
use super::owners::shared;
use super::payload::{Digest, HeldMaps, Payload};
use super::types::{Mirror, SourceKind};
use crate::kind::Kind;
use crate::kube::api::Version;
use crate::kube::api::{FieldManager, Object, ObjectMeta};
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

/// What the cache keeps of a copy: enough to decide, nothing of the data. Its namespace and
/// name are the cache's key, so the entry does not repeat them (80 bytes, pinned by a test).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyInfo {
    pub kind: SourceKind,
    /// Shared by every copy of the same Mirror ([`super::owners`]).
    pub owner: Option<Arc<Owner>>,
    pub resource_version: Version,
    /// Hash of the content the copy holds now, with the labels and annotations skiff manages.
    pub content_hash: Digest,
    /// The keys skiff recorded as its own on the copy, if any.
    pub record: Option<Record>,
    /// Who made the latest change skiff did not make, as it reports itself (2 bytes).
    pub changed_by: Option<FieldManager>,
    /// Which of its maps the copy holds (1 byte), for an update's patch.
    pub held: HeldMaps,
}

impl CopyInfo {
    /// A copy of the kind `row` describes, as the server holds it: the hash of what it
    /// carries, never the content.
    pub fn of(row: &'static Kind, object: &Object) -> CopyInfo {
        CopyInfo::written(&object.metadata, &Payload::of(row, object))
    }

    /// A copy whose metadata is `meta` holding `payload`: one just written with that payload,
    /// whose reply carried its metadata only.
    pub fn written(meta: &ObjectMeta, payload: &Payload) -> CopyInfo {
        let record = Record::of(meta);
        let managed = record.as_ref().map(|r| Managed::held(meta, r));
        CopyInfo {
            kind: payload.kind(),
            owner: owner_of(meta).map(shared),
            resource_version: Version::new(meta.resource_version()),
            content_hash: payload.hash_with(managed.as_ref().and_then(Managed::if_any)),
            record,
            changed_by: meta.other_manager,
            held: HeldMaps::of(payload),
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

/// Metadata naming a copy `name` in `namespace` and labelling it as `owner`'s.
pub fn labelled_for(owner: &Owner, namespace: &str, name: &str) -> ObjectMeta {
    let mut meta = ObjectMeta::named(Some(namespace), name);
    meta.labels = BTreeMap::from([
        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned()),
        (MIRROR_NAMESPACE_LABEL.to_owned(), owner.namespace.clone()),
        (MIRROR_NAME_LABEL.to_owned(), owner.name.clone()),
    ]);
    meta
}

/// Metadata of a plain copy of `mirror`'s source in `namespace` (no labels or annotations of
/// the Mirror's own): skiff's labels and the hash annotation. `resource_version` makes an update
/// conditional on the version the cache saw.
pub fn copy_meta(
    mirror: &Mirror,
    namespace: &str,
    hash: &str,
    resource_version: Option<&str>,
) -> ObjectMeta {
    let mut meta = labelled_for(&Owner::of(mirror), namespace, mirror.spec.target_name());
    meta.annotations = BTreeMap::from([(SOURCE_HASH_ANNOTATION.to_owned(), hash.to_owned())]);
    meta.resource_version = resource_version.map(str::to_owned);
    meta
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::fixtures::map;
    use crate::mirror::managed::MANAGED_LABELS_ANNOTATION;
    use crate::mirror::types::{MirrorSpec, SourceRef};

    fn mirror() -> Mirror {
        Mirror {
            metadata: ObjectMeta::named(Some("src"), "ca"),
            spec: MirrorSpec {
                source: SourceRef {
                    kind: SourceKind::ConfigMap,
                    name: "app-ca".into(),
                    ..SourceRef::default()
                },
                ..MirrorSpec::default()
            },
            ..Mirror::default()
        }
    }

    fn copy(data: &[(&str, &str)]) -> Object {
        let mut copy = Object {
            metadata: copy_meta(&mirror(), "team-a", "h", None),
            ..Object::default()
        };
        copy.set_field("data", serde_json::to_value(map(data)).expect("a map"));
        copy
    }

    fn info(copy: &Object) -> CopyInfo {
        CopyInfo::of(SourceKind::ConfigMap.row(), copy)
    }

    #[test]
    fn a_copy_is_labelled_for_its_mirror_and_read_back_as_owned() {
        let copy = copy(&[("k", "v")]);
        assert_eq!(copy.metadata.name(), "app-ca");
        assert_eq!(copy.metadata.namespace(), "team-a");
        let info = info(&copy);
        assert_eq!(info.owner.as_deref(), Some(&Owner::of(&mirror())));
        assert_eq!(
            info.content_hash,
            Payload::of(SourceKind::ConfigMap.row(), &copy).hash()
        );
        assert_eq!(info.record, None);
        assert_eq!(info.resource_version, Version::new(""));
    }

    #[test]
    fn the_cached_entry_of_a_copy_takes_80_bytes() {
        assert_eq!(size_of::<CopyInfo>(), 80);
    }

    #[test]
    fn an_object_without_the_managed_by_label_has_no_owner() {
        let mut meta = copy_meta(&mirror(), "team-a", "h", None);
        meta.labels.remove(MANAGED_BY_LABEL);
        assert_eq!(owner_of(&meta), None);
    }

    #[test]
    fn a_hand_edit_of_a_managed_label_changes_the_hash_and_a_foreign_label_does_not() {
        let mut copy = copy(&[("k", "v")]);
        copy.metadata.labels.insert("team".into(), "a".into());
        copy.metadata
            .annotations
            .insert(MANAGED_LABELS_ANNOTATION.into(), "team".into());
        let before = info(&copy).content_hash;
        copy.metadata.labels.insert("theirs".into(), "x".into());
        assert_eq!(info(&copy).content_hash, before);
        copy.metadata.labels.insert("team".into(), "b".into());
        assert_ne!(info(&copy).content_hash, before);
    }
}
