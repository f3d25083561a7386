//! Small builders the Mirror unit tests share.

use super::types::{Mirror, SourceKind};
use crate::kube::api::ObjectMeta;
use std::collections::BTreeMap;

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
