//! A Mirror's life: the finalizer goes on, deleting the Mirror deletes its copies before the
//! finalizer comes off, a missing source leaves copies alone, and a restart with nothing
//! changed writes nothing.

use crate::support::cluster::{Cluster, FINALIZER, HOME, describe};
use crate::support::scrape::{scrape, sum_samples};
use crate::support::skiff::free_port;
use serde_json::json;
use std::time::Duration;

const MIRROR_PATH: &str = "/apis/skiff.dev/v1alpha1/namespaces/skiff-system/mirrors/ca";
/// Secret copies are opt-in: the Secret Mirrors here copy to `tls`.
const SECRET_TARGETS: &str = "--secret-target-names=tls";

fn team_mirror(cluster: &Cluster, namespaces: usize) -> Vec<String> {
    let selected = cluster.namespaces("team", namespaces, json!({"team": "yes"}));
    cluster.team_ca_mirror();
    selected
}

/// Three selected namespaces synced by a skiff that then stopped; returns their names.
fn synced_then_stopped(cluster: &mut Cluster) -> Vec<String> {
    let selected = team_mirror(cluster, 3);
    let mut first = cluster.start(&[]);
    cluster.wait_ready(&first, HOME, "ca", "True", "Synced");
    first.terminate(Duration::from_secs(5));
    selected
}

#[test]
fn deleting_a_mirror_deletes_its_copies_before_the_finalizer_goes() {
    let mut cluster = Cluster::new("finalize");
    let selected = team_mirror(&cluster, 5);
    let skiff = cluster.start(&[]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    let mirror = cluster.mirror_object(HOME, "ca").expect("mirror");
    assert_eq!(
        mirror["metadata"]["finalizers"],
        json!([FINALIZER]),
        "{mirror}"
    );

    let mark = cluster.server.requests().len();
    cluster.server.remove(MIRROR_PATH);
    cluster.wait_for(&skiff, "the Mirror gone", || {
        cluster.mirror_object(HOME, "ca").is_none()
    });
    for ns in &selected {
        assert!(
            cluster.configmap_at(ns, "app-ca").is_none(),
            "copy left in {ns}"
        );
    }
    assert!(
        cluster.configmap_at(HOME, "app-ca").is_some(),
        "the source was deleted"
    );
    let writes = cluster.writes_since(mark);
    let finalizer_removed = writes
        .iter()
        .position(|r| r.path == MIRROR_PATH && r.method != "DELETE")
        .unwrap_or_else(|| panic!("no finalizer write:\n{}", describe(&writes)));
    let copy_deletes: Vec<usize> = writes
        .iter()
        .enumerate()
        .filter(|(_, r)| r.method == "DELETE" && r.path.contains("/configmaps/app-ca"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(copy_deletes.len(), selected.len(), "{}", describe(&writes));
    assert!(
        copy_deletes.iter().all(|i| *i < finalizer_removed),
        "the finalizer went before the copies:\n{}",
        describe(&writes)
    );
}

#[test]
fn a_deleted_source_leaves_the_copies_and_reports_source_not_found() {
    let mut cluster = Cluster::new("no-source");
    let selected = team_mirror(&cluster, 3);
    let skiff = cluster.start(&[]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");

    let mark = cluster.server.requests().len();
    cluster
        .server
        .remove("/api/v1/namespaces/skiff-system/configmaps/app-ca");
    cluster.wait_ready(&skiff, HOME, "ca", "False", "SourceNotFound");
    std::thread::sleep(Duration::from_millis(500));
    for ns in &selected {
        let copy = cluster.configmap_at(ns, "app-ca").expect("copy kept");
        assert_eq!(copy["data"]["ca.crt"], "PEM");
    }
    let copy_writes: Vec<_> = cluster
        .writes_since(mark)
        .into_iter()
        .filter(|r| r.path.contains("/configmaps"))
        .collect();
    assert!(copy_writes.is_empty(), "{}", describe(&copy_writes));

    cluster.configmap(HOME, "app-ca", json!({"ca.crt": "BACK"}));
    cluster.wait_for(&skiff, "copies following the recreated source", || {
        selected.iter().all(|ns| {
            cluster
                .configmap_at(ns, "app-ca")
                .is_some_and(|c| c["data"]["ca.crt"] == "BACK")
        })
    });
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
}

#[test]
fn a_restart_with_nothing_changed_writes_nothing_even_with_conflicts() {
    let mut cluster = Cluster::new("restart");
    team_mirror(&cluster, 20);
    cluster.namespaces("other", 5, json!({}));
    cluster
        .server
        .insert(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "tls", "namespace": HOME}, "type": "kubernetes.io/tls",
        "data": {"tls.crt": "Q0VSVA==", "tls.key": "S0VZ"}}));
    cluster.mirror_to_teams("tls", "Secret", "tls");
    // An object skiff doesn't manage blocks "ca" in one namespace: the cache cannot see it.
    cluster.configmap("team-19", "app-ca", json!({"ca.crt": "THEIRS"}));
    let mut first = cluster.start(&[SECRET_TARGETS]);
    cluster.wait_ready(&first, HOME, "ca", "False", "Conflict");
    cluster.wait_ready(&first, HOME, "tls", "True", "Synced");
    cluster.wait_for(&first, "both Mirrors fully synced", || {
        let synced =
            |m| cluster.mirror_object(HOME, m).expect("mirror")["status"]["synced"].clone();
        synced("ca") == 19 && synced("tls") == 20
    });
    // A Mirror that loses every namespace to "tls": its conflicts are old news on restart.
    cluster
        .server
        .insert(json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
        "metadata": {"name": "rival", "namespace": HOME},
        "spec": {"source": {"kind": "Secret", "name": "tls"},
            "namespaceSelector": {"matchLabels": {"team": "yes"}}}}));
    cluster.wait_ready(&first, HOME, "rival", "False", "Conflict");
    first.terminate(Duration::from_secs(5));

    let mark = cluster.server.requests().len();
    let port = free_port();
    let metrics_flag = format!("--metrics-bind-address=127.0.0.1:{port}");
    let second = cluster.start(&[&metrics_flag, "--metrics-secure=false", SECRET_TARGETS]);
    cluster.wait_caches_filled(&second);
    let total = |text: &str, result: &str| {
        let labels = [("controller", "mirror"), ("result", result)];
        sum_samples(text, "controller_runtime_reconcile_total", &labels)
    };
    // "ca" asks to be looked at again later (it is blocked); the others are done.
    cluster.wait_for(&second, "every Mirror reconciled by the second run", || {
        let text = scrape(port);
        total(&text, "success") + total(&text, "requeue_after") >= 3.0
    });
    std::thread::sleep(Duration::from_secs(1));

    let lists = cluster
        .requests_since(mark)
        .into_iter()
        .filter(|r| r.method == "GET" && !r.watch)
        .count();
    assert!(lists >= 6, "the second run did not list its caches");
    let writes = cluster.writes_since(mark);
    assert!(
        writes.is_empty(),
        "the second run wrote:\n{}\nlog:\n{}",
        describe(&writes),
        second.logs()
    );
}

#[test]
fn a_mirror_deleted_while_skiff_was_down_is_cleaned_up_at_start() {
    let mut cluster = Cluster::new("deleted-offline");
    let selected = synced_then_stopped(&mut cluster);

    cluster.server.remove(MIRROR_PATH);
    let held = cluster
        .mirror_object(HOME, "ca")
        .expect("held by the finalizer");
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    let second = cluster.start(&[]);
    cluster.wait_for(&second, "the Mirror gone", || {
        cluster.mirror_object(HOME, "ca").is_none()
    });
    for ns in &selected {
        assert!(
            cluster.configmap_at(ns, "app-ca").is_none(),
            "copy left in {ns}"
        );
    }
}

#[test]
fn copies_whose_mirror_is_gone_are_deleted_at_start() {
    let mut cluster = Cluster::new("orphans");
    let selected = synced_then_stopped(&mut cluster);

    // Gone without its finalizer running (someone removed the finalizer by hand).
    let mut mirror = cluster.mirror_object(HOME, "ca").expect("mirror");
    mirror["metadata"]["finalizers"] = json!([]);
    cluster.server.update(mirror);
    cluster.server.remove(MIRROR_PATH);
    assert!(cluster.mirror_object(HOME, "ca").is_none());
    let second = cluster.start(&[]);
    cluster.wait_for(&second, "the orphaned copies deleted", || {
        selected
            .iter()
            .all(|ns| cluster.configmap_at(ns, "app-ca").is_none())
    });
}

#[test]
fn changing_the_source_kind_replaces_configmap_copies_with_secrets() {
    let mut cluster = Cluster::new("kind");
    let selected = team_mirror(&cluster, 2);
    cluster
        .server
        .insert(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "app-ca", "namespace": HOME}, "data": {"ca.crt": "UEVN"}}));
    let skiff = cluster.start(&["--secret-target-names=app-ca"]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");

    let mut mirror = cluster.mirror_object(HOME, "ca").expect("mirror");
    mirror["spec"]["source"]["kind"] = json!("Secret");
    cluster.server.update(mirror);
    cluster.wait_for(&skiff, "Secret copies only", || {
        selected.iter().all(|ns| {
            cluster.secret_at(ns, "app-ca").is_some()
                && cluster.configmap_at(ns, "app-ca").is_none()
        })
    });
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
}

#[test]
fn sigterm_during_a_long_fan_out_stops_without_finishing_it() {
    let mut cluster = Cluster::new("stop-mid-fan-out");
    team_mirror(&cluster, 60);
    // 5 writes a second: the fan-out alone would take about 12 s.
    let mut skiff = cluster.start(&["--kube-api-qps=5", "--kube-api-burst=1"]);
    cluster.wait_for(&skiff, "the fan-out under way", || {
        cluster
            .writes_since(0)
            .iter()
            .any(|r| r.path.ends_with("/configmaps"))
    });
    skiff.signal("TERM");
    let stopped_at = std::time::Instant::now();
    // A liveness bound, 10× the stop, which waits only for the writes already on the wire (a
    // stop that finished the fan-out first would leave no copy missing, below).
    assert_eq!(
        skiff.wait_exit(Duration::from_secs(10)),
        Some(0),
        "{}",
        skiff.logs()
    );
    println!("stopped {:?} after SIGTERM", stopped_at.elapsed());
    let mark = cluster.server.requests().len();
    // Bytes sent just before the exit may still be on their way: a window before a negative.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(cluster.server.requests().len(), mark, "requests after exit");
    let logs = skiff.logs();
    assert!(logs.contains("writes left for the next run"), "{logs}");
    assert!(!logs.contains("WARN"), "{logs}");
    let copies = (0..60)
        .filter(|i| {
            cluster
                .configmap_at(&format!("team-{i}"), "app-ca")
                .is_some()
        })
        .count();
    assert!(
        copies < 60,
        "the fan-out finished before the stop: the test lost its point"
    );
}
