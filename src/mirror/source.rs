//! What the source cache keeps of a source: its payload, its hash, and the labels and
//! annotations a Mirror may ask its copies to carry.
//!
//! Made once when the source enters the cache: every reconcile of every Mirror reading it
//! shares this one (through an `Arc`). A source of a type its row refuses (a ServiceAccount
//! token Secret) is kept without its keys: skiff never copies one (see [`super::desired`]), so
//! it holds no token either.

use super::carry::copyable;
use super::payload::{Digest, Payload};
use crate::kind::Kind;
use crate::kube::api::Object;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, PartialEq, Eq)]
pub struct SourceContent {
    pub payload: Payload,
    /// The payload's hash: a copy's hash when the Mirror neither picks keys nor sets metadata.
    pub hash: Digest,
    /// The source's labels and annotations, less those never copied.
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

impl SourceContent {
    /// A source of the kind `row` describes.
    pub fn of(row: &'static Kind, object: &Object) -> Arc<SourceContent> {
        let mut payload = Payload::of(row, object);
        if refused_type(&payload).is_some() {
            payload = payload.only(&[]);
        }
        let meta = &object.metadata;
        Arc::new(SourceContent {
            hash: payload.hash(),
            payload,
            labels: copyable(&meta.labels),
            annotations: copyable(&meta.annotations),
        })
    }

    /// The refused type the source is of, and why its row refuses it.
    pub fn refused_type(&self) -> Option<(&'static str, &'static str)> {
        refused_type(&self.payload)
    }
}

fn refused_type(payload: &Payload) -> Option<(&'static str, &'static str)> {
    let (refused, why) = payload.row().refused_type?;
    (payload.text("type") == Some(refused)).then_some((refused, why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::SourceKind;
    use serde_json::json;

    fn source(kind: SourceKind, object: serde_json::Value) -> Arc<SourceContent> {
        let object: Object = serde_json::from_value(object).expect("an object");
        SourceContent::of(kind.row(), &object)
    }

    #[test]
    fn a_service_account_token_is_kept_without_its_token() {
        let token = "kubernetes.io/service-account-token";
        let secret = |type_: &str| {
            let object = json!({"metadata": {}, "type": type_, "data": {"token": "c2VjcmV0"}});
            source(SourceKind::Secret, object)
        };
        let kept = secret(token);
        assert_eq!(kept.refused_type().map(|(t, _)| t), Some(token));
        assert!(!kept.payload.has_key("token"));
        let opaque = secret("Opaque");
        assert!(opaque.refused_type().is_none() && opaque.payload.has_key("token"));
    }

    #[test]
    fn metadata_that_is_never_copied_is_not_kept() {
        let cm = source(
            SourceKind::ConfigMap,
            json!({"metadata": {"labels": {"team": "a"}, "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{}}"}}}),
        );
        assert_eq!(cm.labels.len(), 1);
        assert!(cm.annotations.is_empty());
        assert_eq!(cm.hash, cm.payload.hash());
    }
}
