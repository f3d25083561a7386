//! A relist is projected page by page, and no reconcile acts on a half-finished one: the binary,
//! its watches expired while namespaces were removed, added and relabelled, relists them over
//! several pages; a reconcile requested while a later page is held back writes nothing until
//! the list is complete, and then every change is reconciled.

use crate::support::cluster::{Cluster, HOME, describe};
use crate::support::fake::{Fault, RequestClass};
use serde_json::json;
use skiff::mirror::caches::NAMESPACE_PAGE;
use std::time::Duration;

/// How long the server holds back the second page of the namespace relist.
const HELD: Duration = Duration::from_secs(3);

#[test]
fn a_reconcile_requested_mid_relist_waits_for_the_whole_list() {
    let page = NAMESPACE_PAGE as usize;
    let mut cluster = Cluster::new("relist");
    for name in ["a-changed", "a-kept", "a-removed"] {
        cluster.namespace(name, json!({"team": "yes"}));
    }
    // Enough unselected namespaces that the relist takes two pages and `zz-added` is on the
    // second.
    cluster.namespaces("m", page, json!({}));
    cluster.team_ca_mirror();
    let skiff = cluster.start(&[]);
    // Settled: the status that says Synced is the last write of the start-up (a status with
    // `synced: 3` may come before it, from a reconcile still counting).
    cluster.wait_for(&skiff, "3 copies synced", || {
        cluster.mirror_object(HOME, "ca").expect("mirror")["status"]["synced"] == 3
    });
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");

    // Every watch is lost and expires while the namespaces change.
    cluster
        .server
        .set_fault(RequestClass::Other, Fault::ServerError);
    cluster.server.close_watches();
    cluster.server.remove("/api/v1/namespaces/a-removed");
    cluster.relabel_namespace("a-changed", json!({"team": "no"}));
    cluster.namespace("zz-added", json!({"team": "yes"}));
    cluster.server.compact();
    let second_page: &'static str = format!("/api/v1/namespaces?limit={page}&continue=").leak();
    cluster
        .server
        .set_fault_times(RequestClass::Matching(second_page), Fault::Delay(HELD), 1);
    let mark = cluster.server.requests().len();
    std::thread::sleep(Duration::from_millis(300));
    cluster
        .server
        .set_fault_times(RequestClass::Other, Fault::ServerError, 0);
    // Writes from here on: one refused while every request failed changed nothing, and came
    // before any page of the relist was answered (a reconcile already running when the watches
    // broke may still send one, on a busy machine).
    let cleared = cluster.server.requests().len();

    let held_page = |answered: bool| {
        cluster.requests_since(mark).into_iter().find(|r| {
            r.path == "/api/v1/namespaces"
                && r.query.contains("continue=")
                && r.answered.is_some() == answered
        })
    };
    cluster.wait_for(&skiff, "the relist's second page requested", || {
        held_page(false).is_some() || held_page(true).is_some()
    });
    let mut mirror = cluster.mirror_object(HOME, "ca").expect("mirror");
    mirror["metadata"]["annotations"] = json!({"touched": "mid-relist"});
    cluster.server.update(mirror);

    cluster.wait_for(
        &skiff,
        "the copy in the relabelled namespace deleted",
        || cluster.configmap_at("a-changed", "app-ca").is_none(),
    );
    cluster.wait_for(&skiff, "the copy in the removed namespace deleted", || {
        cluster.configmap_at("a-removed", "app-ca").is_none()
    });
    cluster.wait_for(&skiff, "a copy in the added namespace", || {
        cluster.configmap_at("zz-added", "app-ca").is_some()
    });
    cluster.wait_for(&skiff, "status 2 of 2", || {
        let status = &cluster.mirror_object(HOME, "ca").expect("mirror")["status"];
        status["selected"] == 2 && status["synced"] == 2
    });
    assert!(cluster.configmap_at("a-kept", "app-ca").is_some());

    let page = held_page(true).expect("the held page was answered");
    let answered = page.answered.expect("answered");
    assert!(
        answered - page.received >= HELD - Duration::from_millis(100),
        "the second page was not held back: the test lost its point"
    );
    let early: Vec<_> = cluster
        .writes_since(cleared)
        .into_iter()
        .filter(|w| w.received < answered)
        .collect();
    assert!(
        early.is_empty(),
        "written before the namespace relist was complete:\n{}\nlog:\n{}",
        describe(&early),
        skiff.logs()
    );
}
