//! e2e: a stolen skiff token, used by the thief's own hands, changes nothing skiff does not
//! manage, in every install mode; skiff's own writes pass the same policies; and skiff refuses to
//! start (`--require-write-policy`) while the policy is missing or disabled.
//!
//! Why: RBAC names kinds, not objects, so skiff's token may write every ConfigMap in the cluster
//! and, with the components, Secrets of the listed names and every object of the kit kinds. What
//! narrows that to skiff's own objects is the admission policies `skiff-writes` (the base) and
//! `skiff-kit-namespaces` and `skiff-rolebindings` (the kinds component), which only the real API
//! server evaluates. Each mode is installed as a user installs it: `manifests/`,
//! `deploy/secret-targets`, `deploy/kinds`, and the Helm chart under another release and
//! namespace (so another username, which the chart templates into its policies).

use std::time::Duration;

use crate::support::control_plane::{
    ControlPlane, E2E_REPLICA_FLAGS, OPERATOR_NAMESPACE, require_e2e_binaries, say,
};
use crate::support::kubectl::{RawRequest, https_request};
use crate::support::mirror_e2e::{
    Replica, SELECT_LABEL, absent, one_replica_at_a_time, wait_until,
};
use crate::support::skiff::{Skiff, TempDir, eventually};
use crate::support::thief::{
    ATTEMPTS, Answer, Attempt, HANDED_TO, Scene, Thief, each_install_mode, unlabelled_create_denied,
};
use serde_json::{Value, json};

/// Every kit kind, the roles `deploy/kinds` binds and its namespace label.
const KIT_FLAGS: [&str; 3] = [
    "--kinds=networkpolicies.networking.k8s.io,limitranges,resourcequotas,rolebindings.rbac.authorization.k8s.io,serviceaccounts",
    "--bindable-roles=edit,view",
    "--binding-namespace-label=skiff.dev/kit",
];
/// The log line of a replica whose probe the policy denied (`src/policy_check.rs`).
const HOLDS: &str = "the write policy holds this token to skiff's own objects";
/// How long a replica refusing to start may take: the probe's 20 s wait and its start.
const REFUSAL_WITHIN: Duration = Duration::from_secs(60);

/// Every attempt with the mode's token, for real: each must be refused, and every one RBAC
/// allows must be refused by one of the mode's policies with its message (403, not 422).
/// Returns the mode's table.
fn thwarted(cp: &ControlPlane, mode: &Thief) -> String {
    let scene = Scene::set_up(cp, &mode.name.replace(' ', "-"), mode.mirrors);
    // A policy just created takes the API server a moment to enforce: dry runs until none is
    // let through (if one still is, the attempts below show which).
    eventually(Duration::from_secs(20), || {
        ATTEMPTS
            .iter()
            .all(|a| !scene.try_with(cp, &mode.token, a, true).is_let_through())
    });
    let tried: Vec<(&Attempt, bool, Answer)> = ATTEMPTS
        .iter()
        .map(|attempt| {
            let rbac = mode.may(cp, &scene, attempt);
            (
                attempt,
                rbac,
                scene.try_with(cp, &mode.token, attempt, false),
            )
        })
        .collect();
    let wrong: Vec<String> = tried
        .iter()
        .filter(|(_, rbac, answer)| match answer {
            Answer::Policy(name) => !name.starts_with(mode.policies),
            Answer::Rbac => *rbac,
            _ => true,
        })
        .map(|(attempt, rbac, answer)| format!("{} (RBAC allows: {rbac}): {answer}", attempt.what))
        .collect();
    let issue = tried.iter().filter(|(attempt, _, _)| attempt.headline);
    let allowed = issue.clone().filter(|(_, rbac, _)| *rbac).count();
    let through = issue
        .filter(|(_, _, answer)| answer.is_let_through())
        .count();
    let rows: Vec<String> = tried
        .iter()
        .map(|(attempt, rbac, answer)| format!("| {} | {rbac} | {answer} |", attempt.what))
        .collect();
    let table = format!(
        "{}: the issue's 11, {allowed} allowed by RBAC, {through} let through\n\
         | attempt | RBAC allows | answer |\n|---|---|---|\n{}",
        mode.name,
        rows.join("\n")
    );
    assert!(
        wrong.is_empty(),
        "{}: not refused by a policy of skiff's:\n{}\n\n{table}",
        mode.name,
        wrong.join("\n")
    );
    table
}

/// The thief's attempts (`tests/support/thief.rs`), the issue's 11 among them, with skiff's token
/// in each install mode, one after another on a control plane of the test's own: default,
/// Secret targets, kit kinds (without Secret targets), and the chart with everything on. Each
/// is refused, and each that RBAC allows is refused by a policy of skiff's with its message.
/// (Take `write-policy.yaml` out of `manifests/kustomization.yaml` and this fails on the first
/// mode: coredns is overwritten.)
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_stolen_skiff_token_changes_nothing_skiff_does_not_manage_in_any_install_mode() {
    require_e2e_binaries();
    let cp = ControlPlane::start();
    let mut tables = Vec::new();
    each_install_mode(&cp, |thief| tables.push(thwarted(&cp, thief)));
    say(&tables.join("\n\n"));
    status_writes_change_only_the_status(&cp);
}

/// Status subresources are not matched by the policy: the API server keeps everything but the
/// status from a status write, so the token can forge a Mirror's status (README says so) but not
/// re-aim it through `/status`.
fn status_writes_change_only_the_status(cp: &ControlPlane) {
    let mut mirror = cp
        .object("mirror", OPERATOR_NAMESPACE, "thief")
        .expect("the scene's Mirror");
    let selector = mirror["spec"]["namespaceSelector"].clone();
    mirror["spec"]["namespaceSelector"] = json!({});
    mirror["status"] = json!({"observedGeneration": 1, "selected": 1000});
    let path =
        format!("/apis/skiff.dev/v1alpha1/namespaces/{OPERATOR_NAMESPACE}/mirrors/thief/status");
    let body = mirror.to_string();
    let request = RawRequest {
        method: "PUT",
        path: &path,
        accept: "application/json",
        body: Some(("application/json", &body)),
    };
    let response = https_request(cp.url(), cp.ca_pem(), Some(cp.operator_token()), &request)
        .expect("PUT the status");
    assert_eq!(response.status, 200, "{}", response.body);
    let after = cp
        .object("mirror", OPERATOR_NAMESPACE, "thief")
        .expect("the Mirror");
    assert_eq!(
        after["spec"]["namespaceSelector"], selector,
        "re-aimed: {after:#}"
    );
    assert_eq!(
        after["status"]["selected"], 1000,
        "the status was forged: {after:#}"
    );
}

/// One source in skiff's namespace: `kind`, `api_version`, `content` members.
fn source(cp: &ControlPlane, kind: &str, api_version: &str, name: &str, content: Value) {
    let mut object = json!({"apiVersion": api_version, "kind": kind,
        "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE}});
    for (field, value) in content.as_object().into_iter().flatten() {
        object[field] = value.clone();
    }
    cp.apply(&object.to_string());
}

/// A merge patch with `token`; the status it got.
fn patch_as(cp: &ControlPlane, token: &str, path: &str, patch: &str) -> u16 {
    let request = RawRequest {
        method: "PATCH",
        path,
        accept: "application/json",
        body: Some(("application/merge-patch+json", patch)),
    };
    let response = https_request(cp.url(), cp.ca_pem(), Some(token), &request)
        .unwrap_or_else(|e| panic!("PATCH {path}: {e}"));
    response.status
}

/// skiff, launched with `--require-write-policy` and every kind, copies one object of each
/// kind into a labelled namespace through the policies; the token may change and delete those
/// copies (and adopt what was handed over), which is what it is for; deleting the Mirrors still
/// deletes every copy and removes each finalizer; and skiff's log shows no denial (checked as
/// every Mirror e2e replica stops).
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn skiffs_own_copies_pass_the_policy_and_a_deleted_mirror_still_cleans_up() {
    require_e2e_binaries();
    let _turn = one_replica_at_a_time();
    let cp = crate::support::mirror_e2e::control_plane().install_overlay("kinds");
    let label = "policy-own";
    let ns = cp.create_namespace(label, &[(SELECT_LABEL, label), ("skiff.dev/kit", label)]);
    let kinds = [
        (
            "ConfigMap",
            "v1",
            "configmaps",
            "own-cm",
            json!({"data": {"k": "v"}}),
        ),
        (
            "Secret",
            "v1",
            "secrets",
            "app-tls",
            json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "Y3J0", "tls.key": "a2V5"}}),
        ),
        (
            "NetworkPolicy",
            "networking.k8s.io/v1",
            "networkpolicies",
            "own-np",
            json!({"spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}),
        ),
        (
            "LimitRange",
            "v1",
            "limitranges",
            "own-lr",
            json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}}]}}),
        ),
        (
            "ResourceQuota",
            "v1",
            "resourcequotas",
            "own-rq",
            json!({"spec": {"hard": {"pods": "10"}}}),
        ),
        (
            "ServiceAccount",
            "v1",
            "serviceaccounts",
            "own-sa",
            json!({"imagePullSecrets": [{"name": "registry-pull"}]}),
        ),
        (
            "RoleBinding",
            "rbac.authorization.k8s.io/v1",
            "rolebindings",
            "own-rb",
            json!({"subjects": [{"kind": "Group", "name": "team", "apiGroup": "rbac.authorization.k8s.io"}],
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}}),
        ),
    ];
    let mut flags = KIT_FLAGS.to_vec();
    flags.push("--require-write-policy");
    let replica = Replica::start_with(cp, label, &flags);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_until("the probe is denied at start", || {
            replica.skiff.logs().contains(HOLDS)
        });
        for (kind, api_version, _, name, content) in &kinds {
            source(cp, kind, api_version, name, content.clone());
            cp.apply(&json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
                "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE},
                "spec": {"source": {"kind": kind, "name": name},
                         "namespaceSelector": {"matchLabels": {SELECT_LABEL: label, "skiff.dev/kit": label}}}})
                .to_string());
        }
        let copied = |resource: &str, name: &str| {
            cp.object(resource, &ns, name).is_some_and(|copy| {
                copy["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "skiff"
            })
        };
        wait_until("a copy of each kind", || {
            kinds
                .iter()
                .all(|(_, _, resource, name, _)| copied(resource, name))
        });
        let token = cp.operator_token();
        for (_, api_version, resource, name, _) in &kinds {
            let group = if *api_version == "v1" {
                "/api/v1".to_owned()
            } else {
                format!("/apis/{api_version}")
            };
            let path = format!("{group}/namespaces/{ns}/{resource}/{name}");
            let status = patch_as(
                cp,
                token,
                &path,
                r#"{"metadata": {"annotations": {"thief": "was here"}}}"#,
            );
            assert_eq!(status, 200, "changing skiff's own {resource} copy");
        }
        let handed = "policy-handed";
        cp.apply(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": handed, "namespace": ns, "annotations": {"skiff.dev/adopt": HANDED_TO}}})
            .to_string());
        let (owner_ns, owner) = HANDED_TO.split_once('/').expect("namespace/name");
        let adopt = json!({"metadata": {"labels": {"app.kubernetes.io/managed-by": "skiff",
            "skiff.dev/mirror-namespace": owner_ns, "skiff.dev/mirror-name": owner}}});
        let path = format!("/api/v1/namespaces/{ns}/configmaps/{handed}");
        assert_eq!(
            patch_as(cp, token, &path, &adopt.to_string()),
            200,
            "adopting what was handed over"
        );
        for (_, _, _, name, _) in &kinds {
            let mirror = cp
                .object("mirror", OPERATOR_NAMESPACE, name)
                .expect("the Mirror");
            assert_eq!(
                mirror["metadata"]["finalizers"],
                json!(["skiff.dev/cleanup"]),
                "{mirror:#}"
            );
        }
        for (_, _, _, name, _) in &kinds {
            cp.kubectl_ok(&[
                "delete",
                "mirror",
                name,
                "-n",
                OPERATOR_NAMESPACE,
                "--wait=false",
            ]);
        }
        wait_until("every copy deleted and every Mirror gone", || {
            kinds.iter().all(|(_, _, resource, name, _)| {
                absent(cp, resource, &ns, name) && absent(cp, "mirror", OPERATOR_NAMESPACE, name)
            })
        });
    }));
    if outcome.is_err() {
        eprintln!("skiff log:\n{}", replica.skiff.logs());
    }
    replica.stop();
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// skiff as a replica of the Deployment: `--require-write-policy` and the e2e flags.
fn start_requiring(cp: &ControlPlane, dir: &TempDir, name: &str) -> Skiff {
    let mut flags = E2E_REPLICA_FLAGS.to_vec();
    flags.push("--require-write-policy=true");
    let log = dir.0.join(format!("{name}.log"));
    Skiff::start_with_env(
        &cp.operator_kubeconfig(),
        log,
        &flags,
        &[("POD_NAME", name)],
    )
}

/// Waits until the API server lets skiff's token create an unlabelled ConfigMap (a dry run):
/// the policy change below is in effect.
fn wait_let_through(cp: &ControlPlane) {
    wait_until("an unlabelled create let through", || {
        !unlabelled_create_denied(cp, cp.operator_token(), OPERATOR_NAMESPACE)
    });
}

/// skiff launched as the Deployment launches it refuses to start (exit 1, naming the policy and
/// the flag) when its token is not held to skiff's objects, the binding only warning or the
/// policy gone; with the policy enforced it starts; without the flag it does not ask. On a
/// control plane of the test's own, as it disables the policy.
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn skiff_with_require_write_policy_refuses_to_start_while_the_policy_is_missing_or_disabled() {
    require_e2e_binaries();
    let cp = ControlPlane::start();
    cp.install_manifests();
    let dir = TempDir::new("e2e-policy-start");
    let mut enforced = start_requiring(&cp, &dir, "enforced");
    assert!(
        eventually(REFUSAL_WITHIN, || enforced.logs().contains(HOLDS)),
        "skiff did not find the policy; log:\n{}",
        enforced.logs()
    );
    enforced.terminate(Duration::from_secs(20));

    let warn = r#"{"spec": {"validationActions": ["Warn"]}}"#;
    cp.kubectl_ok(&[
        "patch",
        "validatingadmissionpolicybinding",
        "skiff-writes",
        "--type=merge",
        "-p",
        warn,
    ]);
    wait_let_through(&cp);
    let refusals = [("disabled", "the binding only warns")];
    for (name, why) in refusals {
        refuses(&cp, &dir, name, why);
    }
    let policy =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/write-policy.yaml");
    cp.kubectl_ok(&["delete", "-f", &policy.display().to_string()]);
    refuses(&cp, &dir, "missing", "the policy is gone");

    let mut flags = E2E_REPLICA_FLAGS.to_vec();
    flags.push("--require-write-policy=false");
    let mut unchecked = Skiff::start_with_env(
        &cp.operator_kubeconfig(),
        dir.0.join("unchecked.log"),
        &flags,
        &[("POD_NAME", "unchecked")],
    );
    assert!(
        eventually(REFUSAL_WITHIN, || unchecked
            .logs()
            .contains("mirror caches filled")),
        "without the flag skiff runs; log:\n{}",
        unchecked.logs()
    );
    assert!(
        unchecked.logs().contains("--require-write-policy=false"),
        "{}",
        unchecked.logs()
    );
    unchecked.terminate(Duration::from_secs(20));
}

/// A replica named `name` exits 1 with the refusal, the policy being `why`.
fn refuses(cp: &ControlPlane, dir: &TempDir, name: &str, why: &str) {
    let mut skiff = start_requiring(cp, dir, name);
    let code = skiff.wait_exit(REFUSAL_WITHIN);
    let log = skiff.logs();
    assert_eq!(
        code,
        Some(1),
        "{why}: skiff did not refuse to start; log:\n{log}"
    );
    for part in [
        "--require-write-policy: the API server let this token create",
        "skiff-writes",
    ] {
        assert!(
            log.contains(part),
            "{why}: the refusal lacks {part:?}:\n{log}"
        );
    }
}
