//! Small builders the Mirror unit tests share.

use super::copy::CopyInfo;
use super::existing::Existing;
use super::source::SourceContent;
use super::types::{Mirror, SourceKind};
use crate::kube::api::{Object, ObjectMeta};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A string map of `pairs`, as labels, annotations and `data` are.
pub fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Mirror `src/<name>` of the `kind` named `app`.
pub fn mirror_of(name: &str, kind: SourceKind) -> Mirror {
    let mut m = Mirror {
        metadata: ObjectMeta::named(Some("src"), name),
        ..Mirror::default()
    };
    m.spec.source.kind = kind;
    m.spec.source.name = "app".into();
    m
}

/// `typed` (a `ConfigMap`, a `Secret`, or JSON) as the object every kind is decoded into.
pub fn object(typed: &impl serde::Serialize) -> Object {
    let json = serde_json::to_value(typed).expect("encodes");
    serde_json::from_value(json).expect("an object")
}

/// What the source cache keeps of `typed`, a source of `kind`.
pub fn source(kind: SourceKind, typed: &impl serde::Serialize) -> Arc<SourceContent> {
    SourceContent::of(kind.row(), &object(typed))
}

/// What the copy cache keeps of `typed`, a copy of `kind`.
pub fn copy_info(kind: SourceKind, typed: &impl serde::Serialize) -> CopyInfo {
    CopyInfo::of(kind.row(), &object(typed))
}

/// `typed`, an object of `kind`, as read from the server.
pub fn existing(kind: SourceKind, typed: &impl serde::Serialize) -> Existing {
    Existing::of(kind.row(), &object(typed))
}
