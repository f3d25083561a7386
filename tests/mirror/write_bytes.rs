//! Writes in flight are bounded by their bytes as well as by their count: a big source fans out
//! a few copies at a time, a small one with the full count.

use crate::support::cluster::{Cluster, describe};
use crate::support::fake::{Fault, RequestClass, RequestRecord};
use serde_json::json;
use skiff::kube::METADATA_ONLY;
use std::time::Duration;

const NAMESPACES: usize = 24;
/// Long enough that the writes the budget allows are all in flight at once.
const ANSWER_AFTER: Duration = Duration::from_millis(250);

/// The most copy creates in `prefix`-namespaces the server was answering at one moment.
fn most_creates_at_once(records: &[RequestRecord], prefix: &str) -> usize {
    let path = format!("/api/v1/namespaces/{prefix}-");
    let creates: Vec<_> = records
        .iter()
        .filter(|r| r.method == "POST" && r.path.starts_with(&path))
        .collect();
    assert_eq!(creates.len(), NAMESPACES, "one create per namespace");
    creates
        .iter()
        .map(|c| {
            creates
                .iter()
                .filter(|o| o.received <= c.received && o.answered.is_none_or(|a| a > c.received))
                .count()
        })
        .max()
        .unwrap_or(0)
}

/// Fans `data` out into [`NAMESPACES`] namespaces named `prefix-N`, each create answered after
/// [`ANSWER_AFTER`]; how many were in flight at once at most.
fn fan_out(prefix: &str, data: serde_json::Value) -> usize {
    let mut cluster = Cluster::new(prefix);
    let selected = cluster.namespaces(prefix, NAMESPACES, json!({"team": "yes"}));
    cluster.configmap("skiff-system", "app-ca", data);
    let fault = Fault::Delay(ANSWER_AFTER);
    let class = RequestClass::Matching("/configmaps");
    let skiff = cluster.start(&[]);
    cluster.wait_watching(&skiff, 1);
    cluster.server.set_fault(class, fault);
    cluster.mirror_to_teams("ca", "ConfigMap", "app-ca");
    cluster.wait_for(&skiff, "a copy in every namespace", || {
        selected
            .iter()
            .all(|ns| cluster.configmap_at(ns, "app-ca").is_some())
    });
    cluster.server.clear_faults();
    most_creates_at_once(&cluster.requests_since(0), prefix)
}

#[test]
fn a_900_kb_source_fans_out_with_few_writes_in_flight_and_a_small_one_with_many() {
    let big = "x".repeat(900 * 1024);
    let at_once = fan_out("big", json!({ "ca.crt": big }));
    // 8 MiB over a body and a reply of 900 KB each.
    assert!(
        (1..=4).contains(&at_once),
        "{at_once} writes of 900 KB in flight at once"
    );
    let at_once = fan_out("small", json!({ "ca.crt": "PEM" }));
    assert!(at_once > 8, "only {at_once} small writes in flight at once");
}

#[test]
fn copy_creates_ask_for_the_metadata_only() {
    let mut cluster = Cluster::new("accept");
    let selected = cluster.namespaces("team", 3, json!({"team": "yes"}));
    cluster.team_ca_mirror();
    let skiff = cluster.start(&[]);
    cluster.wait_for(&skiff, "a copy in every namespace", || {
        selected
            .iter()
            .all(|ns| cluster.configmap_at(ns, "app-ca").is_some())
    });
    let creates: Vec<_> = cluster
        .writes_since(0)
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.contains("/configmaps"))
        .collect();
    assert_eq!(creates.len(), 3, "{}", describe(&creates));
    for create in creates {
        assert_eq!(
            create.accept.as_deref(),
            Some(METADATA_ONLY),
            "{}",
            create.path
        );
    }
}
