//! e2e: the Mirror controller on a real API server, checked with kubectl as a user would.
//!
//! Why: the fake server models the API; only the real one proves that the copies, the status
//! columns, the Events and the finalizer work under the shipped RBAC. One skiff replica runs as
//! in production (`--leader-elect`, the operator's ServiceAccount), installed with the
//! secret-targets component (`deploy/secret-targets`) so Secret copies of `app-tls` are
//! allowed, with the same `--secret-target-names` the component sets. Each test starts its own
//! replica, serialized, because they all use the one Lease `skiff-system/skiff-leader`; each
//! test has its own Mirror, source and namespaces (selected by a label unique to the test).

mod support;

use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;
use support::control_plane::{ControlPlane, E2E_REPLICA_FLAGS, OPERATOR_NAMESPACE, e2e_enabled};
use support::skiff::{Skiff, TempDir, eventually};

/// Each wait for the controller to act.
const STEP_TIMEOUT: Duration = Duration::from_secs(20);
/// The e2e replica's flags, with Secret copies of `app-tls` enabled.
fn skiff_flags() -> Vec<&'static str> {
    let mut flags = E2E_REPLICA_FLAGS.to_vec();
    flags.push("--secret-target-names=app-tls");
    flags
}

/// The default install plus the secret-targets component, once per control plane.
fn control_plane() -> &'static ControlPlane {
    static COMPONENT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    let cp = ControlPlane::shared().install_manifests();
    COMPONENT.get_or_init(|| {
        let overlay =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/secret-targets");
        cp.kubectl_ok(&["apply", "-k", &overlay.display().to_string()]);
    });
    cp
}

/// Runs `test` while one skiff replica leads; stops it with SIGTERM after, expecting exit 0.
fn with_skiff(name: &str, test: impl FnOnce(&'static ControlPlane)) {
    static ONE_REPLICA_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_REPLICA_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let cp = control_plane();
    let dir = TempDir::new(&format!("e2e-mirror-{name}"));
    let log = dir.0.join("skiff.log");
    let mut skiff = Skiff::start_with_env(
        &cp.operator_kubeconfig(),
        log,
        &skiff_flags(),
        &[("POD_NAME", name)],
    );
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(cp)));
    if outcome.is_err() {
        eprintln!("skiff log ({name}):\n{}", skiff.logs());
    }
    skiff.signal("TERM");
    let code = skiff.wait_exit(STEP_TIMEOUT);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    assert_eq!(code, Some(0), "skiff exit; log:\n{}", skiff.logs());
}

/// Waits until `check` holds, polling with kubectl; panics naming `what` after the timeout.
fn wait_until(what: &str, check: impl FnMut() -> bool) {
    assert!(eventually(STEP_TIMEOUT, check), "timed out: {what}");
}

fn source_configmap(cp: &ControlPlane, name: &str, data: &str) {
    cp.apply(&format!(
        r#"{{"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {{"name": "{name}", "namespace": "{OPERATOR_NAMESPACE}"}},
            "data": {data}}}"#
    ));
}

fn mirror(cp: &ControlPlane, name: &str, kind: &str, source: &str, extra: &str, label: &str) {
    cp.apply(&format!(
        r#"{{"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {{"name": "{name}", "namespace": "{OPERATOR_NAMESPACE}"}},
            "spec": {{"source": {{"kind": "{kind}", "name": "{source}"}}, {extra}
                      "namespaceSelector": {{"matchLabels": {{"mirror-e2e": "{label}"}}}}}}}}"#
    ));
}

/// The `kubectl get mirror` row as the user sees it: SOURCE, SELECTED, SYNCED, READY.
fn mirror_columns(cp: &ControlPlane, name: &str) -> Vec<String> {
    let args = [
        "get",
        "mirror",
        name,
        "-n",
        OPERATOR_NAMESPACE,
        "--no-headers",
    ];
    let row = cp.kubectl_ok(&args);
    row.split_whitespace()
        .skip(1)
        .take(4)
        .map(str::to_owned)
        .collect()
}

fn columns_are(cp: &ControlPlane, name: &str, wanted: [&str; 4]) -> bool {
    mirror_columns(cp, name) == wanted
}

/// A managed copy of `mirror` with `data` exists in `namespace`.
fn has_copy(cp: &ControlPlane, kind: &str, namespace: &str, target: &str, data: &Value) -> bool {
    let Some(copy) = cp.object(kind, namespace, target) else {
        return false;
    };
    let labels = &copy["metadata"]["labels"];
    copy["data"] == *data && labels["app.kubernetes.io/managed-by"] == "skiff"
}

fn absent(cp: &ControlPlane, kind: &str, namespace: &str, name: &str) -> bool {
    cp.object(kind, namespace, name).is_none()
}

#[test]
fn copies_follow_the_selector_and_hand_edits_are_restored() {
    if !e2e_enabled() {
        return;
    }
    with_skiff("mirror-fanout", |cp| {
        let label = "fanout";
        let first = cp.create_namespace("fanout", &[("mirror-e2e", label)]);
        let second = cp.create_namespace("fanout", &[("mirror-e2e", label)]);
        let later = cp.create_namespace("fanout", &[]);
        source_configmap(cp, "fanout-ca", r#"{"ca.crt": "one"}"#);
        mirror(cp, "fanout", "ConfigMap", "fanout-ca", "", label);
        let data = serde_json::json!({"ca.crt": "one"});

        wait_until("copies in both selected namespaces", || {
            has_copy(cp, "cm", &first, "fanout-ca", &data)
                && has_copy(cp, "cm", &second, "fanout-ca", &data)
        });
        assert!(
            absent(cp, "cm", &later, "fanout-ca"),
            "copy in unselected {later}"
        );
        wait_until(
            "kubectl get mirror shows 2 selected, 2 synced, Ready",
            || columns_are(cp, "fanout", ["fanout-ca", "2", "2", "True"]),
        );

        cp.kubectl_ok(&["label", "namespace", &second, "mirror-e2e-"]);
        wait_until("copy deleted from the unlabelled namespace", || {
            absent(cp, "cm", &second, "fanout-ca")
        });
        cp.kubectl_ok(&["label", "namespace", &later, &format!("mirror-e2e={label}")]);
        wait_until("copy created in the newly labelled namespace", || {
            has_copy(cp, "cm", &later, "fanout-ca", &data)
        });
        let added = cp.create_namespace("fanout", &[("mirror-e2e", label)]);
        wait_until("copy created in a new namespace", || {
            has_copy(cp, "cm", &added, "fanout-ca", &data)
        });

        let tamper = r#"{"data": {"ca.crt": "tampered"}}"#;
        cp.kubectl_ok(&[
            "patch",
            "cm",
            "fanout-ca",
            "-n",
            &first,
            "--type=merge",
            "-p",
            tamper,
        ]);
        wait_until("hand edit restored", || {
            has_copy(cp, "cm", &first, "fanout-ca", &data)
        });

        source_configmap(cp, "fanout-ca", r#"{"ca.crt": "two"}"#);
        let updated = serde_json::json!({"ca.crt": "two"});
        wait_until("source change reaches every copy", || {
            [&first, &later, &added]
                .iter()
                .all(|ns| has_copy(cp, "cm", ns, "fanout-ca", &updated))
        });
        wait_until(
            "kubectl get mirror shows 3 selected, 3 synced, Ready",
            || columns_are(cp, "fanout", ["fanout-ca", "3", "3", "True"]),
        );
    });
}

#[test]
fn an_unmanaged_object_with_the_target_name_is_untouched_and_reported() {
    if !e2e_enabled() {
        return;
    }
    with_skiff("mirror-conflict", |cp| {
        let label = "conflict";
        let taken = cp.create_namespace("conflict", &[("mirror-e2e", label)]);
        let free = cp.create_namespace("conflict", &[("mirror-e2e", label)]);
        cp.apply(&format!(
            r#"{{"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {{"name": "shared-settings", "namespace": "{taken}"}},
                "data": {{"owner": "team"}}}}"#
        ));
        let before = cp
            .object("cm", &taken, "shared-settings")
            .expect("unmanaged ConfigMap");
        source_configmap(cp, "shared-settings", r#"{"mode": "mirrored"}"#);
        mirror(cp, "conflict", "ConfigMap", "shared-settings", "", label);

        let data = serde_json::json!({"mode": "mirrored"});
        wait_until("copy in the free namespace", || {
            has_copy(cp, "cm", &free, "shared-settings", &data)
        });
        let ready = || {
            let mirror = cp.object("mirror", OPERATOR_NAMESPACE, "conflict")?;
            let conditions = mirror["status"]["conditions"].as_array()?.clone();
            conditions.into_iter().find(|c| c["type"] == "Ready")
        };
        wait_until("Ready condition says Conflict naming the namespace", || {
            ready().is_some_and(|c| {
                c["status"] == "False"
                    && c["reason"] == "Conflict"
                    && c["message"].as_str().unwrap_or("").contains(&taken)
            })
        });
        let after = cp
            .object("cm", &taken, "shared-settings")
            .expect("unmanaged ConfigMap");
        assert_eq!(
            after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
            "the unmanaged ConfigMap was written: {after:#}"
        );
        assert_eq!(after["data"], serde_json::json!({"owner": "team"}));

        wait_until("a Warning event on the Mirror names the conflict", || {
            let Some(events) = cp.get_json(&["events", "-n", OPERATOR_NAMESPACE]) else {
                return false;
            };
            let items = events["items"].as_array().cloned().unwrap_or_default();
            items.iter().any(|e| {
                e["involvedObject"]["kind"] == "Mirror"
                    && e["involvedObject"]["name"] == "conflict"
                    && e["type"] == "Warning"
                    && e["reason"] == "Conflict"
                    && e["message"].as_str().unwrap_or("").contains(&taken)
            })
        });
    });
}

#[test]
fn a_secret_copy_keeps_the_secret_type() {
    if !e2e_enabled() {
        return;
    }
    with_skiff("mirror-secret", |cp| {
        let label = "secret";
        let namespace = cp.create_namespace("secret", &[("mirror-e2e", label)]);
        cp.apply(&format!(
            r#"{{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
                "metadata": {{"name": "registry-credentials", "namespace": "{OPERATOR_NAMESPACE}"}},
                "stringData": {{".dockerconfigjson": "{{\"auths\":{{}}}}"}}}}"#
        ));
        let source = cp
            .object("secret", OPERATOR_NAMESPACE, "registry-credentials")
            .expect("source Secret");
        let extra = r#""targetName": "app-tls","#;
        mirror(cp, "secret", "Secret", "registry-credentials", extra, label);

        wait_until("Secret copy with the source's data", || {
            has_copy(cp, "secret", &namespace, "app-tls", &source["data"])
        });
        let copy = cp.object("secret", &namespace, "app-tls").expect("copy");
        assert_eq!(copy["type"], "kubernetes.io/dockerconfigjson", "{copy:#}");
    });
}

#[test]
fn deleting_a_mirror_deletes_its_copies_before_it_goes() {
    if !e2e_enabled() {
        return;
    }
    with_skiff("mirror-cleanup", |cp| {
        let label = "cleanup";
        let namespaces = [
            cp.create_namespace("cleanup", &[("mirror-e2e", label)]),
            cp.create_namespace("cleanup", &[("mirror-e2e", label)]),
        ];
        source_configmap(cp, "cleanup-settings", r#"{"a": "b"}"#);
        mirror(cp, "cleanup", "ConfigMap", "cleanup-settings", "", label);
        let data = serde_json::json!({"a": "b"});
        wait_until("copies in both namespaces", || {
            namespaces
                .iter()
                .all(|ns| has_copy(cp, "cm", ns, "cleanup-settings", &data))
        });
        let mirror = cp
            .object("mirror", OPERATOR_NAMESPACE, "cleanup")
            .expect("Mirror");
        let finalizers = mirror["metadata"]["finalizers"].to_string();
        assert!(finalizers.contains("skiff.dev/cleanup"), "{finalizers}");

        let delete = [
            "delete",
            "mirror",
            "cleanup",
            "-n",
            OPERATOR_NAMESPACE,
            "--timeout=20s",
        ];
        cp.kubectl_ok(&delete);
        assert!(absent(cp, "mirror", OPERATOR_NAMESPACE, "cleanup"));
        for namespace in &namespaces {
            assert!(
                absent(cp, "cm", namespace, "cleanup-settings"),
                "copy left in {namespace} after the Mirror was deleted"
            );
        }
        let source = cp.object("cm", OPERATOR_NAMESPACE, "cleanup-settings");
        assert!(source.is_some(), "the source was deleted with the Mirror");
    });
}
