//! e2e: the shipped manifests install on a real API server, and the CRD schema guards Mirrors.
//!
//! Why: a manifest that a fake server accepts can still be refused by Kubernetes (schema
//! structure, CEL cost, kustomize). These tests apply `manifests/` to kube-apiserver itself.

use crate::support::control_plane::{ControlPlane, manifests_dir, require_e2e_binaries};
use crate::support::kubectl::succeeded;

/// `KIND/NAME=RESOURCEVERSION` of every object in `manifests/`, sorted.
fn manifest_versions(cp: &ControlPlane) -> Vec<String> {
    let manifests = manifests_dir().display().to_string();
    let template = r#"jsonpath={range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}"#;
    let out = cp.kubectl_ok(&["get", "-k", &manifests, "-o", template]);
    let mut versions: Vec<String> = out.lines().map(str::to_owned).collect();
    versions.sort();
    versions
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn manifests_apply_and_reapplying_changes_nothing() {
    require_e2e_binaries();
    let cp = ControlPlane::installed(); // the first `apply -k` succeeded
    let before = manifest_versions(cp);
    for kind in [
        "Namespace/skiff-system",
        "CustomResourceDefinition/mirrors.skiff.dev",
        "CustomResourceDefinition/mirroracceptances.skiff.dev",
        "ServiceAccount/skiff",
        "ClusterRole/skiff",
        "ClusterRoleBinding/skiff",
        "Role/skiff-leader-election",
        "RoleBinding/skiff-leader-election",
        "Deployment/skiff",
        "PodDisruptionBudget/skiff",
        "FlowSchema/skiff-leader-election",
        "ClusterRole/skiff-metrics-auth",
        "ClusterRoleBinding/skiff-metrics-auth",
        "ClusterRole/skiff-metrics-reader",
        "Service/skiff-metrics",
        "NetworkPolicy/skiff-allow-metrics-and-probes",
        "ClusterRole/skiff-tenant-edit",
        "ClusterRole/skiff-tenant-view",
        "ValidatingAdmissionPolicy/skiff-self-service",
        "ValidatingAdmissionPolicyBinding/skiff-self-service",
        "ValidatingAdmissionPolicy/skiff-writes",
        "ValidatingAdmissionPolicyBinding/skiff-writes",
    ] {
        let prefix = format!("{kind}=");
        assert!(
            before.iter().any(|v| v.starts_with(&prefix)),
            "{kind} not installed: {before:?}"
        );
    }
    let manifests = manifests_dir().display().to_string();
    cp.kubectl_ok(&["apply", "-k", &manifests]);
    assert_eq!(
        manifest_versions(cp),
        before,
        "a second apply changed objects"
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn mirror_crd_is_established_with_its_short_name() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    let conditions = cp.kubectl_ok(&[
        "get",
        "crd",
        "mirrors.skiff.dev",
        "-o",
        r#"jsonpath={range .status.conditions[*]}{.type}={.status}{"\n"}{end}"#,
    ]);
    for condition in ["Established=True", "NamesAccepted=True"] {
        assert!(
            conditions.lines().any(|l| l == condition),
            "{condition} missing: {conditions}"
        );
    }
    cp.kubectl_ok(&["get", "mir", "--all-namespaces"]);
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn samples_pass_server_side_dry_run_and_create_nothing() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    let samples = manifests_dir().join("samples");
    let file = |name: &str| samples.join(name).display().to_string();
    let files = [
        "configmap-mirror.yaml",
        "secret-mirror.yaml",
        "picked-keys-mirror.yaml",
        "argocd-repository-mirror.yaml",
        "gitops-safe-mirror.yaml",
        "cert-manager-ca-mirror.yaml",
    ]
    .map(file);
    let mut args = vec!["apply", "--dry-run=server"];
    for file in &files {
        args.extend(["-f", file]);
    }
    let out = cp.kubectl_ok(&args);
    for line in [
        "configmap/app-ca created (server dry run)",
        "mirror.skiff.dev/app-ca created (server dry run)",
        "secret/app-tls created (server dry run)",
        "mirror.skiff.dev/app-tls created (server dry run)",
        "configmap/platform-settings created (server dry run)",
        "mirror.skiff.dev/platform-settings created (server dry run)",
        "secret/git-repo created (server dry run)",
        "mirror.skiff.dev/git-repo created (server dry run)",
        "configmap/db-ca created (server dry run)",
        "mirror.skiff.dev/db-ca created (server dry run)",
        "mirror.skiff.dev/platform-ca created (server dry run)",
    ] {
        assert!(
            out.lines().any(|l| l == line),
            "expected {line:?} in:\n{out}"
        );
    }
    let kustomized = samples.display().to_string();
    cp.kubectl_ok(&["apply", "--dry-run=server", "-k", &kustomized]);
    let get = cp.kubectl(&["get", "mirror", "app-ca", "-n", "skiff-system"]);
    assert!(!get.status.success(), "dry run created the sample Mirror");
}

fn mirror(namespace: &str, name: &str, spec: serde_json::Value) -> String {
    serde_json::json!({
        "apiVersion": "skiff.dev/v1alpha1",
        "kind": "Mirror",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    })
    .to_string()
}

/// Creates a Mirror in `ns` for each `(spec, expected)` and asserts the API server refuses it
/// with `expected` in its message.
fn assert_refused<const N: usize>(
    cp: &ControlPlane,
    ns: &str,
    cases: [(serde_json::Value, &str); N],
) {
    for (i, (spec, expected)) in cases.into_iter().enumerate() {
        let output = cp.kubectl_stdin(
            &["create", "-f", "-"],
            &mirror(ns, &format!("bad-{i}"), spec),
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !output.status.success(),
            "case {i} was accepted; expected {expected:?}"
        );
        assert!(
            stderr.contains(expected),
            "case {i}: expected {expected:?} in:\n{stderr}"
        );
    }
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn schema_rejects_invalid_mirrors_naming_the_field() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    let ns = cp.create_namespace("e2e-schema", &[]);
    let selector = |expression: serde_json::Value| {
        serde_json::json!({"source": {"kind": "ConfigMap", "name": "app-ca"},
                           "namespaceSelector": {"matchExpressions": [expression]}})
    };
    let cases = [
        (
            serde_json::json!({"source": {"kind": "ConfigMap"}}),
            "spec.source.name: Required value",
        ),
        (
            serde_json::json!({"source": {"kind": "Pod", "name": "app-ca"}}),
            r#"spec.source.kind: Unsupported value: "Pod""#,
        ),
        (
            selector(serde_json::json!({"key": "team", "operator": "Has"})),
            r#"spec.namespaceSelector.matchExpressions[0].operator: Unsupported value: "Has""#,
        ),
        (
            selector(serde_json::json!({"key": "team", "operator": "In"})),
            "spec.namespaceSelector.matchExpressions[0]: Invalid value: values must be non-empty",
        ),
        (
            serde_json::json!({"source": {"kind": "Secret", "name": "app-ca"}, "targetName": "Bad_Name"}),
            r#"spec.targetName: Invalid value: "Bad_Name""#,
        ),
        (
            serde_json::json!({"targetName": "app-ca"}),
            "spec.source: Required value",
        ),
    ];
    assert_refused(cp, &ns, cases);
    let long_name = "m".repeat(64);
    let output = cp.kubectl_stdin(
        &["create", "-f", "-"],
        &mirror(
            &ns,
            &long_name,
            serde_json::json!({"source": {"kind": "ConfigMap", "name": "app-ca"}}),
        ),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("at most 63 characters"),
        "a 64-character Mirror name was not refused:\n{stderr}"
    );
    // The same shapes, made valid, are accepted: the rejections are about those fields.
    let valid = selector(serde_json::json!({"key": "team", "operator": "In", "values": ["a"]}));
    let args = ["create", "-f", "-"];
    succeeded(&args, cp.kubectl_stdin(&args, &mirror(&ns, "good", valid)));
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn schema_refuses_skiffs_own_keys_never_copied_keys_and_malformed_ones_with_a_message() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    let ns = cp.create_namespace("e2e-schema-metadata", &[]);
    let source = serde_json::json!({"kind": "ConfigMap", "name": "app-ca"});
    let target = |metadata: serde_json::Value| serde_json::json!({"source": source, "target": {"metadata": metadata}});
    let carried = |field: &str, keys: serde_json::Value| {
        let mut source = source.clone();
        source[field] = keys;
        serde_json::json!({"source": source})
    };
    let cases = [
        (
            target(serde_json::json!({"labels": {"app.kubernetes.io/managed-by": "me"}})),
            "app.kubernetes.io/managed-by cannot be set here: skiff sets",
        ),
        (
            target(serde_json::json!({"annotations": {"skiff.dev/source-hash": "x"}})),
            "skiff.dev/source-hash cannot be set here",
        ),
        (
            target(serde_json::json!({"labels": {"not a key": "x"}})),
            "not a key is not a valid key",
        ),
        (
            target(serde_json::json!({"labels": {"team": "not a value"}})),
            "spec.target.metadata.labels.team: Invalid value",
        ),
        (
            carried(
                "copyLabels",
                serde_json::json!(["app.kubernetes.io/instance"]),
            ),
            "app.kubernetes.io/instance is never copied from a source",
        ),
        (
            carried(
                "copyAnnotations",
                serde_json::json!(["argocd.argoproj.io/tracking-id"]),
            ),
            "argocd.argoproj.io/tracking-id is never copied from a source",
        ),
        (
            carried(
                "copyLabels",
                serde_json::json!(["kustomize.toolkit.fluxcd.io/*"]),
            ),
            "kustomize.toolkit.fluxcd.io/* is never copied",
        ),
        (
            carried("copyLabels", serde_json::json!(["cnpg*"])),
            "spec.source.copyLabels[0]: Invalid value",
        ),
        (
            carried("keys", serde_json::json!([])),
            "spec.source.keys: Invalid value: 0",
        ),
    ];
    assert_refused(cp, &ns, cases);
    // Every field at once, made valid, is accepted.
    let mut valid = target(serde_json::json!({
        "labels": {"argocd.argoproj.io/secret-type": "repository"},
        "annotations": {"reloader.stakater.com/match": "true"}}));
    valid["source"]["keys"] = serde_json::json!(["ca.crt"]);
    valid["source"]["copyLabels"] = serde_json::json!(["*", "cnpg.io/*", "team"]);
    valid["source"]["copyAnnotations"] = serde_json::json!(["docs.example.com/owner"]);
    let args = ["create", "-f", "-"];
    succeeded(&args, cp.kubectl_stdin(&args, &mirror(&ns, "good", valid)));
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn get_mirrors_shows_source_selected_synced_ready_reason_contested_clusters_and_age() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    let ns = cp.create_namespace("e2e-columns", &[]);
    let spec = serde_json::json!({"source": {"kind": "ConfigMap", "name": "app-ca"}});
    cp.apply(&mirror(&ns, "columns", spec));
    let status = serde_json::json!({"status": {"selected": 3, "synced": 2, "conflicts": 1, "contested": 1,
        "conditions": [{"type": "Ready", "status": "False", "reason": "Conflict",
                        "message": "team-a/app-ca is not managed by skiff",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    let status = status.to_string();
    let patch = [
        "patch",
        "mirror",
        "columns",
        "-n",
        &ns,
        "--subresource=status",
    ];
    cp.kubectl_ok(&[&patch[..], &["--type=merge", "-p", &status]].concat());

    let table = cp.kubectl_ok(&["get", "mirrors", "-n", &ns]);
    let mut lines = table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>());
    let header = lines.next().unwrap_or_default();
    assert_eq!(
        header,
        [
            "NAME",
            "SOURCE",
            "SELECTED",
            "SYNCED",
            "READY",
            "REASON",
            "CONTESTED",
            "CURRENT",
            "SILENT",
            "AGE"
        ],
        "{table}"
    );
    // A local Mirror has no clusters: CURRENT and SILENT stay empty, its age follows.
    let row = lines.next().unwrap_or_default();
    assert_eq!(
        row[..7],
        ["columns", "app-ca", "3", "2", "False", "Conflict", "1"],
        "{table}"
    );
    assert_eq!(row.len(), 8, "{table}");
    assert_eq!(
        cp.kubectl_ok(&["get", "mir", "-n", &ns, "-o", "name"])
            .trim(),
        "mirror.skiff.dev/columns"
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn schema_refuses_projections_renames_and_policies_skiff_cannot_honour() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    let ns = cp.create_namespace("e2e-schema-projection", &[]);
    let secret = serde_json::json!({"kind": "Secret", "name": "ca", "keys": ["tls.crt", "ca.crt"]});
    let with = |source: serde_json::Value, more: serde_json::Value| {
        let mut spec = serde_json::json!({"source": source});
        for (field, value) in more.as_object().cloned().unwrap_or_default() {
            spec[field] = value;
        }
        spec
    };
    let renamed = |renames: serde_json::Value| {
        let mut source = secret.clone();
        source["rename"] = renames;
        with(source, serde_json::json!({}))
    };
    let cases = [
        (
            with(
                serde_json::json!({"kind": "ConfigMap", "name": "ca"}),
                serde_json::json!({"target": {"kind": "Secret"}}),
            ),
            "target.kind Secret: a ConfigMap is not published as a Secret",
        ),
        (
            with(
                serde_json::json!({"kind": "Secret", "name": "ca"}),
                serde_json::json!({"target": {"kind": "ConfigMap"}}),
            ),
            "a Secret is published as a ConfigMap only with source.keys",
        ),
        (
            with(
                serde_json::json!({"kind": "LimitRange", "name": "l",
                    "rename": [{"from": "a", "to": "b"}]}),
                serde_json::json!({}),
            ),
            "keys and rename name keys of a ConfigMap or Secret",
        ),
        (
            renamed(serde_json::json!([{"from": "tls.crt", "to": "a/b"}])),
            "rename from tls.crt to a/b: a/b is not a valid key",
        ),
        (
            renamed(serde_json::json!([{"from": "..", "to": "ca.pem"}])),
            "rename from .. to ca.pem: .. is not a valid key",
        ),
        (
            renamed(
                serde_json::json!([{"from": "tls.crt", "to": "x"}, {"from": "ca.crt", "to": "x"}]),
            ),
            "spec.source.rename[1]: Duplicate value",
        ),
        (
            renamed(
                serde_json::json!([{"from": "tls.crt", "to": "x"}, {"from": "tls.crt", "to": "y"}]),
            ),
            "a key is renamed once",
        ),
        (
            renamed(serde_json::json!([{"from": "tls.key", "to": "x"}])),
            "rename names a key that is not in keys",
        ),
        (
            with(
                secret.clone(),
                serde_json::json!({"deletionPolicy": "Keep"}),
            ),
            r#"spec.deletionPolicy: Unsupported value: "Keep""#,
        ),
    ];
    assert_refused(cp, &ns, cases);
    // Every field at once, made valid, is accepted.
    let mut source = secret.clone();
    source["rename"] = serde_json::json!([{"from": "tls.crt", "to": "chain.pem"}]);
    let valid = with(
        source,
        serde_json::json!({"target": {"kind": "ConfigMap"}, "deletionPolicy": "Orphan"}),
    );
    let args = ["create", "-f", "-"];
    succeeded(&args, cp.kubectl_stdin(&args, &mirror(&ns, "good", valid)));
}
