//! Objects a Mirror does not manage are never touched: an unmanaged object with the target
//! name, or another Mirror's copy, is counted, named in the condition and reported once with a
//! Warning Event.

use crate::support::cluster::{Cluster, HOME, MANAGED_BY, MIRROR_NAME, describe};
use crate::support::fake::RequestRecord;
use crate::support::skiff::Skiff;
use serde_json::{Value, json};
use std::time::Duration;

/// The Events skiff posted into `ns`.
fn events_posted(cluster: &Cluster, ns: &str) -> Vec<Value> {
    let path = format!("/api/v1/namespaces/{ns}/events");
    cluster
        .server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path == path)
        .filter_map(|r| r.body)
        .collect()
}

/// Writes (other than Events) to the object at `path`.
fn writes_to(records: Vec<RequestRecord>, path: &str) -> Vec<RequestRecord> {
    let collection = path.rsplit_once('/').map(|(c, _)| c).unwrap_or(path);
    records
        .into_iter()
        .filter(|r| r.path == path || (r.method == "POST" && r.path == collection))
        .collect()
}

/// Fails, saying `what` happened, if the object at `path` was written since request `mark`.
fn assert_untouched_since(cluster: &Cluster, mark: usize, path: &str, what: &str) {
    let writes = writes_to(cluster.writes_since(mark), path);
    assert!(writes.is_empty(), "{what}:\n{}", describe(&writes));
}

/// `team-a` holding the copy of the Mirror `first` (source `app-ca`), and the source
/// `other-ca` for a second Mirror.
fn first_mirror_synced(tag: &str) -> (Cluster, Skiff) {
    let mut cluster = Cluster::new(tag);
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster.configmap(HOME, "app-ca", json!({"ca.crt": "FIRST"}));
    cluster.configmap(HOME, "other-ca", json!({"ca.crt": "SECOND"}));
    cluster.mirror_to_teams("first", "ConfigMap", "app-ca");
    let skiff = cluster.start(&[]);
    cluster.wait_ready(&skiff, HOME, "first", "True", "Synced");
    (cluster, skiff)
}

/// The Mirror `second`: `other-ca` copied as `app-ca`, into the namespaces `first` writes to.
fn second_mirror(cluster: &Cluster) {
    cluster
        .server
        .insert(json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
        "metadata": {"name": "second", "namespace": HOME},
        "spec": {"source": {"kind": "ConfigMap", "name": "other-ca"}, "targetName": "app-ca",
            "namespaceSelector": {"matchLabels": {"team": "yes"}}}}));
}

#[test]
fn an_unmanaged_object_is_left_alone_and_reported() {
    let mut cluster = Cluster::new("unmanaged");
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster.namespace("team-b", json!({"team": "yes"}));
    let theirs = cluster
        .server
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "app-ca", "namespace": "team-b", "labels": {"owner": "someone"}},
        "data": {"ca.crt": "THEIRS"}}));
    cluster.team_ca_mirror();
    let skiff = cluster.start(&[]);

    cluster.wait_ready(&skiff, HOME, "ca", "False", "Conflict");
    assert!(cluster.configmap_at("team-a", "app-ca").is_some());
    assert_eq!(
        cluster.configmap_at("team-b", "app-ca").expect("theirs"),
        theirs,
        "the unmanaged object was changed"
    );
    let ready = cluster.ready(HOME, "ca");
    assert!(
        ready["message"]
            .as_str()
            .unwrap_or_default()
            .contains("team-b"),
        "the condition names the namespace: {ready}"
    );
    cluster.wait_for(&skiff, "conflicts = 1, synced = 1", || {
        let status = &cluster.mirror_object(HOME, "ca").expect("mirror")["status"];
        status["conflicts"] == 1 && status["synced"] == 1 && status["selected"] == 2
    });
    cluster.wait_for(&skiff, "a Warning Event", || {
        !events_posted(&cluster, HOME).is_empty()
    });
    let event = &events_posted(&cluster, HOME)[0];
    assert_eq!(event["type"], "Warning", "{event}");
    assert_eq!(event["reason"], "Conflict", "{event}");
    assert_eq!(event["involvedObject"]["kind"], "Mirror", "{event}");
    assert_eq!(event["involvedObject"]["name"], "ca", "{event}");
    assert!(
        event["message"]
            .as_str()
            .unwrap_or_default()
            .contains("team-b"),
        "{event}"
    );

    // Settled: no retries against the unmanaged object, no repeated Event.
    let mark = cluster.server.requests().len();
    std::thread::sleep(Duration::from_secs(2));
    let writes = cluster.writes_since(mark);
    assert!(
        writes.is_empty(),
        "writes while blocked by a conflict:\n{}",
        describe(&writes)
    );
    assert_eq!(events_posted(&cluster, HOME).len(), 1);
    let updates: Vec<_> = writes_to(
        cluster.writes_since(0),
        "/api/v1/namespaces/team-b/configmaps/app-ca",
    )
    .into_iter()
    .filter(|r| r.method != "POST")
    .collect();
    assert!(updates.is_empty(), "{}", describe(&updates));
}

/// A namespace where a create met an object skiff does not manage stays known as blocked:
/// a later reconcile of the Mirror (for a new namespace here) creates the new copy and does
/// not try the blocked namespace again until its re-check is due.
#[test]
fn a_namespace_a_create_found_blocked_is_not_written_again() {
    let mut cluster = Cluster::new("blocked");
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster.namespace("team-b", json!({"team": "yes"}));
    cluster
        .server
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "app-ca", "namespace": "team-b"}, "data": {"ca.crt": "THEIRS"}}));
    cluster.team_ca_mirror();
    let skiff = cluster.start(&[]);
    let counts = |synced: u32| {
        let status = &cluster.mirror_object(HOME, "ca").expect("mirror")["status"];
        status["conflicts"] == 1 && status["synced"] == synced
    };
    cluster.wait_for(&skiff, "conflicts = 1, synced = 1", || counts(1));

    let mark = cluster.server.requests().len();
    cluster.namespace("team-c", json!({"team": "yes"}));
    cluster.wait_for(&skiff, "conflicts = 1, synced = 2", || counts(2));
    assert!(cluster.configmap_at("team-c", "app-ca").is_some());
    assert_untouched_since(
        &cluster,
        mark,
        "/api/v1/namespaces/team-b/configmaps/app-ca",
        "the blocked namespace was written again",
    );
}

#[test]
fn a_second_mirror_for_the_same_name_reports_a_conflict_and_never_overwrites() {
    let (cluster, skiff) = first_mirror_synced("two-mirrors");

    let mark = cluster.server.requests().len();
    second_mirror(&cluster);
    cluster.wait_ready(&skiff, HOME, "second", "False", "Conflict");
    let ready = cluster.ready(HOME, "second");
    assert!(
        ready["message"]
            .as_str()
            .unwrap_or_default()
            .contains("team-a"),
        "{ready}"
    );
    std::thread::sleep(Duration::from_secs(1));

    let copy = cluster
        .configmap_at("team-a", "app-ca")
        .expect("first's copy");
    assert_eq!(copy["data"]["ca.crt"], "FIRST", "{copy}");
    assert_eq!(copy["metadata"]["labels"][MIRROR_NAME], "first", "{copy}");
    assert_eq!(copy["metadata"]["labels"][MANAGED_BY], "skiff", "{copy}");
    assert_untouched_since(
        &cluster,
        mark,
        "/api/v1/namespaces/team-a/configmaps/app-ca",
        "the first Mirror's copy was written",
    );
    assert_eq!(cluster.ready(HOME, "first")["status"], "True");
    let status = &cluster.mirror_object(HOME, "second").expect("mirror")["status"];
    assert_eq!(status["conflicts"], 1, "{status}");
    assert!(
        events_posted(&cluster, HOME)
            .iter()
            .any(|e| e["involvedObject"]["name"] == "second" && e["type"] == "Warning"),
        "no Warning Event for the second Mirror"
    );
}

#[test]
fn a_conflict_in_another_namespace_does_not_hold_up_the_rest() {
    let mut cluster = Cluster::new("partial");
    let namespaces = cluster.namespaces("team", 8, json!({"team": "yes"}));
    for ns in &namespaces[..3] {
        cluster.configmap(ns, "app-ca", json!({"ca.crt": "THEIRS"}));
    }
    cluster.team_ca_mirror();
    let skiff = cluster.start(&[]);

    cluster.wait_ready(&skiff, HOME, "ca", "False", "Conflict");
    cluster.wait_for(&skiff, "5 synced, 3 conflicts", || {
        let status = &cluster.mirror_object(HOME, "ca").expect("mirror")["status"];
        status["synced"] == 5 && status["conflicts"] == 3 && status["selected"] == 8
    });
    for ns in &namespaces[..3] {
        let theirs = cluster.configmap_at(ns, "app-ca").expect("theirs");
        assert_eq!(theirs["data"]["ca.crt"], "THEIRS");
        assert!(theirs["metadata"]["labels"].is_null(), "{theirs}");
    }
    for ns in &namespaces[3..] {
        let copy = cluster.configmap_at(ns, "app-ca").expect("copy");
        assert_eq!(copy["data"]["ca.crt"], "PEM");
    }
}

#[test]
fn two_mirrors_racing_for_one_name_never_overwrite_each_other() {
    let mut cluster = Cluster::new("race");
    let namespaces = cluster.namespaces("team", 10, json!({"team": "yes"}));
    for (mirror, data) in [("one", "ONE"), ("two", "TWO")] {
        cluster.configmap(HOME, mirror, json!({"ca.crt": data}));
        cluster
            .server
            .insert(json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {"name": mirror, "namespace": HOME},
            "spec": {"source": {"kind": "ConfigMap", "name": mirror}, "targetName": "app-ca",
                "namespaceSelector": {"matchLabels": {"team": "yes"}}}}));
    }
    let skiff = cluster.start(&[]);

    let totals = || {
        let status = |name| cluster.mirror_object(HOME, name).expect("mirror")["status"].clone();
        let (one, two) = (status("one"), status("two"));
        let n = |s: &Value, f: &str| s[f].as_u64().unwrap_or(0);
        (
            n(&one, "synced") + n(&two, "synced"),
            n(&one, "conflicts") + n(&two, "conflicts"),
        )
    };
    cluster.wait_for(&skiff, "every namespace held by exactly one Mirror", || {
        totals() == (10, 10)
    });
    for ns in &namespaces {
        let copy = cluster.configmap_at(ns, "app-ca").expect("copy");
        let owner = copy["metadata"]["labels"][MIRROR_NAME]
            .as_str()
            .unwrap_or_default();
        let expected = if owner == "one" { "ONE" } else { "TWO" };
        assert_eq!(copy["data"]["ca.crt"], expected, "{copy}");
    }
    let updates: Vec<_> = cluster
        .writes_since(0)
        .into_iter()
        .filter(|r| {
            ["PUT", "PATCH"].contains(&r.method.as_str()) && r.path.contains("/configmaps/")
        })
        .collect();
    assert!(
        updates.is_empty(),
        "a copy was overwritten:\n{}",
        describe(&updates)
    );

    cluster
        .server
        .remove("/apis/skiff.dev/v1alpha1/namespaces/skiff-system/mirrors/one");
    cluster.wait_for(
        &skiff,
        "every copy taken over by the remaining Mirror",
        || {
            namespaces.iter().all(|ns| {
                cluster
                    .configmap_at(ns, "app-ca")
                    .is_some_and(|c| c["metadata"]["labels"][MIRROR_NAME] == "two")
            })
        },
    );
    cluster.wait_ready(&skiff, HOME, "two", "True", "Synced");
}

#[test]
fn a_copy_whose_labels_are_stripped_by_hand_becomes_a_reported_conflict() {
    let mut cluster = Cluster::new("stripped");
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster.namespace("team-b", json!({"team": "yes"}));
    cluster.team_ca_mirror();
    let skiff = cluster.start(&[]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");

    let mut copy = cluster.configmap_at("team-b", "app-ca").expect("copy");
    copy["metadata"]["labels"] = json!({"taken-over": "by-hand"});
    copy["data"] = json!({"ca.crt": "MINE NOW"});
    let taken = cluster.server.update(copy);
    cluster.wait_ready(&skiff, HOME, "ca", "False", "Conflict");
    let ready = cluster.ready(HOME, "ca");
    assert!(
        ready["message"]
            .as_str()
            .unwrap_or_default()
            .contains("team-b"),
        "{ready}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        cluster
            .configmap_at("team-b", "app-ca")
            .expect("taken over"),
        taken,
        "the object taken over by hand was written"
    );
}

#[test]
fn the_losing_mirror_takes_over_once_the_winner_is_deleted() {
    let (cluster, skiff) = first_mirror_synced("take-over");
    second_mirror(&cluster);
    cluster.wait_ready(&skiff, HOME, "second", "False", "Conflict");

    cluster
        .server
        .remove("/apis/skiff.dev/v1alpha1/namespaces/skiff-system/mirrors/first");
    cluster.wait_for(
        &skiff,
        "the second Mirror's copy in place of the first's",
        || {
            cluster
                .configmap_at("team-a", "app-ca")
                .is_some_and(|c| c["metadata"]["labels"][MIRROR_NAME] == "second")
        },
    );
    cluster.wait_ready(&skiff, HOME, "second", "True", "Synced");
    let copy = cluster.configmap_at("team-a", "app-ca").expect("copy");
    assert_eq!(copy["data"]["ca.crt"], "SECOND");
}
