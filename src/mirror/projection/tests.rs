use super::*;
use crate::kube::api::Secret;
use crate::mirror::desired::DesiredCopy;
use crate::mirror::fixtures::{self, mirror_of};
use crate::mirror::source::SourceContent;
use crate::mirror::types::{Rename, SourceKind, TargetSpec};
use crate::testing::assert_mentions;
use crate::testing::pem::issued;
use std::collections::BTreeMap;
use std::sync::Arc;

fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// A cert-manager `kubernetes.io/tls` Secret, with the additional outputs cert-manager writes
/// when asked (`key.der`, `keystore.p12`) and a password beside.
fn cert_manager_secret() -> Arc<SourceContent> {
    let pem = issued();
    let data = BTreeMap::from([
        ("ca.crt".to_owned(), b64(pem.ca.as_bytes())),
        ("tls.crt".to_owned(), b64(pem.chain.as_bytes())),
        ("tls.key".to_owned(), b64(pem.key.as_bytes())),
        ("key.der".to_owned(), b64(&pem.key_der)),
        ("keystore.p12".to_owned(), b64(&pem.keystore)),
        ("keystore-password".to_owned(), b64(b"changeit")),
        (
            "extra.pem".to_owned(),
            b64(format!("{}{}", pem.ca, pem.ec_key).as_bytes()),
        ),
    ]);
    let secret = Secret {
        type_: Some("kubernetes.io/tls".into()),
        data,
        ..Secret::default()
    };
    fixtures::source(SourceKind::Secret, &secret)
}

/// The Mirror of that Secret publishing `keys` as a ConfigMap.
fn publishing(keys: &[&str]) -> Mirror {
    let mut m = mirror_of("ca", SourceKind::Secret);
    m.spec.source.keys = keys.iter().map(|k| k.to_string()).collect();
    m.spec.target = Some(TargetSpec {
        kind: Some(SourceKind::ConfigMap),
        ..TargetSpec::default()
    });
    m
}

#[test]
fn a_ca_and_a_chain_are_published_as_a_configmaps_text() {
    let source = cert_manager_secret();
    let desired = DesiredCopy::of(&publishing(&["ca.crt", "tls.crt"]), &source).expect("published");
    let payload = desired.payload();
    assert_eq!(payload.kind(), SourceKind::ConfigMap);
    let data = payload.field("data").expect("data");
    assert_eq!(data["ca.crt"], issued().ca.as_str());
    assert_eq!(data["tls.crt"], issued().chain.as_str());
    assert!(payload.field("type").is_none() && payload.field("binaryData").is_none());
    assert_eq!(
        desired.hash,
        payload.hash(),
        "hashed as the ConfigMap it is"
    );
}

#[test]
fn a_key_in_any_form_a_keystore_and_a_password_are_refused_by_name() {
    let source = cert_manager_secret();
    for (key, why) in [
        ("tls.key", "PRIVATE KEY"),
        ("key.der", "not text"),
        ("keystore.p12", "not text"),
        ("keystore-password", "no PEM certificate"),
        ("extra.pem", "EC PRIVATE KEY"),
    ] {
        let m = publishing(&["ca.crt", key]);
        let refused = DesiredCopy::of(&m, &source).expect_err(key);
        assert_eq!(refused.reason, Reason::KeyNotPublishable, "{key}");
        assert_mentions(&refused.message, &[key, why, "PEM certificates", "src/app"]);
        assert!(
            !refused.message.contains("ca.crt"),
            "ca.crt passed: {}",
            refused.message
        );
    }
}

#[test]
fn the_copy_is_checked_by_its_own_kind_not_the_sources() {
    let source = cert_manager_secret();
    let m = publishing(&["tls.crt"]);
    assert!(
        DesiredCopy::of(&m, &source).is_ok(),
        "a kubernetes.io/tls pick without tls.key is fine for a ConfigMap"
    );
}

#[test]
fn renamed_keys_are_published_under_their_new_names() {
    let source = cert_manager_secret();
    let mut m = publishing(&["tls.crt"]);
    m.spec.source.rename = vec![Rename {
        from: "tls.crt".into(),
        to: "ca.crt".into(),
    }];
    let desired = DesiredCopy::of(&m, &source).expect("published");
    let data = desired.payload().field("data").expect("data");
    assert_eq!(data["ca.crt"], issued().chain.as_str());
    assert!(data.get("tls.crt").is_none());
}

#[test]
fn a_kind_no_row_publishes_as_is_refused() {
    let source = fixtures::source(
        SourceKind::ConfigMap,
        &serde_json::json!({"data": {"a": "1"}}),
    );
    let mut m = publishing(&["a"]);
    m.spec.source.kind = SourceKind::ConfigMap;
    m.spec.target = Some(TargetSpec {
        kind: Some(SourceKind::Secret),
        ..TargetSpec::default()
    });
    let refused = DesiredCopy::of(&m, &source).expect_err("no such projection");
    assert_eq!(refused.reason, Reason::ProjectionNotSupported);
    assert_mentions(
        &refused.message,
        &["ConfigMap is not published as a Secret"],
    );
}
