//! The built binary against the fake API server: elected, it copies a ConfigMap into the
//! selected namespaces; on SIGTERM it releases the Lease and exits 0.

use crate::support::cluster::Cluster;
use crate::support::lease::LEASE_PATH;
use crate::support::skiff::eventually;
use serde_json::json;
use std::time::Duration;

#[test]
fn elected_binary_copies_a_configmap_and_releases_on_sigterm() {
    let mut cluster = Cluster::new("smoke");
    for ns in ["team-a", "team-b"] {
        cluster.namespace(ns, json!({"team": "yes"}));
    }
    cluster.namespace("other", json!({}));
    cluster.team_ca_mirror();
    let mut skiff = cluster.start(&["--leader-elect", "--log-level=debug"]);
    let server = &cluster.server;

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

    skiff.terminate(Duration::from_secs(5));
    let lease = server.get(LEASE_PATH).expect("lease");
    assert_eq!(
        lease["spec"]["holderIdentity"],
        "",
        "log:\n{}",
        skiff.logs()
    );
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 1);
}
