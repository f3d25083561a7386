//! Secret copies are opt-in and limited by name (`--secret-target-names`), seen from the server:
//! without names skiff sends no request about any Secret and a Secret Mirror says how to enable
//! copies; with names, a Mirror to another name writes nothing and each allowed name is watched
//! on its own, as the component's RBAC (`resourceNames`) allows and nothing wider.

use crate::support::cluster::{Cluster, FINALIZER, HOME};
use crate::support::fake::RequestRecord;
use serde_json::json;
use std::collections::BTreeSet;

const MANAGED: &str = "app.kubernetes.io/managed-by=skiff";

/// A ConfigMap Mirror `ca` and a Secret Mirror `tls` (source and target `tls`), both to the
/// namespaces labelled `team: yes`.
fn cluster_with_both_kinds(tag: &str) -> Cluster {
    let cluster = Cluster::new(tag);
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster.namespace("team-b", json!({"team": "yes"}));
    cluster.team_ca_mirror();
    cluster
        .server
        .insert(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "tls", "namespace": HOME}, "data": {"k": "dg=="}}));
    cluster.mirror_to_teams("tls", "Secret", "tls");
    cluster
}

fn touches_secrets(r: &RequestRecord) -> bool {
    r.path.contains("/secrets")
}

fn message(cluster: &Cluster, mirror: &str) -> String {
    cluster.ready(HOME, mirror)["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn has_finalizer(cluster: &Cluster, mirror: &str) -> bool {
    let m = cluster.mirror_object(HOME, mirror).expect("mirror");
    m["metadata"]["finalizers"].to_string().contains(FINALIZER)
}

#[test]
fn without_secret_target_names_no_secret_is_read_and_a_secret_mirror_says_how_to_enable() {
    let mut cluster = cluster_with_both_kinds("secrets-off");
    let skiff = cluster.start(&[]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    cluster.wait_ready(&skiff, HOME, "tls", "False", "SecretTargetsDisabled");
    let text = message(&cluster, "tls");
    for part in [
        "--secret-target-names",
        "manifests/components/secret-targets",
        "tls",
    ] {
        assert!(text.contains(part), "message lacks {part:?}: {text}");
    }
    let secret_requests: Vec<_> = cluster
        .server
        .requests()
        .into_iter()
        .filter(touches_secrets)
        .map(|r| format!("{} {}?{}", r.method, r.path, r.query))
        .collect();
    assert!(
        secret_requests.is_empty(),
        "Secrets requested while Secret copies are off: {secret_requests:?}"
    );
    assert!(cluster.secret_at("team-a", "tls").is_none());
    assert!(
        !has_finalizer(&cluster, "tls"),
        "a refused Mirror got a finalizer"
    );
}

#[test]
fn a_secret_mirror_to_an_unlisted_name_writes_nothing_and_names_the_list() {
    let mut cluster = cluster_with_both_kinds("secrets-unlisted");
    let skiff = cluster.start(&["--secret-target-names=other,app-tls"]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    cluster.wait_ready(&skiff, HOME, "tls", "False", "SecretTargetNotAllowed");
    let text = message(&cluster, "tls");
    assert!(
        text.contains("tls is not in --secret-target-names (app-tls,other)"),
        "{text}"
    );
    let secret_writes: Vec<_> = cluster
        .server
        .requests()
        .into_iter()
        .filter(|r| touches_secrets(r) && r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(secret_writes.is_empty(), "{secret_writes:?}");
    assert!(!has_finalizer(&cluster, "tls"));
}

#[test]
fn each_allowed_name_is_watched_across_namespaces_by_name_and_label() {
    let mut cluster = cluster_with_both_kinds("secrets-by-name");
    let skiff = cluster.start(&["--secret-target-names=tls,spare"]);
    cluster.wait_ready(&skiff, HOME, "tls", "True", "Synced");
    for ns in ["team-a", "team-b"] {
        assert!(cluster.secret_at(ns, "tls").is_some(), "no copy in {ns}");
    }
    let copy_reads: Vec<_> = cluster
        .server
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path == "/api/v1/secrets")
        .map(|r| r.params())
        .collect();
    for params in &copy_reads {
        assert_eq!(
            params.get("labelSelector").map(String::as_str),
            Some(MANAGED),
            "{params:?}"
        );
    }
    let watched: BTreeSet<_> = copy_reads
        .iter()
        .filter(|p| p.contains_key("watch"))
        .filter_map(|p| p.get("fieldSelector").cloned())
        .collect();
    let listed: BTreeSet<_> = copy_reads
        .iter()
        .filter(|p| !p.contains_key("watch"))
        .filter_map(|p| p.get("fieldSelector").cloned())
        .collect();
    let names = BTreeSet::from(["metadata.name=spare".into(), "metadata.name=tls".into()]);
    assert_eq!(watched, names, "{copy_reads:?}");
    assert_eq!(listed, names, "{copy_reads:?}");
    assert!(
        copy_reads.iter().all(|p| p.contains_key("fieldSelector")),
        "a cluster-wide Secret read without a name: {copy_reads:?}"
    );
}
