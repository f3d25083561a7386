//! The hashes skiff has always written, pinned per kind.
//!
//! A copy's hash is the canonical form of its content. If a change to the code moved it, the
//! first restart after an upgrade would rewrite every copy in the cluster. The expected values
//! below were computed by the build before the kind table (commit ba987d8) and must never
//! change; only the two adapters below may follow the code's shape.

use super::copy::CopyInfo;
use super::desired::DesiredCopy;
use super::source::SourceContent;
use super::types::{Mirror, SourceKind};

/// The hash the copy cache keeps of the copy `json`, an object of `kind` as the server sends it.
fn copy_hash(kind: SourceKind, json: &str) -> String {
    CopyInfo::of(kind.row(), &decode(json)).content_hash.hex()
}

/// The hash the Mirror `mirror` wants its copies of the source `source` to have.
fn desired_hash(mirror: &str, source: &str) -> String {
    let mirror: Mirror = decode(mirror);
    let content = SourceContent::of(mirror.spec.source.kind.row(), &decode(source));
    let desired = DesiredCopy::of(&mirror, &content).expect("a copyable source");
    desired.hash.hex()
}

fn decode<T: serde::de::DeserializeOwned>(json: &str) -> T {
    serde_json::from_str(json).expect("a valid fixture")
}

/// Copies as the server holds them, with skiff's labels, and the hash of each.
const COPIES: [(SourceKind, &str, &str); 12] = [
    (
        SourceKind::ConfigMap,
        r#"{"metadata":{"name":"ca","namespace":"a","labels":{"app.kubernetes.io/managed-by":"skiff","skiff.dev/mirror-namespace":"src","skiff.dev/mirror-name":"m"}},
            "data":{"ca.crt":"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}}"#,
        "ca41b650e2f9aa105b647a0ef2a48d10c40225997f9d191f147d7b50ae7fa910",
    ),
    (
        SourceKind::ConfigMap,
        r#"{"metadata":{"name":"ca","namespace":"a"},"data":{"a":"1","b":"\"q\""},
            "binaryData":{"blob":"AAEC"},"immutable":true}"#,
        "3db1a64be739df1230c15f24902004b138db70513b8628991c3233e985ca8d49",
    ),
    (
        SourceKind::ConfigMap,
        r#"{"metadata":{"name":"ca","namespace":"a"},"data":{"a":"1"},"immutable":false}"#,
        "dc873aaf2cea7ebe8d7a9bfce4bec73093cf557c3cbfcdb4ab112ddcdc285200",
    ),
    (
        SourceKind::ConfigMap,
        r#"{"metadata":{"name":"ca","namespace":"a","labels":{"app.kubernetes.io/managed-by":"skiff","skiff.dev/mirror-namespace":"src","skiff.dev/mirror-name":"m","team":"a","theirs":"x"},
            "annotations":{"skiff.dev/managed-labels":"team,gone","skiff.dev/managed-annotations":"note","note":"hi"}},
            "data":{"a":"1"}}"#,
        "94d98bb4cd8560af1293fa3b5be80d7baf3b8104702308df7640fd9126accb33",
    ),
    (
        SourceKind::Secret,
        r#"{"metadata":{"name":"tls","namespace":"a"},"type":"kubernetes.io/tls",
            "data":{"tls.crt":"Qw==","tls.key":"Sw=="}}"#,
        "9bafc27fb3bad3634e1b61eca83386ec60619987bcfe433e5b6c49901d3a8a4b",
    ),
    (
        SourceKind::Secret,
        r#"{"metadata":{"name":"creds","namespace":"a"},"data":{"password":"cA=="}}"#,
        "7441defc592f279285e19b4d155b77d3d455e61fdab11b725e7b1d76da411e43",
    ),
    (
        SourceKind::Secret,
        r#"{"metadata":{"name":"creds","namespace":"a"},"type":"Opaque","data":{"password":"cA=="},"immutable":true}"#,
        "a5a034e16007fcefc0f68d4df178bad00097e7e2dbb015cb803f879b800ec4a6",
    ),
    (
        SourceKind::NetworkPolicy,
        r#"{"metadata":{"name":"deny","namespace":"a"},"spec":{"podSelector":{},"policyTypes":["Ingress"]}}"#,
        "1dac790d10b2f6fe7fdfb63861cadb75c8cc4655f79431e5330d745f27f1da63",
    ),
    (
        SourceKind::LimitRange,
        r#"{"metadata":{"name":"limits","namespace":"a"},"spec":{"limits":[{"type":"Container","default":{"cpu":"500m"}}]}}"#,
        "f20fe00f8ee40f2bd1e290f8ea01fac301c25380c810e47ea84fe18e5fd9c4dc",
    ),
    (
        SourceKind::ResourceQuota,
        r#"{"metadata":{"name":"quota","namespace":"a"},"spec":{"hard":{"pods":"10"}},"status":{"used":{"pods":"3"}}}"#,
        "3ddb3910e4e8ea4dd2ecad23b812b4f00ea137372f044fbc23d5132069b66294",
    ),
    (
        SourceKind::RoleBinding,
        r#"{"metadata":{"name":"edit","namespace":"a"},
            "subjects":[{"kind":"Group","name":"team-a","apiGroup":"rbac.authorization.k8s.io"}],
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"}}"#,
        "5a717425ba5d0cb3cd2c08b962b7788607bc4a333152feef4776054c65241bdf",
    ),
    (
        SourceKind::ServiceAccount,
        r#"{"metadata":{"name":"builder","namespace":"a"},"imagePullSecrets":[{"name":"pull"}],
            "automountServiceAccountToken":false,"secrets":[{"name":"builder-token"}]}"#,
        "bed769d8217e83d76f69a008730761d49f1498a7563a1290aaf286774ada02e9",
    ),
];

/// Mirrors and their sources, and the hash each wants its copies to have.
const DESIRED: [(&str, &str, &str); 4] = [
    (
        r#"{"metadata":{"name":"m","namespace":"src"},"spec":{"source":{"kind":"ConfigMap","name":"ca"}}}"#,
        r#"{"metadata":{"name":"ca","namespace":"src","labels":{"team":"a"}},"data":{"a":"1","b":"2"}}"#,
        "22fe0078af7301609a07ee9f69bfd3375a938ee0676e2bf7ed6f3b57f0c53f9e",
    ),
    (
        r#"{"metadata":{"name":"m","namespace":"src"},"spec":{"source":{"kind":"ConfigMap","name":"ca","keys":["b"],"copyLabels":["team"]},
            "target":{"metadata":{"labels":{"tier":"x"},"annotations":{"note":"hi"}}}}}"#,
        r#"{"metadata":{"name":"ca","namespace":"src","labels":{"team":"a"}},"data":{"a":"1","b":"2"}}"#,
        "360ff416af52f9b7970d395aef9a5c6c5dfd9578a70bd487fc3b459112361ec7",
    ),
    (
        r#"{"metadata":{"name":"m","namespace":"src"},"spec":{"source":{"kind":"Secret","name":"tls","keys":["tls.crt","tls.key"]}}}"#,
        r#"{"metadata":{"name":"tls","namespace":"src"},"type":"kubernetes.io/tls","data":{"tls.crt":"Qw==","tls.key":"Sw==","ca.crt":"Qw=="}}"#,
        "9bafc27fb3bad3634e1b61eca83386ec60619987bcfe433e5b6c49901d3a8a4b",
    ),
    (
        r#"{"metadata":{"name":"m","namespace":"src"},"spec":{"source":{"kind":"RoleBinding","name":"edit"},
            "target":{"metadata":{"labels":{"tier":"x"}}}}}"#,
        r#"{"metadata":{"name":"edit","namespace":"src"},
            "subjects":[{"kind":"Group","name":"team-a","apiGroup":"rbac.authorization.k8s.io"}],
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"}}"#,
        "4c815208710a9f89208dd5c735f02ec21ab552145ec8ef09009a8d8df6f738d2",
    ),
];

#[test]
fn a_copy_of_every_kind_hashes_as_it_always_has() {
    let got: Vec<(SourceKind, String)> = (COPIES.iter())
        .map(|(kind, json, _)| (*kind, copy_hash(*kind, json)))
        .collect();
    let want: Vec<(SourceKind, String)> = (COPIES.iter())
        .map(|(kind, _, hash)| (*kind, (*hash).to_owned()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn what_a_mirror_wants_hashes_as_it_always_has() {
    let got: Vec<String> = (DESIRED.iter())
        .map(|(mirror, source, _)| desired_hash(mirror, source))
        .collect();
    let want: Vec<&str> = DESIRED.iter().map(|(_, _, hash)| *hash).collect();
    assert_eq!(got, want);
}
