//! e2e: what the API server answers to skiff's writes of copies. A create and a patch ask for
//! the object's metadata only (`Accept: ...;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`), and
//! the real server answers so: a 900 KB copy's write brings back a few hundred bytes, not the
//! copy.
//!
//! Why: skiff fans a big source out into many namespaces; a reply echoing each copy whole is
//! memory held per write in flight for nothing, since what the copy holds is what was sent.
//! Only the real server shows that its create and patch handlers honour the negotiated type.

use crate::support::control_plane::{ControlPlane, require_e2e_binaries};
use skiff::kube::api::{ConfigMap, ObjectMeta, Resource};
use skiff::kube::{Client, PatchKind, Pieces, load_kubeconfig_files};
use std::collections::BTreeMap;

fn admin_client(cp: &ControlPlane) -> Client {
    let path = cp.admin_kubeconfig();
    let config = load_kubeconfig_files(std::slice::from_ref(&path), None).expect("load");
    Client::new(config).expect("client")
}

fn big_configmap(namespace: &str, name: &str) -> ConfigMap {
    let mut metadata = ObjectMeta::named(Some(namespace), name);
    metadata.labels = BTreeMap::from([("app.kubernetes.io/managed-by".into(), "skiff".into())]);
    ConfigMap {
        metadata,
        data: BTreeMap::from([("ca.crt".into(), "x".repeat(900 * 1024))]),
        ..ConfigMap::default()
    }
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_create_asked_for_metadata_only_is_answered_with_metadata_only() {
    require_e2e_binaries();
    let cp = ControlPlane::shared();
    let namespace = cp.create_namespace("write-replies", &[]);
    let client = admin_client(cp);
    smol::block_on(async {
        let written = client
            .create_for_metadata(&big_configmap(&namespace, "meta-only"))
            .await
            .expect("create");
        assert_eq!(written.kind, "PartialObjectMetadata");
        let meta = &written.metadata;
        assert_eq!(meta.name(), "meta-only");
        assert_eq!(meta.namespace(), namespace);
        assert!(!meta.resource_version().is_empty(), "{meta:?}");
        assert_eq!(meta.labels["app.kubernetes.io/managed-by"], "skiff");
        // The object itself was stored whole, and a plain create still answers with it.
        let stored: ConfigMap = client
            .get(Some(&namespace), "meta-only")
            .await
            .expect("get");
        assert_eq!(stored.data["ca.crt"].len(), 900 * 1024);
        let whole = client
            .create(&big_configmap(&namespace, "whole"))
            .await
            .expect("create");
        assert_eq!(whole.data["ca.crt"].len(), 900 * 1024);
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_patch_asked_for_metadata_only_is_answered_with_metadata_only() {
    require_e2e_binaries();
    let cp = ControlPlane::shared();
    let namespace = cp.create_namespace("patch-replies", &[]);
    let client = admin_client(cp);
    smol::block_on(async {
        let created = client
            .create(&big_configmap(&namespace, "patched"))
            .await
            .expect("create");
        let rv = created.metadata.resource_version();
        let patch = serde_json::json!({"metadata": {"resourceVersion": rv,
            "labels": {"team": "a"}}, "data": {"$patch": "replace", "ca.crt": "y".repeat(900 * 1024)}});
        let body = Pieces::from(serde_json::to_vec(&patch).expect("encode"));
        let written = client
            .patch_encoded_at(
                ConfigMap::url_path(Some(&namespace), Some("patched")),
                body,
                PatchKind::Strategic,
            )
            .await
            .expect("patch");
        assert_eq!(written.kind, "PartialObjectMetadata");
        assert_eq!(written.metadata.labels["team"], "a");
        assert_ne!(written.metadata.resource_version(), rv);
        let stored: ConfigMap = client.get(Some(&namespace), "patched").await.expect("get");
        assert_eq!(stored.data["ca.crt"], "y".repeat(900 * 1024));
    });
}
