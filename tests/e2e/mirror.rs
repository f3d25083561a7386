//! e2e: the Mirror controller on a real API server, checked with kubectl as a user would.
//!
//! Why: the fake server models the API; only the real one proves that the copies, the status
//! columns, the Events and the finalizer work under the shipped RBAC. How skiff runs here:
//! `support/mirror_e2e.rs`.

use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, require_e2e_binaries};
use crate::support::mirror_e2e::{
    absent, has_copy, mirror, source_configmap, wait_until, with_skiff,
};

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

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn copies_follow_the_selector_and_hand_edits_are_restored() {
    require_e2e_binaries();
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
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn an_unmanaged_object_with_the_target_name_is_untouched_and_reported() {
    require_e2e_binaries();
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
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_secret_copy_keeps_the_secret_type() {
    require_e2e_binaries();
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
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn deleting_a_mirror_deletes_its_copies_before_it_goes() {
    require_e2e_binaries();
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

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_copy_follows_its_source_gaining_and_losing_binary_data() {
    require_e2e_binaries();
    with_skiff("mirror-binary", |cp| {
        let label = "binary";
        let ns = cp.create_namespace("binary", &[("mirror-e2e", label)]);
        source_configmap(cp, "blobs", r#"{"text": "hello"}"#);
        mirror(cp, "binary", "ConfigMap", "blobs", "", label);
        let data = serde_json::json!({"text": "hello"});
        wait_until("a copy", || has_copy(cp, "cm", &ns, "blobs", &data));

        // The copy has no binaryData yet: a strategic patch's `$patch: replace` of a map the
        // object lacks is dropped by the API server, so skiff must set it another way.
        let with_binary = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "blobs", "namespace": OPERATOR_NAMESPACE},
            "data": {"text": "hello"}, "binaryData": {"bin": "AAEC"}});
        cp.apply(&with_binary.to_string());
        let binary = |cp: &ControlPlane| {
            cp.object("cm", &ns, "blobs")
                .map(|c| c["binaryData"].clone())
                .unwrap_or_default()
        };
        wait_until("the copy gains the binaryData", || {
            binary(cp) == serde_json::json!({"bin": "AAEC"})
        });
        cp.kubectl_ok(&[
            "patch",
            "cm",
            "blobs",
            "-n",
            OPERATOR_NAMESPACE,
            "--type=json",
            "-p",
            r#"[{"op": "remove", "path": "/binaryData"}, {"op": "remove", "path": "/data"}]"#,
        ]);
        wait_until("the copy loses both maps", || {
            cp.object("cm", &ns, "blobs")
                .is_some_and(|c| c["binaryData"].is_null() && c["data"].is_null())
        });
    });
}
