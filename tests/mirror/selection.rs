//! Which namespaces a Mirror selects: its selector, followed as labels change; never an
//! excluded or Terminating namespace; and only sources from the allowed namespaces.

use crate::support::cluster::{Cluster, HOME, describe};
use serde_json::json;

fn team_mirror(cluster: &Cluster) {
    cluster.team_ca_mirror();
}

#[test]
fn a_label_change_selects_and_then_deselects_a_namespace() {
    let mut cluster = Cluster::new("relabel");
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster.namespace("late", json!({"team": "no"}));
    team_mirror(&cluster);
    let skiff = cluster.start(&[]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    assert!(cluster.configmap_at("late", "app-ca").is_none());

    cluster.relabel_namespace("late", json!({"team": "yes"}));
    cluster.wait_for(&skiff, "a copy once the label matches", || {
        cluster.configmap_at("late", "app-ca").is_some()
    });
    cluster.wait_for(&skiff, "selected = 2", || {
        cluster.mirror_object(HOME, "ca").expect("mirror")["status"]["synced"] == 2
    });

    cluster.relabel_namespace("late", json!({"team": "no"}));
    cluster.wait_for(
        &skiff,
        "the copy deleted once the label stops matching",
        || cluster.configmap_at("late", "app-ca").is_none(),
    );
    cluster.wait_for(&skiff, "selected = 1", || {
        let status = &cluster.mirror_object(HOME, "ca").expect("mirror")["status"];
        status["selected"] == 1 && status["synced"] == 1
    });
    assert!(cluster.configmap_at("team-a", "app-ca").is_some());
}

#[test]
fn match_expressions_select_namespaces() {
    let mut cluster = Cluster::new("expressions");
    cluster.namespace("prod-a", json!({"env": "prod"}));
    cluster.namespace("stage-a", json!({"env": "stage"}));
    cluster.namespace("dev-a", json!({"env": "dev"}));
    cluster.namespace("bare", json!({}));
    cluster.configmap(HOME, "app-ca", json!({"ca.crt": "PEM"}));
    cluster.mirror(
        HOME,
        "ca",
        "ConfigMap",
        "app-ca",
        json!({"matchExpressions": [
        {"key": "env", "operator": "In", "values": ["prod", "stage"]}]}),
    );
    let skiff = cluster.start(&[]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    assert!(cluster.configmap_at("prod-a", "app-ca").is_some());
    assert!(cluster.configmap_at("stage-a", "app-ca").is_some());
    assert!(cluster.configmap_at("dev-a", "app-ca").is_none());
    assert!(cluster.configmap_at("bare", "app-ca").is_none());
}

#[test]
fn an_excluded_namespace_gets_no_copy_and_loses_the_one_it_had() {
    let mut cluster = Cluster::new("exclude");
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster.namespace(
        "opted-out",
        json!({"team": "yes", "skiff.dev/exclude": "true"}),
    );
    cluster.namespace("team-b", json!({"team": "yes"}));
    team_mirror(&cluster);
    let skiff = cluster.start(&[]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    assert!(cluster.configmap_at("opted-out", "app-ca").is_none());
    let status = &cluster.mirror_object(HOME, "ca").expect("mirror")["status"];
    assert_eq!(status["selected"], 2, "{status}");

    cluster.relabel_namespace(
        "team-b",
        json!({"team": "yes", "skiff.dev/exclude": "true"}),
    );
    cluster.wait_for(
        &skiff,
        "the copy in the newly excluded namespace deleted",
        || cluster.configmap_at("team-b", "app-ca").is_none(),
    );
    assert!(cluster.configmap_at("team-a", "app-ca").is_some());
}

#[test]
fn an_empty_selector_selects_every_namespace_but_the_mirrors_own() {
    let mut cluster = Cluster::new("everything");
    cluster.namespace("a", json!({}));
    cluster.namespace("b", json!({"x": "y"}));
    cluster.configmap(HOME, "app-ca", json!({"ca.crt": "PEM"}));
    cluster.mirror(HOME, "ca", "ConfigMap", "app-ca", json!({}));
    let skiff = cluster.start(&[]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    let status = &cluster.mirror_object(HOME, "ca").expect("mirror")["status"];
    assert_eq!(status["selected"], 2, "{status}");
    assert!(cluster.configmap_at("a", "app-ca").is_some());
    assert!(cluster.configmap_at("b", "app-ca").is_some());
}

#[test]
fn terminating_namespaces_are_skipped() {
    let mut cluster = Cluster::new("terminating");
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster
        .server
        .insert(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "phase-terminating", "labels": {"team": "yes"}},
        "status": {"phase": "Terminating"}}));
    cluster
        .server
        .insert(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "being-deleted", "labels": {"team": "yes"},
            "finalizers": ["kubernetes"]}}));
    cluster.server.remove("/api/v1/namespaces/being-deleted");
    let deleting = cluster
        .server
        .get("/api/v1/namespaces/being-deleted")
        .expect("held by its finalizer");
    assert!(deleting["metadata"]["deletionTimestamp"].is_string());
    team_mirror(&cluster);
    let skiff = cluster.start(&[]);

    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    assert!(cluster.configmap_at("team-a", "app-ca").is_some());
    let status = &cluster.mirror_object(HOME, "ca").expect("mirror")["status"];
    assert_eq!(status["selected"], 1, "{status}");
    let tried: Vec<_> = cluster
        .writes_since(0)
        .into_iter()
        .filter(|r| r.path.contains("/phase-terminating/") || r.path.contains("/being-deleted/"))
        .collect();
    assert!(
        tried.is_empty(),
        "wrote into a Terminating namespace:\n{}",
        describe(&tried)
    );
}

#[test]
fn a_mirror_outside_the_source_namespaces_writes_no_copy() {
    let mut cluster = Cluster::new("not-allowed");
    cluster.namespace("elsewhere", json!({}));
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster.team_ca_mirror_in("elsewhere");
    let skiff = cluster.start(&[]);

    cluster.wait_ready(
        &skiff,
        "elsewhere",
        "ca",
        "False",
        "SourceNamespaceNotAllowed",
    );
    let ready = cluster.ready("elsewhere", "ca");
    assert!(
        ready["message"].as_str().unwrap_or_default().contains(HOME),
        "the message names the allowed namespaces: {ready}"
    );
    // Only the status says why; no copy, and no finalizer to wait on when it is deleted.
    let writes = cluster.writes_since(0);
    let status_path = "/apis/skiff.dev/v1alpha1/namespaces/elsewhere/mirrors/ca/status";
    assert!(
        writes
            .iter()
            .all(|r| r.method == "PUT" && r.path == status_path),
        "wrote more than the status:\n{}",
        describe(&writes)
    );
    assert!(cluster.configmap_at("team-a", "app-ca").is_none());
}

#[test]
fn source_namespaces_flag_allows_the_listed_namespaces() {
    let mut cluster = Cluster::new("allowed");
    cluster.namespace("shared", json!({}));
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster.team_ca_mirror_in("shared");
    let skiff = cluster.start(&["--source-namespaces=skiff-system,shared"]);

    cluster.wait_ready(&skiff, "shared", "ca", "True", "Synced");
    assert!(cluster.configmap_at("team-a", "app-ca").is_some());
}

#[test]
fn source_namespaces_star_allows_every_namespace() {
    let mut cluster = Cluster::new("star");
    cluster.namespace("anywhere", json!({}));
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster.team_ca_mirror_in("anywhere");
    let skiff = cluster.start(&["--source-namespaces=*"]);

    cluster.wait_ready(&skiff, "anywhere", "ca", "True", "Synced");
    assert!(cluster.configmap_at("team-a", "app-ca").is_some());
}

#[test]
fn a_mirror_without_a_selector_selects_nothing() {
    let mut cluster = Cluster::new("no-selector");
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster.configmap(HOME, "app-ca", json!({"ca.crt": "PEM"}));
    cluster
        .server
        .insert(json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
        "metadata": {"name": "ca", "namespace": HOME},
        "spec": {"source": {"kind": "ConfigMap", "name": "app-ca"}}}));
    let skiff = cluster.start(&[]);

    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    let status = &cluster.mirror_object(HOME, "ca").expect("mirror")["status"];
    assert_eq!(status["selected"], 0, "{status}");
    assert!(cluster.configmap_at("team-a", "app-ca").is_none());
}
