//! What the Mirror controller watches, seen from the server: memory must not grow with objects
//! skiff does not manage, so copies are watched by skiff's label only (Secret copies also by
//! each allowed name, as RBAC `resourceNames` requires) and sources only in the namespaces they
//! may come from. Widening either would fail here.

use crate::support::cluster::{Cluster, HOME};
use crate::support::fake::RequestRecord;
use serde_json::json;
use std::collections::HashMap;

const MANAGED: &str = "app.kubernetes.io/managed-by=skiff";
/// The Secret Mirror below copies to `tls`; Secret copies are off without this flag.
const SECRET_TARGETS: &str = "--secret-target-names=tls";

/// The field selector a cluster-wide read of `plural` must carry: none for ConfigMaps, the
/// allowed name for Secrets.
fn copy_fields(plural: &str) -> Option<&'static str> {
    (plural == "secrets").then_some("metadata.name=tls")
}

/// List and watch requests (GETs of collections) for `plural`, as (path, params).
fn reads_of(records: &[RequestRecord], plural: &str) -> Vec<(String, HashMap<String, String>)> {
    records
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with(&format!("/{plural}")))
        .map(|r| (r.path.clone(), r.params()))
        .collect()
}

/// Starts skiff with `flags` over a cluster with one Mirror of each kind, until both are Ready.
fn converged_requests(tag: &str, flags: &[&str]) -> Vec<RequestRecord> {
    let mut cluster = Cluster::new(tag);
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster.namespace("shared", json!({}));
    cluster.configmap(HOME, "app-ca", json!({"ca.crt": "PEM"}));
    cluster
        .server
        .insert(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "tls", "namespace": HOME}, "data": {"k": "dg=="}}));
    cluster.mirror_to_teams("ca", "ConfigMap", "app-ca");
    cluster.mirror_to_teams("tls", "Secret", "tls");
    let mut flags = flags.to_vec();
    flags.push(SECRET_TARGETS);
    let skiff = cluster.start(&flags);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    cluster.wait_ready(&skiff, HOME, "tls", "True", "Synced");
    cluster.server.requests()
}

#[test]
fn copies_are_watched_by_label_and_sources_only_in_their_namespace() {
    let records = converged_requests("watches", &[]);
    for plural in ["configmaps", "secrets"] {
        let reads = reads_of(&records, plural);
        let cluster_wide: Vec<_> = reads
            .iter()
            .filter(|(path, _)| *path == format!("/api/v1/{plural}"))
            .collect();
        assert!(
            cluster_wide.iter().any(|(_, p)| p.contains_key("watch")),
            "no cluster-wide {plural} copy watch: {reads:?}"
        );
        for (path, p) in &cluster_wide {
            assert_eq!(
                p.get("labelSelector").map(String::as_str),
                Some(MANAGED),
                "cluster-wide {plural} read without skiff's label: {path} {p:?}"
            );
            assert_eq!(
                p.get("fieldSelector").map(String::as_str),
                copy_fields(plural),
                "cluster-wide {plural} read: {path} {p:?}"
            );
        }
        let home = format!("/api/v1/namespaces/{HOME}/{plural}");
        let sources: Vec<_> = reads.iter().filter(|(path, _)| *path == home).collect();
        assert!(
            sources.iter().any(|(_, p)| p.contains_key("watch")),
            "no {plural} source watch in {HOME}: {reads:?}"
        );
        let elsewhere: Vec<_> = reads
            .iter()
            .filter(|(path, _)| *path != home && !path.starts_with(&format!("/api/v1/{plural}")))
            .collect();
        assert!(
            elsewhere.is_empty(),
            "{plural} read outside the source namespace: {elsewhere:?}"
        );
    }
}

#[test]
fn each_listed_source_namespace_gets_its_own_namespaced_watch() {
    let records = converged_requests("watch-list", &["--source-namespaces=skiff-system,shared"]);
    for plural in ["configmaps", "secrets"] {
        let reads = reads_of(&records, plural);
        for ns in [HOME, "shared"] {
            let path = format!("/api/v1/namespaces/{ns}/{plural}");
            assert!(
                reads
                    .iter()
                    .any(|(p, q)| *p == path && q.contains_key("watch")),
                "no {plural} watch in {ns}: {reads:?}"
            );
        }
        for (path, p) in reads
            .iter()
            .filter(|(path, _)| *path == format!("/api/v1/{plural}"))
        {
            assert_eq!(
                p.get("labelSelector").map(String::as_str),
                Some(MANAGED),
                "cluster-wide {plural} read without skiff's label: {path} {p:?}"
            );
        }
    }
}
