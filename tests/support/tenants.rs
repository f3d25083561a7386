//! Two tenants sharing one skiff, for the fairness test and benchmark: `tenant-a`'s Mirrors
//! fan out into the namespaces `a-…`; `tenant-b`'s one Mirror, created while they run, copies
//! into `b-…`. Both are source namespaces of the admin's (`--source-namespaces`), each a flow.

use super::cluster::Cluster;
use super::fake::RequestRecord;
use serde_json::json;

pub const SOURCE_NAMESPACES: &str = "--source-namespaces=tenant-a,tenant-b";

/// The two tenants' namespaces, `a-0…` and `b-0…`, tenant-a's `mirrors` Mirrors each into
/// every `a-…`, and tenant-b's source.
pub fn two_tenants(cluster: &Cluster, mirrors: usize, big: usize, small: usize) {
    for ns in ["tenant-a", "tenant-b"] {
        cluster.namespace(ns, json!({}));
    }
    cluster.namespaces("a", big, json!({"to": "a"}));
    cluster.namespaces("b", small, json!({"to": "b"}));
    for i in 0..mirrors {
        let source = format!("src-{i}");
        cluster.configmap("tenant-a", &source, json!({"k": "v"}));
        let selector = json!({"matchLabels": {"to": "a"}});
        cluster.mirror(
            "tenant-a",
            &format!("m-{i}"),
            "ConfigMap",
            &source,
            selector,
        );
    }
    cluster.configmap("tenant-b", "src", json!({"k": "v"}));
}

/// tenant-b's Mirror, into every `b-…`.
pub fn small_mirror(cluster: &Cluster) {
    let selector = json!({"matchLabels": {"to": "b"}});
    cluster.mirror("tenant-b", "m", "ConfigMap", "src", selector);
}

/// The copy creates in the namespaces `{prefix}-…` ("a" or "b"), in the order received.
pub fn creates<'a>(records: &'a [RequestRecord], prefix: &str) -> Vec<&'a RequestRecord> {
    let path = format!("/api/v1/namespaces/{prefix}-");
    let mut creates: Vec<_> = records
        .iter()
        .filter(|r| r.method == "POST" && r.path.starts_with(&path))
        .collect();
    creates.sort_by_key(|r| r.received);
    creates
}
