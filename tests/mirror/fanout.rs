//! The Mirror controller fans a source out: every selected namespace gets a labelled copy, the
//! status counts them, source updates reach every copy, and a converged controller is quiet.

use crate::support::cluster::{
    Cluster, HOME, MANAGED_BY, MIRROR_NAME, MIRROR_NAMESPACE, SOURCE_HASH, configmap_hash, describe,
};
use crate::support::fake::{Fault, RequestClass};
use serde_json::json;
use std::time::Duration;

const FAN_OUT: usize = 50;

#[test]
fn fans_out_to_every_selected_namespace_and_reports_ready() {
    let mut cluster = Cluster::new("fanout");
    let selected = cluster.namespaces("team", FAN_OUT, json!({"team": "yes"}));
    let others = cluster.namespaces("other", 5, json!({"team": "no"}));
    cluster.relabel_namespace(HOME, json!({"team": "yes"}));
    cluster.team_ca_mirror();
    let skiff = cluster.start(&[]);

    cluster.wait_for(&skiff, "a copy in every selected namespace", || {
        selected
            .iter()
            .all(|ns| cluster.configmap_at(ns, "app-ca").is_some())
    });
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    let status = cluster.mirror_object(HOME, "ca").expect("mirror")["status"].clone();
    assert_eq!(status["selected"], FAN_OUT, "{status}");
    assert_eq!(status["synced"], FAN_OUT, "{status}");
    assert_eq!(status["conflicts"], 0, "{status}");
    assert_eq!(status["observedGeneration"], 1, "{status}");
    for ns in &selected {
        let copy = cluster.configmap_at(ns, "app-ca").expect("copy");
        assert_eq!(copy["data"], json!({"ca.crt": "PEM"}), "{ns}");
    }
    for ns in &others {
        assert!(cluster.configmap_at(ns, "app-ca").is_none(), "copy in {ns}");
    }
    let copy_writes: Vec<_> = cluster
        .writes_since(0)
        .into_iter()
        .filter(|r| r.path.contains("/configmaps"))
        .collect();
    assert!(
        copy_writes.len() == FAN_OUT && copy_writes.iter().all(|r| r.method == "POST"),
        "not one create per namespace:\n{}",
        describe(&copy_writes)
    );
    let refused: Vec<_> = cluster
        .writes_since(0)
        .into_iter()
        .filter(|r| r.status >= 400)
        .collect();
    assert!(
        refused.is_empty(),
        "refused writes:\n{}",
        describe(&refused)
    );
    let source = cluster.configmap_at(HOME, "app-ca").expect("source");
    assert!(
        source["metadata"]["labels"][MANAGED_BY].is_null(),
        "the Mirror's own namespace is selected too: {source}"
    );
}

#[test]
fn copies_carry_the_managed_labels_and_the_payload_hash() {
    let mut cluster = Cluster::new("labels");
    cluster.namespace("team-a", json!({"team": "yes"}));
    let data = json!({"ca.crt": "PEM", "extra": "x"});
    let binary = json!({"blob": "AAEC"});
    cluster
        .server
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "app-ca", "namespace": HOME, "labels": {"mine": "source-only"}},
        "data": data, "binaryData": binary}));
    cluster.mirror_to_teams("ca", "ConfigMap", "app-ca");
    let skiff = cluster.start(&[]);

    cluster.wait_for(&skiff, "the copy", || {
        cluster.configmap_at("team-a", "app-ca").is_some()
    });
    let copy = cluster.configmap_at("team-a", "app-ca").expect("copy");
    let labels = &copy["metadata"]["labels"];
    assert_eq!(labels[MANAGED_BY], "skiff", "{copy}");
    assert_eq!(labels[MIRROR_NAMESPACE], HOME, "{copy}");
    assert_eq!(labels[MIRROR_NAME], "ca", "{copy}");
    let hash = copy["metadata"]["annotations"][SOURCE_HASH]
        .as_str()
        .expect("source-hash annotation")
        .to_owned();
    assert_eq!(hash, configmap_hash(&data, &binary), "{copy}");
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    let status = cluster.mirror_object(HOME, "ca").expect("mirror")["status"].clone();
    assert_eq!(status["sourceHash"], hash, "{status}");
}

#[test]
fn a_source_update_reaches_every_copy() {
    let mut cluster = Cluster::new("update");
    let selected = cluster.namespaces("team", 10, json!({"team": "yes"}));
    let mut source = cluster.configmap(HOME, "app-ca", json!({"ca.crt": "v1"}));
    cluster.mirror_to_teams("ca", "ConfigMap", "app-ca");
    let skiff = cluster.start(&[]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");

    let mark = cluster.server.requests().len();
    source["data"] = json!({"ca.crt": "v2"});
    cluster.server.update(source);
    let new_hash = configmap_hash(&json!({"ca.crt": "v2"}), &json!({}));
    cluster.wait_for(&skiff, "every copy at v2", || {
        selected.iter().all(|ns| {
            cluster
                .configmap_at(ns, "app-ca")
                .is_some_and(|c| c["data"]["ca.crt"] == "v2")
        })
    });
    cluster.wait_for(&skiff, "status at the new hash", || {
        let m = cluster.mirror_object(HOME, "ca").expect("mirror");
        m["status"]["sourceHash"] == new_hash.as_str() && m["status"]["synced"] == 10
    });
    for ns in &selected {
        let copy = cluster.configmap_at(ns, "app-ca").expect("copy");
        assert_eq!(
            copy["metadata"]["annotations"][SOURCE_HASH],
            new_hash.as_str()
        );
    }
    let copy_writes: Vec<_> = cluster
        .writes_since(mark)
        .into_iter()
        .filter(|r| r.path.contains("/configmaps/"))
        .collect();
    assert!(
        copy_writes.len() == selected.len() && copy_writes.iter().all(|r| r.method == "PATCH"),
        "not one update per copy:\n{}",
        describe(&copy_writes)
    );
}

#[test]
fn a_namespace_created_later_gets_its_copy() {
    let mut cluster = Cluster::new("later");
    cluster.namespace("team-a", json!({"team": "yes"}));
    cluster.team_ca_mirror();
    let skiff = cluster.start(&[]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    assert!(cluster.configmap_at("team-b", "app-ca").is_none());

    cluster.namespace("team-b", json!({"team": "yes"}));
    cluster.wait_for(&skiff, "a copy in the new namespace", || {
        cluster.configmap_at("team-b", "app-ca").is_some()
    });
    cluster.wait_for(&skiff, "status counting it", || {
        let m = cluster.mirror_object(HOME, "ca").expect("mirror");
        m["status"]["selected"] == 2 && m["status"]["synced"] == 2
    });
}

#[test]
fn a_converged_controller_writes_nothing() {
    let mut cluster = Cluster::new("steady");
    cluster.namespaces("team", 20, json!({"team": "yes"}));
    cluster.team_ca_mirror();
    let skiff = cluster.start(&[]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    cluster.wait_for(&skiff, "all 20 synced", || {
        cluster.mirror_object(HOME, "ca").expect("mirror")["status"]["synced"] == 20
    });

    let mark = cluster.server.requests().len();
    std::thread::sleep(Duration::from_secs(3));
    let writes = cluster.writes_since(mark);
    assert!(
        writes.is_empty(),
        "writes after convergence:\n{}\nlog:\n{}",
        describe(&writes),
        skiff.logs()
    );
}

#[test]
fn namespaces_arriving_during_a_fan_out_get_exactly_one_create_each() {
    let mut cluster = Cluster::new("arrivals");
    cluster.team_ca_mirror();
    let skiff = cluster.start(&[]);
    cluster.wait_watching(&skiff, 1);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");

    // Every namespace event reconciles the Mirror again while earlier creates are still on
    // their way back through the copy watch.
    cluster
        .server
        .set_fault(RequestClass::Other, Fault::Delay(Duration::from_millis(20)));
    let names: Vec<String> = (0..30).map(|i| format!("team-{i}")).collect();
    for name in &names {
        cluster.namespace(name, json!({"team": "yes"}));
        std::thread::sleep(Duration::from_millis(3));
    }
    cluster.wait_for(&skiff, "a copy in every namespace", || {
        names
            .iter()
            .all(|ns| cluster.configmap_at(ns, "app-ca").is_some())
    });
    cluster.server.clear_faults();
    cluster.wait_for(&skiff, "status 30 of 30", || {
        let status = &cluster.mirror_object(HOME, "ca").expect("mirror")["status"];
        status["selected"] == 30 && status["synced"] == 30
    });
    let copy_writes: Vec<_> = cluster
        .writes_since(0)
        .into_iter()
        .filter(|r| r.path.contains("/configmaps"))
        .collect();
    assert!(
        copy_writes.len() == names.len() && copy_writes.iter().all(|r| r.status == 201),
        "creates repeated or refused:\n{}",
        describe(&copy_writes)
    );
}
