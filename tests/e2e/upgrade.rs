//! e2e: an upgrade writes nothing. The copies of every kind as the build before the kind table
//! (commit ba987d8) wrote them, with their Mirrors' finalizers and statuses, are put back on a
//! real API server; this build then starts, reconciles each Mirror and writes nothing (no copy
//! and no Mirror written), because the hash of each copy's content is what it always was.
//!
//! Why: a copy's hash is the canonical form of its content. Were a refactor to move it, the
//! first restart after an upgrade would rewrite every copy in the cluster. `mirror/golden.rs`
//! pins the hash per kind in a unit test; this pins it end to end, through the real server's
//! defaults and a real watch.
//!
//! The objects are in `fixtures/upgrade.json`, recorded by running that build over the same
//! scenario: `SKIFF_UPGRADE_RECORD=1 SKIFF_BINARY=<ba987d8's skiff> cargo test --test e2e
//! upgrade:: -- --include-ignored`. Server-set fields (uid, resourceVersion, managedFields,
//! timestamps) are left out of the record.

use std::path::PathBuf;
use std::time::Duration;

use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, require_e2e_binaries};
use crate::support::mirror_e2e::{
    Replica, SELECT_LABEL, one_replica_at_a_time, ready_says, wait_until,
};
use serde_json::{Value, json};

/// How long the new build is watched for writes once its caches are filled.
const QUIET: Duration = Duration::from_secs(6);
/// The flags of `deploy/kinds`, as the kinds suite runs them.
const KIT_FLAGS: [&str; 3] = [
    "--kinds=networkpolicies.networking.k8s.io,limitranges,resourcequotas,rolebindings.rbac.authorization.k8s.io,serviceaccounts",
    "--bindable-roles=edit,view",
    "--binding-namespace-label=skiff.dev/kit",
];
const NAMESPACES: [&str; 2] = ["upgrade-a", "upgrade-b"];
const LABEL: &str = "upgrade";

/// The sources, each with the Mirror that copies it (its extra spec members).
fn scenario() -> Vec<(Value, &'static str)> {
    let at = |kind: &str, api: &str, name: &str, content: Value| {
        let mut object = json!({"apiVersion": api, "kind": kind,
            "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE, "labels": {"team": "a"}}});
        for (field, value) in content.as_object().cloned().unwrap_or_default() {
            object[field] = value;
        }
        object
    };
    let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    vec![
        (
            at("ConfigMap", "v1", "plain", json!({"data": {"ca.crt": pem}})),
            "",
        ),
        (
            at(
                "ConfigMap",
                "v1",
                "picked",
                json!({"data": {"a": "1", "b": "2"}}),
            ),
            r#""keys": ["b"], "copyLabels": ["team"]"#,
        ),
        (
            at(
                "ConfigMap",
                "v1",
                "sealed",
                json!({"data": {"a": "1"}, "binaryData": {"blob": "AAEC"}, "immutable": true}),
            ),
            "",
        ),
        (
            at(
                "Secret",
                "v1",
                "app-tls",
                json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "Qw==", "tls.key": "Sw=="}}),
            ),
            "",
        ),
        (
            at(
                "NetworkPolicy",
                "networking.k8s.io/v1",
                "deny",
                json!({"spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}]}}),
            ),
            "",
        ),
        (
            at(
                "LimitRange",
                "v1",
                "limits",
                json!({"spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]}}),
            ),
            "",
        ),
        (
            at(
                "ResourceQuota",
                "v1",
                "quota",
                json!({"spec": {"hard": {"pods": "10", "cpu": "1000m"}}}),
            ),
            "",
        ),
        (
            at(
                "RoleBinding",
                "rbac.authorization.k8s.io/v1",
                "team-view",
                json!({"subjects": [{"kind": "Group", "name": "team-a"}],
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}}),
            ),
            "",
        ),
        (
            at(
                "ServiceAccount",
                "v1",
                "builder",
                json!({"imagePullSecrets": [{"name": "pull"}], "automountServiceAccountToken": false}),
            ),
            r#""target": {"metadata": {"labels": {"tier": "build"}, "annotations": {"note": "hi"}}}"#,
        ),
    ]
}

/// The Mirror of `source`, with `extra` spec members, selecting the upgrade namespaces.
fn mirror_of(source: &Value, extra: &str) -> Value {
    let (kind, name) = (
        &source["kind"],
        source["metadata"]["name"].as_str().unwrap_or_default(),
    );
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(", {extra}")
    };
    let source = format!(r#""kind": {kind}, "name": "{name}"{extra}"#);
    let (source, extra) = match source.split_once(r#", "target""#) {
        Some((source, target)) => (source.to_owned(), format!(r#", "target"{target}"#)),
        None => (source, String::new()),
    };
    serde_json::from_str(&format!(
        r#"{{"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {{"name": "up-{name}", "namespace": "{OPERATOR_NAMESPACE}"}},
            "spec": {{"source": {{{source}}}{extra},
                      "namespaceSelector": {{"matchLabels": {{"{SELECT_LABEL}": "{LABEL}",
                                                               "skiff.dev/kit": "{LABEL}"}}}}}}}}"#
    ))
    .expect("a Mirror")
}

/// The copies' resources, as kubectl names them.
const COPY_RESOURCES: &str =
    "configmaps,secrets,networkpolicies,limitranges,resourcequotas,rolebindings,serviceaccounts";

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/fixtures/upgrade.json")
}

/// `object` without what the server sets.
fn as_written(mut object: Value) -> Value {
    if let Some(meta) = object["metadata"].as_object_mut() {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "generation",
        ] {
            meta.remove(field);
        }
        if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
    }
    if let Some(status) = object.get_mut("status").and_then(Value::as_object_mut) {
        for condition in status
            .get_mut("conditions")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            condition["lastTransitionTime"] = json!("2026-12-04T00:00:00Z");
        }
    }
    object
}

/// Every object skiff manages in the upgrade namespaces, as the server holds it.
fn managed(cp: &ControlPlane) -> Vec<Value> {
    let mut objects = Vec::new();
    for ns in NAMESPACES {
        let list = cp
            .get_json(&[
                COPY_RESOURCES,
                "-n",
                ns,
                "-l",
                "app.kubernetes.io/managed-by=skiff",
            ])
            .expect("the copies");
        objects.extend(list["items"].as_array().cloned().unwrap_or_default());
    }
    objects
}

/// Every object skiff manages in the upgrade namespaces, as written.
fn copies(cp: &ControlPlane) -> Vec<Value> {
    managed(cp).into_iter().map(as_written).collect()
}

/// The upgrade namespaces, the sources and their Mirrors.
fn set_up(cp: &ControlPlane) -> usize {
    for ns in NAMESPACES {
        cp.apply(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns,
            "labels": {SELECT_LABEL: LABEL, "skiff.dev/kit": LABEL}}})
            .to_string(),
        );
    }
    let scenario = scenario();
    for (source, _) in &scenario {
        cp.apply(&source.to_string());
    }
    scenario.len()
}

fn mirror_names() -> Vec<String> {
    let names = scenario()
        .into_iter()
        .map(|(s, _)| s["metadata"]["name"].as_str().map(|n| format!("up-{n}")));
    names.flatten().collect()
}

/// Runs the build under test (or the one being recorded) while `test` runs.
fn running(cp: &ControlPlane, name: &str, test: impl FnOnce(&Replica)) {
    let replica = Replica::start_with(cp, name, &KIT_FLAGS);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(&replica)));
    if outcome.is_err() {
        eprintln!("skiff log:\n{}", replica.skiff.logs());
    }
    replica.stop();
    outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
}

fn all_synced(cp: &ControlPlane) -> bool {
    mirror_names()
        .iter()
        .all(|m| ready_says(cp, m, "Synced", "2 of 2"))
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn copies_the_build_before_the_kind_table_wrote_are_left_as_they_are() {
    require_e2e_binaries();
    let _turn = one_replica_at_a_time();
    let cp = ControlPlane::installed()
        .install_overlay("secret-targets")
        .install_overlay("kinds");
    let count = set_up(cp);
    if std::env::var_os("SKIFF_UPGRADE_RECORD").is_some() {
        return record(cp);
    }
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture()).expect("the fixture"))
            .expect("JSON");
    let mirrors = recorded["mirrors"].as_array().expect("mirrors");
    assert_eq!(mirrors.len(), count, "one recorded Mirror per source");
    for copy in recorded["copies"].as_array().expect("copies") {
        cp.apply(&copy.to_string());
    }
    for mirror in mirrors {
        let mut spec = mirror.clone();
        spec.as_object_mut().map(|m| m.remove("status"));
        cp.apply(&spec.to_string());
        let name = mirror["metadata"]["name"].as_str().expect("a name");
        let status = json!({"status": mirror["status"]}).to_string();
        cp.kubectl_ok(&[
            "patch",
            "mirror",
            name,
            "-n",
            OPERATOR_NAMESPACE,
            "--subresource=status",
            "--type=merge",
            "-p",
            &status,
        ]);
    }
    let before = versions(cp);
    assert_eq!(before.len(), 2 * count, "every copy put back: {before:?}");
    running(cp, "upgrade", |replica| {
        wait_until("the replica reconciles", || {
            replica
                .skiff
                .logs()
                .contains("mirror caches filled; reconciling")
        });
        std::thread::sleep(QUIET);
        let writes: Vec<_> = replica
            .writes()
            .into_iter()
            .filter(|(m, n)| *m != "POST" && *n > 0.0)
            .collect();
        assert!(writes.is_empty(), "the upgrade wrote: {writes:?}");
        assert_eq!(versions(cp), before, "a copy changed");
        assert!(all_synced(cp), "a Mirror is not Synced");
    });
}

/// Each copy's kind, namespace, name and resourceVersion.
fn versions(cp: &ControlPlane) -> Vec<String> {
    let mut versions: Vec<String> = managed(cp)
        .iter()
        .map(|item| {
            let meta = &item["metadata"];
            format!(
                "{} {}/{} {}",
                item["kind"], meta["namespace"], meta["name"], meta["resourceVersion"]
            )
        })
        .collect();
    versions.sort();
    versions
}

/// Runs the build named by `SKIFF_BINARY` over the scenario and records what it wrote.
fn record(cp: &ControlPlane) {
    for (source, extra) in scenario() {
        cp.apply(&mirror_of(&source, extra).to_string());
    }
    running(cp, "record", |_| {
        wait_until("every Mirror Synced", || all_synced(cp));
    });
    let mirrors: Vec<Value> = mirror_names()
        .iter()
        .map(|name| {
            as_written(
                cp.object("mirror", OPERATOR_NAMESPACE, name)
                    .expect("the Mirror"),
            )
        })
        .collect();
    let recorded = json!({"mirrors": mirrors, "copies": copies(cp)});
    let text = serde_json::to_string_pretty(&recorded).expect("JSON") + "\n";
    std::fs::create_dir_all(fixture().parent().expect("a folder")).expect("the fixtures folder");
    std::fs::write(fixture(), text).expect("write the fixture");
    eprintln!("recorded {}", fixture().display());
}
