//! The built binary against the fake API server: elected, it copies a ConfigMap into the
//! selected namespaces; on SIGTERM it releases the Lease and exits 0.

mod support;

use serde_json::json;
use std::time::Duration;
use support::fake::FakeServer;
use support::skiff::{Skiff, TempDir, eventually, write_kubeconfig};

fn namespace(name: &str, labels: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

#[test]
fn elected_binary_copies_a_configmap_and_releases_on_sigterm() {
    let server = FakeServer::start();
    for ns in ["skiff-system", "team-a", "team-b"] {
        server.insert(namespace(ns, json!({"team": "yes"})));
    }
    server.insert(namespace("other", json!({})));
    server.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "app-ca", "namespace": "skiff-system"}, "data": {"ca.crt": "PEM"}}));
    server.insert(json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
        "metadata": {"name": "ca", "namespace": "skiff-system"},
        "spec": {"source": {"kind": "ConfigMap", "name": "app-ca"}, "namespaceSelector": {"matchLabels": {"team": "yes"}}}}));
    let dir = TempDir::new("smoke");
    let kubeconfig = write_kubeconfig(&dir, &server.url(), None, None, "skiff-system");
    let mut skiff = Skiff::start(
        &kubeconfig,
        dir.0.join("skiff.log"),
        &["--leader-elect", "--log-level=debug"],
    );

    let copied = eventually(Duration::from_secs(10), || {
        ["team-a", "team-b"].iter().all(|ns| {
            server
                .get(&format!("/api/v1/namespaces/{ns}/configmaps/app-ca"))
                .is_some()
        })
    });
    assert!(copied, "copies missing; log:\n{}", skiff.logs());
    assert!(
        server
            .get("/api/v1/namespaces/other/configmaps/app-ca")
            .is_none()
    );
    let copy = server
        .get("/api/v1/namespaces/team-a/configmaps/app-ca")
        .expect("copy");
    assert_eq!(copy["data"]["ca.crt"], "PEM");
    let ready = eventually(Duration::from_secs(5), || {
        let m = server
            .get("/apis/skiff.dev/v1alpha1/namespaces/skiff-system/mirrors/ca")
            .expect("mirror");
        m["status"]["conditions"][0]["status"] == "True"
    });
    assert!(ready, "mirror not Ready; log:\n{}", skiff.logs());

    skiff.signal("TERM");
    assert_eq!(
        skiff.wait_exit(Duration::from_secs(5)),
        Some(0),
        "log:\n{}",
        skiff.logs()
    );
    let lease = server
        .get("/apis/coordination.k8s.io/v1/namespaces/skiff-system/leases/skiff-leader")
        .expect("lease");
    assert_eq!(
        lease["spec"]["holderIdentity"],
        "",
        "log:\n{}",
        skiff.logs()
    );
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 1);
}
