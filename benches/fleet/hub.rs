//! What the hub's API server says about its members: the requests their identities made
//! (its audit log), its open watches and storage size (its `/metrics`), its memory
//! (`/proc/<pid>/status`), and the objects it keeps for them, listed and measured.

use crate::footprint::Footprint;
use crate::support::audit::AuditEvent;
use crate::support::control_plane::ControlPlane;
use crate::support::kubectl::https_get;
use crate::support::scrape::sum_samples;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::SystemTime;

/// What the hub's API server holds and serves, at one moment.
#[derive(Clone, Copy)]
pub struct Sample {
    pub memory: Footprint,
    /// Open watches (`apiserver_longrunning_requests{verb="WATCH"}`).
    pub watches: f64,
    /// Of them, on Placements and on Secrets.
    pub placement_watches: f64,
    pub secret_watches: f64,
    /// etcd's database size as the API server last read it (`apiserver_storage_size_bytes`).
    pub storage_bytes: f64,
}

pub fn sample(hub: &ControlPlane) -> Sample {
    let pid = hub.apiserver_pid().expect("the hub's kube-apiserver runs");
    let memory = Footprint::of(pid);
    let metrics = https_get(hub.url(), hub.ca_pem(), "/metrics", Some(hub.admin_token()))
        .unwrap_or_else(|e| panic!("GET the hub's /metrics: {e}"));
    assert_eq!(metrics.status, 200, "GET the hub's /metrics");
    let watches = |resource: Option<&str>| {
        let mut labels = vec![("verb", "WATCH")];
        labels.extend(resource.map(|r| ("resource", r)));
        sum_samples(&metrics.body, "apiserver_longrunning_requests", &labels)
    };
    Sample {
        memory,
        watches: watches(None),
        placement_watches: watches(Some("placements")),
        secret_watches: watches(Some("secrets")),
        storage_bytes: sum_samples(&metrics.body, "apiserver_storage_size_bytes", &[]),
    }
}

/// Whether the request is a member's: a `skiff-member` ServiceAccount of a member namespace.
fn is_member(e: &AuditEvent) -> bool {
    e.user.starts_with("system:serviceaccount:") && e.user.ends_with(":skiff-member")
}

/// Each request once: a watch when it opened, anything else when it completed.
fn counted_once(e: &AuditEvent) -> bool {
    match e.verb.as_str() {
        "watch" => e.stage == "ResponseStarted",
        _ => e.stage == "ResponseComplete",
    }
}

/// What a member's request to its hub is for.
fn class(e: &AuditEvent) -> String {
    let on = |resource: &str| e.uri.contains(&format!("/{resource}"));
    match e.verb.as_str() {
        "watch" if on("placements") => "watch Placements (re-open)".to_owned(),
        "watch" if on("secrets") => "watch carrier Secrets (re-open)".to_owned(),
        "patch" | "update" if on("leases/") => "heartbeat (Lease patch)".to_owned(),
        "patch" | "update" if on("placements/") && e.uri.contains("/status") => {
            "report (Placement status patch)".to_owned()
        }
        "list" => "LIST (relist)".to_owned(),
        verb => {
            let path = e.uri.split('?').next().unwrap_or_default();
            format!("other: {verb} {path}")
        }
    }
}

/// The members' requests received in `[since, until)`, by what they are for.
pub fn member_requests(
    hub: &ControlPlane,
    since: SystemTime,
    until: SystemTime,
) -> BTreeMap<String, usize> {
    let mut classes = BTreeMap::new();
    let audit = hub.audit();
    let window = audit
        .iter()
        .filter(|e| is_member(e) && counted_once(e))
        .filter(|e| e.received >= since && e.received < until);
    for event in window {
        *classes.entry(class(event)).or_default() += 1;
    }
    classes
}

/// The hub skiff's Placement writes (the fan-out of an edit) received from `since` on: how
/// many, and when the first and the last arrived.
pub fn placement_writes(
    hub: &ControlPlane,
    since: SystemTime,
) -> (usize, Option<SystemTime>, Option<SystemTime>) {
    let audit = hub.audit();
    let writes: Vec<SystemTime> = audit
        .iter()
        .filter(|e| e.user == crate::support::control_plane::OPERATOR_USER)
        .filter(|e| e.is_write() && e.uri.contains("/placements/") && !e.uri.contains("/status"))
        .filter(|e| e.stage == "ResponseComplete" && e.received >= since)
        .map(|e| e.received)
        .collect();
    let first = writes.iter().min().copied();
    (writes.len(), first, writes.iter().max().copied())
}

/// What the hub keeps for its members, kind by kind.
pub struct Stored {
    pub kind: &'static str,
    pub objects: usize,
    /// Their JSON as the API server serves it (managedFields included).
    pub bytes: usize,
}

/// The objects a member's admission and its Placements put on the hub, and how to list them.
const KEPT: [(&str, &str); 5] = [
    (
        "Namespace",
        "/api/v1/namespaces?labelSelector=skiff.dev%2Fmember",
    ),
    (
        "ServiceAccount",
        "/api/v1/serviceaccounts?fieldSelector=metadata.name%3Dskiff-member",
    ),
    (
        "RoleBinding",
        "/apis/rbac.authorization.k8s.io/v1/rolebindings?fieldSelector=metadata.name%3Dskiff-fleet-member",
    ),
    (
        "Lease (heartbeat)",
        "/apis/coordination.k8s.io/v1/leases?labelSelector=skiff.dev%2Fheartbeat%3Dmember",
    ),
    ("Placement", "/apis/skiff.dev/v1alpha1/placements"),
];

pub fn stored(hub: &ControlPlane) -> Vec<Stored> {
    KEPT.iter()
        .map(|(kind, path)| {
            let answer = https_get(hub.url(), hub.ca_pem(), path, Some(hub.admin_token()))
                .unwrap_or_else(|e| panic!("GET {path}: {e}"));
            assert_eq!(answer.status, 200, "GET {path}: {}", answer.body);
            let list: Value = serde_json::from_str(&answer.body).expect("a list");
            let items = list["items"].as_array().cloned().unwrap_or_default();
            Stored {
                kind,
                objects: items.len(),
                bytes: items.iter().map(|item| item.to_string().len()).sum(),
            }
        })
        .collect()
}
