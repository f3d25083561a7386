//! Writes of a big source hold none of its content: its creates and its updates share the
//! content serialized once and are answered with metadata only, so both go out with the full
//! count in flight.

use crate::support::cluster::{Cluster, HOME, describe};
use crate::support::fake::{Fault, RequestClass, RequestRecord};
use crate::support::skiff::eventually;
use serde_json::json;
use skiff::kube::METADATA_ONLY;
use std::time::Duration;

const NAMESPACES: usize = 24;
/// Long enough that the writes allowed are all in flight at once.
const ANSWER_AFTER: Duration = Duration::from_millis(250);

/// The most copy writes of `method` the server was answering at one moment.
fn most_at_once(records: &[RequestRecord], method: &str) -> usize {
    let writes: Vec<_> = records
        .iter()
        .filter(|r| r.method == method && r.path.starts_with("/api/v1/namespaces/team-"))
        .collect();
    assert!(writes.len() >= NAMESPACES, "{}", describe(records));
    writes
        .iter()
        .map(|w| {
            writes
                .iter()
                .filter(|o| o.received <= w.received && o.answered.is_none_or(|a| a > w.received))
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn a_900_kb_source_is_created_and_updated_with_many_writes_in_flight() {
    let mut cluster = Cluster::new("big");
    let selected = cluster.namespaces("team", NAMESPACES, json!({"team": "yes"}));
    let content = |fill: &str| json!({ "ca.crt": fill.repeat(900 * 1024) });
    let source = cluster.configmap(HOME, "app-ca", content("a"));
    let skiff = cluster.start(&[]);
    cluster.wait_watching(&skiff, 1);
    // Each look reads 24 objects of 900 KB from the fake server: a few looks a second.
    let copies_hold = |fill: &str| {
        std::thread::sleep(Duration::from_millis(200));
        let wanted = content(fill);
        selected.iter().all(|ns| {
            cluster
                .configmap_at(ns, "app-ca")
                .is_some_and(|c| c["data"] == wanted)
        })
    };
    let wait = |what: &str, fill: &str| {
        let done = eventually(Duration::from_secs(60), || copies_hold(fill));
        assert!(done, "timed out waiting for {what}; log:\n{}", skiff.logs());
    };
    cluster.server.set_fault(
        RequestClass::Matching("/configmaps"),
        Fault::Delay(ANSWER_AFTER),
    );
    cluster.mirror_to_teams("ca", "ConfigMap", "app-ca");
    wait("every copy created", "a");
    let mut edited = source;
    edited["data"] = content("b");
    cluster.server.update(edited);
    wait("every copy updated", "b");
    cluster.server.clear_faults();
    let records = cluster.requests_since(0);
    let creates = most_at_once(&records, "POST");
    assert!(creates > 8, "only {creates} creates in flight at once");
    // Before updates shared the content: 4 at once, 8 MiB over a patch and an answer of
    // 900 KB each.
    let updates = most_at_once(&records, "PATCH");
    assert!(updates > 8, "only {updates} updates in flight at once");
}

#[test]
fn copy_creates_and_updates_ask_for_the_metadata_only() {
    let mut cluster = Cluster::new("accept");
    let selected = cluster.namespaces("team", 3, json!({"team": "yes"}));
    let mut source = cluster.configmap(HOME, "app-ca", json!({"ca.crt": "PEM"}));
    cluster.mirror_to_teams("ca", "ConfigMap", "app-ca");
    let skiff = cluster.start(&[]);
    let copies_hold = |pem: &str| {
        selected.iter().all(|ns| {
            cluster
                .configmap_at(ns, "app-ca")
                .is_some_and(|c| c["data"]["ca.crt"] == pem)
        })
    };
    cluster.wait_for(&skiff, "a copy in every namespace", || copies_hold("PEM"));
    source["data"] = json!({"ca.crt": "PEM 2"});
    cluster.server.update(source);
    cluster.wait_for(&skiff, "every copy updated", || copies_hold("PEM 2"));
    for method in ["POST", "PATCH"] {
        let writes: Vec<_> = cluster
            .writes_since(0)
            .into_iter()
            .filter(|r| r.method == method && r.path.contains("/configmaps"))
            .collect();
        assert_eq!(writes.len(), 3, "{}", describe(&writes));
        for write in writes {
            assert_eq!(
                write.accept.as_deref(),
                Some(METADATA_ONLY),
                "{method} {}",
                write.path
            );
        }
    }
}
