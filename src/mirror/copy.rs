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
/// On a copy a hub placed: the hub's name (`--hub-name`) and its Mirror's namespace and name,
/// in place of the Mirror labels, so that it never collides with a local Mirror's copy and a
/// skiff older than the fleet reads it as an object it does not manage.
pub const HUB_LABEL: &str = "skiff.dev/hub";
pub const HUB_MIRROR_NAMESPACE_LABEL: &str = "skiff.dev/hub-mirror-namespace";
pub const HUB_MIRROR_NAME_LABEL: &str = "skiff.dev/hub-mirror-name";

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

/// The Mirror named by a skiff-managed object's labels, if it is one: a local Mirror, or a
/// hub's.
pub fn owner_of(meta: &ObjectMeta) -> Option<Owner> {
    let label = |key| meta.labels.get(key).map(String::as_str);
    if label(MANAGED_BY_LABEL) != Some(MANAGED_BY_VALUE) {
        return None;
    }
    if let Some(hub) = label(HUB_LABEL) {
        return Some(Owner::of_hub(
            hub,
            label(HUB_MIRROR_NAMESPACE_LABEL)?,
            label(HUB_MIRROR_NAME_LABEL)?,
        ));
    }
    Some(Owner {
        namespace: label(MIRROR_NAMESPACE_LABEL)?.to_owned(),
        name: label(MIRROR_NAME_LABEL)?.to_owned(),
    })
}

/// Metadata naming a copy `name` in `namespace` and labelling it as `owner`'s.
pub fn labelled_for(owner: &Owner, namespace: &str, name: &str) -> ObjectMeta {
    let mut meta = ObjectMeta::named(Some(namespace), name);
    let managed = (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned());
    meta.labels = match owner.hub() {
        None => BTreeMap::from([
            managed,
            (MIRROR_NAMESPACE_LABEL.to_owned(), owner.namespace.clone()),
            (MIRROR_NAME_LABEL.to_owned(), owner.name.clone()),
        ]),
        Some((hub, namespace)) => BTreeMap::from([
            managed,
            (HUB_LABEL.to_owned(), hub.to_owned()),
            (HUB_MIRROR_NAMESPACE_LABEL.to_owned(), namespace.to_owned()),
            (HUB_MIRROR_NAME_LABEL.to_owned(), owner.name.clone()),
        ]),
    };
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
    fn a_hub_s_copy_names_the_hub_and_is_no_local_mirror_s() {
        let owner = Owner::of_hub("hub-eu", "src", "ca");
        let meta = labelled_for(&owner, "team-a", "app-ca");
        assert_eq!(meta.labels[HUB_LABEL], "hub-eu");
        assert!(!meta.labels.contains_key(MIRROR_NAMESPACE_LABEL));
        assert_eq!(owner_of(&meta), Some(owner.clone()));
        assert_ne!(owner_of(&meta), Some(Owner::of(&mirror())));
        assert_eq!(owner.hub(), Some(("hub-eu", "src")));
        assert_eq!(Owner::of(&mirror()).hub(), None);
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
