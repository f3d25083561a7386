//! What the source cache keeps of a source: its payload, its hash, and the labels and
//! annotations a Mirror may ask its copies to carry.
//!
//! Made once when the source enters the cache: every reconcile of every Mirror reading it
//! shares this one (through an `Arc`). A ServiceAccount token Secret is kept without its data:
//! skiff never copies one (see [`super::desired`]), so it holds no token either.

use super::carry::copyable;
use super::payload::{Digest, Payload};
use super::types::SourceKind;
use crate::kube::api::{ConfigMap, KitObject, ObjectMeta, Secret};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The type of the Secrets that hold a ServiceAccount's token.
pub const SERVICE_ACCOUNT_TOKEN: &str = "kubernetes.io/service-account-token";

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
    pub fn of_configmap(cm: &ConfigMap) -> Arc<SourceContent> {
        SourceContent::new(&cm.metadata, Payload::of_configmap(cm))
    }

    pub fn of_secret(secret: &Secret) -> Arc<SourceContent> {
        let mut payload = Payload::of_secret(secret);
        if let Payload::Secret { data, .. } = &mut payload
            && secret.type_.as_deref() == Some(SERVICE_ACCOUNT_TOKEN)
        {
            data.clear();
        }
        SourceContent::new(&secret.metadata, payload)
    }

    /// A source of the kit kind `of`: its user-set `fields`.
    pub fn of_kit(of: SourceKind, object: &KitObject, fields: &[&str]) -> Arc<SourceContent> {
        SourceContent::new(&object.metadata, Payload::of_kit(of, object, fields))
    }

    fn new(meta: &ObjectMeta, payload: Payload) -> Arc<SourceContent> {
        let hash = payload.hash();
        Arc::new(SourceContent {
            payload,
            hash,
            labels: copyable(&meta.labels),
            annotations: copyable(&meta.annotations),
        })
    }

    pub fn is_service_account_token(&self) -> bool {
        self.payload.secret_type() == Some(SERVICE_ACCOUNT_TOKEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_account_token_is_kept_without_its_token() {
        let mut secret = Secret {
            type_: Some(SERVICE_ACCOUNT_TOKEN.into()),
            data: [("token".to_string(), "c2VjcmV0".to_string())].into(),
            ..Secret::default()
        };
        let source = SourceContent::of_secret(&secret);
        assert!(source.is_service_account_token());
        assert!(!source.payload.has_key("token"));
        secret.type_ = Some("Opaque".into());
        let opaque = SourceContent::of_secret(&secret);
        assert!(!opaque.is_service_account_token() && opaque.payload.has_key("token"));
    }

    #[test]
    fn metadata_that_is_never_copied_is_not_kept() {
        let mut cm = ConfigMap::default();
        cm.metadata.labels.insert("team".into(), "a".into());
        cm.metadata.annotations.insert(
            "kubectl.kubernetes.io/last-applied-configuration".into(),
            "{\"data\":{}}".into(),
        );
        let source = SourceContent::of_configmap(&cm);
        assert_eq!(source.labels.len(), 1);
        assert!(source.annotations.is_empty());
        assert_eq!(source.hash, source.payload.hash());
    }
}
