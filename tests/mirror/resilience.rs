//! Lost watches lose no event: changes made while every watch is down (resumed from the last
//! resourceVersion, or relisted after 410 Gone) all end up reconciled.

use crate::support::cluster::{Cluster, FINALIZER, HOME, describe};
use crate::support::fake::{Fault, RequestClass};
use crate::support::skiff::Skiff;
use serde_json::json;
use std::time::Duration;

/// How the watches are lost.
#[derive(Clone, Copy, PartialEq)]
enum Outage {
    /// Connections drop; re-watching from the last version works at once.
    Dropped,
    /// Connections drop and the server refuses to answer for a while.
    DroppedAndRefused,
    /// As `DroppedAndRefused`, and the history is compacted: re-watching gets 410 Gone.
    Expired,
}

/// Two Mirrors: "ca" over team-0..3, "solo" over one namespace whose only change in the outage
/// is the loss of its copy (nothing else would make it reconcile again).
fn converged(tag: &str) -> (Cluster, Skiff) {
    let mut cluster = Cluster::new(tag);
    cluster.namespaces("team", 4, json!({"team": "yes"}));
    cluster.namespace("late", json!({"team": "not-yet"}));
    cluster.namespace("solo-ns", json!({"solo": "yes"}));
    cluster.configmap(HOME, "app-ca", json!({"ca.crt": "v1"}));
    cluster.configmap(HOME, "solo", json!({"k": "v"}));
    cluster.mirror_to_teams("ca", "ConfigMap", "app-ca");
    cluster.mirror(
        HOME,
        "solo",
        "ConfigMap",
        "solo",
        json!({"matchLabels": {"solo": "yes"}}),
    );
    let skiff = cluster.start(&[]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    cluster.wait_ready(&skiff, HOME, "solo", "True", "Synced");
    cluster.wait_for(&skiff, "4 copies of ca", || {
        cluster.mirror_object(HOME, "ca").expect("mirror")["status"]["synced"] == 4
    });
    (cluster, skiff)
}

fn lose_watches_and_change_everything(cluster: &Cluster, outage: Outage) {
    if outage != Outage::Dropped {
        cluster
            .server
            .set_fault(RequestClass::Other, Fault::ServerError);
    }
    cluster.server.close_watches();

    let mut source = cluster.configmap_at(HOME, "app-ca").expect("source");
    source["data"] = json!({"ca.crt": "v2"});
    cluster.server.update(source);
    cluster.relabel_namespace("late", json!({"team": "yes"}));
    cluster.relabel_namespace("team-3", json!({"team": "no"}));
    cluster.namespace("team-new", json!({"team": "yes"}));
    cluster
        .server
        .remove("/api/v1/namespaces/team-0/configmaps/app-ca");
    let mut edited = cluster.configmap_at("team-1", "app-ca").expect("copy");
    edited["data"] = json!({"ca.crt": "TAMPERED"});
    cluster.server.update(edited);
    cluster
        .server
        .remove("/api/v1/namespaces/solo-ns/configmaps/solo");

    if outage == Outage::Expired {
        cluster.server.compact();
    }
    if outage != Outage::Dropped {
        std::thread::sleep(Duration::from_millis(300));
        cluster.server.clear_faults();
    }
}

fn assert_end_state(cluster: &Cluster, skiff: &Skiff) {
    let wanted = ["team-0", "team-1", "team-2", "late", "team-new"];
    cluster.wait_for(skiff, "every selected copy at v2", || {
        wanted.iter().all(|ns| {
            cluster
                .configmap_at(ns, "app-ca")
                .is_some_and(|c| c["data"] == json!({"ca.crt": "v2"}))
        })
    });
    cluster.wait_for(skiff, "the deselected copy deleted", || {
        cluster.configmap_at("team-3", "app-ca").is_none()
    });
    cluster.wait_for(skiff, "the solo copy recreated", || {
        cluster.configmap_at("solo-ns", "solo").is_some()
    });
    cluster.wait_for(skiff, "status 5 of 5", || {
        let status = &cluster.mirror_object(HOME, "ca").expect("mirror")["status"];
        status["selected"] == 5 && status["synced"] == 5
    });
    cluster.wait_ready(skiff, HOME, "ca", "True", "Synced");
}

#[test]
fn dropped_watches_resume_without_losing_events() {
    let (cluster, skiff) = converged("dropped");
    lose_watches_and_change_everything(&cluster, Outage::Dropped);
    assert_end_state(&cluster, &skiff);
}

#[test]
fn watches_down_for_a_while_catch_up_on_every_change() {
    let (cluster, skiff) = converged("refused");
    lose_watches_and_change_everything(&cluster, Outage::DroppedAndRefused);
    assert_end_state(&cluster, &skiff);
}

#[test]
fn expired_watches_relist_without_losing_events() {
    let (cluster, skiff) = converged("expired");
    let mark = cluster.server.requests().len();
    lose_watches_and_change_everything(&cluster, Outage::Expired);
    assert_end_state(&cluster, &skiff);
    // 410 arrives as an ERROR event in a 200 watch; the watchers then list again.
    let relists = cluster
        .requests_since(mark)
        .into_iter()
        .filter(|r| r.method == "GET" && !r.watch)
        .count();
    assert!(
        relists > 0 && skiff.logs().contains("relisting"),
        "no watch expired: the test lost its point; log:\n{}",
        skiff.logs()
    );
}

/// Requests answered 500 while a Mirror's copies are created.
const FAULTS: usize = 6;

#[test]
fn failed_writes_are_retried_until_every_copy_exists() {
    let mut cluster = Cluster::new("write-errors");
    let selected = cluster.namespaces("team", 10, json!({"team": "yes"}));
    cluster.configmap(HOME, "app-ca", json!({"ca.crt": "PEM"}));
    let skiff = cluster.start(&[]);
    cluster.wait_watching(&skiff, 1);

    let mark = cluster.server.requests().len();
    cluster
        .server
        .set_fault_times(RequestClass::Other, Fault::ServerError, FAULTS);
    // The finalizer is there already, so the faults meet the copies' creates.
    cluster
        .server
        .insert(json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
        "metadata": {"name": "ca", "namespace": HOME, "finalizers": [FINALIZER]},
        "spec": {"source": {"kind": "ConfigMap", "name": "app-ca"},
            "namespaceSelector": {"matchLabels": {"team": "yes"}}}}));
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    for ns in &selected {
        assert!(
            cluster.configmap_at(ns, "app-ca").is_some(),
            "no copy in {ns}"
        );
    }
    let failed: Vec<_> = cluster
        .requests_since(mark)
        .into_iter()
        .filter(|r| r.status == 500)
        .collect();
    assert!(
        failed
            .iter()
            .all(|r| r.method == "POST" && r.path.ends_with("/configmaps")),
        "{}",
        describe(&failed)
    );
    let failed = failed.len();
    assert_eq!(
        failed, FAULTS,
        "the faults did not hit: the test lost its point"
    );
}
