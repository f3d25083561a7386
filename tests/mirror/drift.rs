//! Copies stay true to their source: hand edits are restored, hand deletions recreated, and
//! what a copy carries besides `data` (a Secret's `type`, a ConfigMap's `binaryData`) is kept.

use crate::support::cluster::{Cluster, HOME, SOURCE_HASH};
use crate::support::fake::{Fault, RequestClass};
use serde_json::json;
use std::time::Duration;

fn team_mirror(cluster: &Cluster) {
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster.namespace("team-b", json!({"team": "yes"}));
    cluster.team_ca_mirror();
}

#[test]
fn a_hand_edited_copy_is_restored() {
    let mut cluster = Cluster::new("edit");
    team_mirror(&cluster);
    let skiff = cluster.start(&[]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");

    let mut copy = cluster.configmap_at("team-a", "app-ca").expect("copy");
    copy["data"] = json!({"ca.crt": "TAMPERED", "added": "by hand"});
    let edited = cluster.server.update(copy);
    let edited_version = edited["metadata"]["resourceVersion"].clone();
    cluster.wait_for(&skiff, "the copy restored", || {
        cluster
            .configmap_at("team-a", "app-ca")
            .is_some_and(|c| c["data"] == json!({"ca.crt": "PEM"}))
    });
    let restored = cluster.configmap_at("team-a", "app-ca").expect("copy");
    assert_ne!(restored["metadata"]["resourceVersion"], edited_version);
    assert!(restored["metadata"]["annotations"][SOURCE_HASH].is_string());
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
}

#[test]
fn a_changed_target_name_replaces_the_old_copies() {
    let mut cluster = Cluster::new("rename");
    team_mirror(&cluster);
    let skiff = cluster.start(&[]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");

    let mut mirror = cluster.mirror_object(HOME, "ca").expect("mirror");
    mirror["spec"]["targetName"] = json!("trusted-ca");
    cluster.server.update(mirror);
    cluster.wait_for(
        &skiff,
        "copies under the new name, none under the old",
        || {
            ["team-a", "team-b"].iter().all(|ns| {
                cluster.configmap_at(ns, "trusted-ca").is_some()
                    && cluster.configmap_at(ns, "app-ca").is_none()
            })
        },
    );
    cluster.wait_for(&skiff, "status at generation 2", || {
        let status = &cluster.mirror_object(HOME, "ca").expect("mirror")["status"];
        status["observedGeneration"] == 2 && status["synced"] == 2
    });
}

#[test]
fn a_hand_deleted_copy_is_recreated() {
    let mut cluster = Cluster::new("delete");
    team_mirror(&cluster);
    let skiff = cluster.start(&[]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    let before = cluster.configmap_at("team-a", "app-ca").expect("copy");

    cluster
        .server
        .remove("/api/v1/namespaces/team-a/configmaps/app-ca");
    // A new uid is what proves the copy was made again; skiff may do that before this thread
    // looks, so the absence in between is not asserted.
    cluster.wait_for(&skiff, "the copy recreated under a new uid", || {
        cluster
            .configmap_at("team-a", "app-ca")
            .is_some_and(|copy| copy["metadata"]["uid"] != before["metadata"]["uid"])
    });
    let after = cluster.configmap_at("team-a", "app-ca").expect("copy");
    assert_eq!(after["data"], json!({"ca.crt": "PEM"}));
}

/// The copy is deleted while skiff has created it but not yet finished the reconcile (its
/// status write held), so the cache sees the copy come and go before any reconcile reads it:
/// skiff must not take the absence for its create not seen yet.
#[test]
fn a_copy_deleted_before_skiff_read_it_back_is_recreated() {
    let mut cluster = Cluster::new("early-delete");
    team_mirror(&cluster);
    let (release, held) = smol::channel::bounded::<()>(1);
    let status_writes = RequestClass::Matching("/mirrors/ca/status");
    cluster.server.set_fault(status_writes, Fault::Hold(held));
    let skiff = cluster.start(&[]);
    // The status is written once every create's reply is in, so skiff has recorded its creates
    // before the copy goes (a deletion within a create's round trip is another order).
    cluster.wait_for(&skiff, "the status write, held", || {
        cluster
            .server
            .requests()
            .iter()
            .any(|r| r.method == "PUT" && r.path.ends_with("/mirrors/ca/status"))
    });
    let before = cluster.configmap_at("team-a", "app-ca").expect("copy");
    cluster
        .server
        .remove("/api/v1/namespaces/team-a/configmaps/app-ca");
    // Time for the deletion's event to reach skiff while the status write is still held. It
    // decides only whether this run recreates the reconcile order the test is about, never
    // the verdict: a later event still has the copy recreated.
    std::thread::sleep(Duration::from_millis(300));
    drop(release);
    cluster.server.clear_faults();
    cluster.wait_for(&skiff, "the copy recreated", || {
        cluster.configmap_at("team-a", "app-ca").is_some()
    });
    let after = cluster.configmap_at("team-a", "app-ca").expect("copy");
    assert_ne!(after["metadata"]["uid"], before["metadata"]["uid"]);
}

#[test]
fn a_secret_copy_keeps_its_type_and_data() {
    let mut cluster = Cluster::new("secret");
    cluster.namespace("team-a", json!({"team": "yes"}));
    let data = json!({"tls.crt": "Q0VSVA==", "tls.key": "S0VZ"});
    cluster
        .server
        .insert(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "tls", "namespace": HOME},
        "type": "kubernetes.io/tls", "data": data}));
    cluster.mirror_to_teams("tls", "Secret", "tls");
    let skiff = cluster.start(&["--secret-target-names=tls"]);

    cluster.wait_ready(&skiff, HOME, "tls", "True", "Synced");
    let copy = cluster.secret_at("team-a", "tls").expect("secret copy");
    assert_eq!(copy["type"], "kubernetes.io/tls", "{copy}");
    assert_eq!(copy["data"], data, "{copy}");
    assert!(
        cluster.configmap_at("team-a", "tls").is_none(),
        "a ConfigMap was written for a Secret source"
    );

    let mut source = cluster.secret_at(HOME, "tls").expect("source");
    source["data"]["tls.crt"] = json!("TkVX");
    cluster.server.update(source);
    let mut copy = cluster.secret_at("team-a", "tls").expect("copy");
    copy["data"]["tls.key"] = json!("SEFORA==");
    cluster.server.update(copy);
    cluster.wait_for(&skiff, "the Secret copy following its source", || {
        cluster.secret_at("team-a", "tls").is_some_and(|c| {
            c["data"] == json!({"tls.crt": "TkVX", "tls.key": "S0VZ"})
                && c["type"] == "kubernetes.io/tls"
        })
    });
}

#[test]
fn a_configmap_copy_keeps_its_binary_data() {
    let mut cluster = Cluster::new("binary");
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster
        .server
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "blobs", "namespace": HOME},
        "data": {"text": "hello"}, "binaryData": {"bin": "AAECAw=="}}));
    cluster.mirror_to_teams("blobs", "ConfigMap", "blobs");
    let skiff = cluster.start(&[]);

    cluster.wait_ready(&skiff, HOME, "blobs", "True", "Synced");
    let copy = cluster.configmap_at("team-a", "blobs").expect("copy");
    assert_eq!(copy["binaryData"], json!({"bin": "AAECAw=="}), "{copy}");
    assert_eq!(copy["data"], json!({"text": "hello"}), "{copy}");
}

#[test]
fn a_target_name_renames_the_copies() {
    let mut cluster = Cluster::new("target");
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster.configmap(HOME, "app-ca", json!({"ca.crt": "PEM"}));
    cluster
        .server
        .insert(json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
        "metadata": {"name": "ca", "namespace": HOME},
        "spec": {"source": {"kind": "ConfigMap", "name": "app-ca"}, "targetName": "trusted-ca",
            "namespaceSelector": {"matchLabels": {"team": "yes"}}}}));
    let skiff = cluster.start(&[]);

    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    assert!(cluster.configmap_at("team-a", "trusted-ca").is_some());
    assert!(cluster.configmap_at("team-a", "app-ca").is_none());
}
