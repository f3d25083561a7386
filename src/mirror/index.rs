//! The caches' indexes: Mirrors by the source they read and by their copies' name, copies by
//! the Mirror that owns them.
//!
//! A watch event or a reconcile asks which Mirrors read a source, which want a name, or which
//! copies a Mirror owns. Asked of a whole cache, each question would cost the cluster's size;
//! asked of an index, it costs what it finds. The stores are built here with their index, and
//! asked only through the functions here, so the index values are written in one place.

use super::copy::{CopyInfo, Owner};
use super::types::{Mirror, SourceKind};
use crate::kube::api::Resource;
use crate::runtime::{ObjectKey, Store};

/// The annotation `kubectl apply` records the whole applied object in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The Mirror cache, indexed by source and by target name.
pub fn mirror_store() -> Store<Mirror, Mirror> {
    Store::new(kept).with_index(mirror_index)
}

/// What the Mirror cache keeps of a Mirror: all of it but the annotation in which `kubectl
/// apply` records the applied object, often its largest field, which reconciling never reads
/// and a write of the status subresource ignores.
fn kept(mirror: &Mirror) -> Mirror {
    let mut kept = mirror.clone();
    kept.metadata.annotations.remove(LAST_APPLIED);
    kept
}

/// A copy cache keeping `project(object)`, indexed by owning Mirror.
pub fn copy_store<K: Resource>(
    project: impl Fn(&K) -> CopyInfo + Send + Sync + 'static,
) -> Store<K, CopyInfo> {
    Store::new(project).with_index(copy_index)
}

/// The Mirrors whose source is the object of `kind` named `name` in `namespace`.
pub fn mirrors_reading(
    mirrors: &Store<Mirror, Mirror>,
    kind: SourceKind,
    namespace: &str,
    name: &str,
) -> Vec<ObjectKey> {
    mirrors.indexed_keys(&source_index(kind, namespace, name))
}

/// The Mirrors whose copies are objects of `kind` named `name`.
pub fn mirrors_writing(
    mirrors: &Store<Mirror, Mirror>,
    kind: SourceKind,
    name: &str,
) -> Vec<ObjectKey> {
    mirrors.indexed_keys(&target_index(kind, name))
}

/// The cached copies labelled for the Mirror `owner`, each with its key.
pub fn copies_of<K: Resource>(
    copies: &Store<K, CopyInfo>,
    owner: &Owner,
) -> Vec<(ObjectKey, CopyInfo)> {
    copies.indexed(&owner_index(owner))
}

/// The index values of a Mirror in the Mirror cache: its source and its copies' name.
fn mirror_index(m: &Mirror) -> Vec<String> {
    let source = &m.spec.source;
    vec![
        source_index(source.kind, m.metadata.namespace(), &source.name),
        target_index(m.spec.copy_kind(), m.spec.target_name()),
    ]
}

/// The index value of a copy in the copy caches: the Mirror that owns it, if any.
fn copy_index(c: &CopyInfo) -> Vec<String> {
    c.owner.iter().map(|o| owner_index(o)).collect()
}

fn source_index(kind: SourceKind, namespace: &str, name: &str) -> String {
    format!("source/{}/{namespace}/{name}", kind.as_str())
}

fn target_index(kind: SourceKind, name: &str) -> String {
    format!("target/{}/{name}", kind.as_str())
}

fn owner_index(owner: &Owner) -> String {
    format!("{}/{}", owner.namespace, owner.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::ObjectMeta;
    use crate::runtime::Change;
    use std::collections::BTreeMap;

    #[test]
    fn a_mirror_is_cached_without_the_object_kubectl_apply_recorded() {
        let mut mirror = Mirror {
            metadata: ObjectMeta::named(Some("src"), "ca"),
            ..Mirror::default()
        };
        mirror.metadata.annotations = BTreeMap::from([
            (LAST_APPLIED.to_owned(), "{\"kind\":\"Mirror\"}".to_owned()),
            ("team".to_owned(), "a".to_owned()),
        ]);
        let store = mirror_store();
        store.apply(&Change::Applied(mirror));
        let cached = store.get("src", "ca").expect("cached");
        let kept: Vec<_> = cached.metadata.annotations.keys().collect();
        assert_eq!(kept, ["team"]);
    }
}
