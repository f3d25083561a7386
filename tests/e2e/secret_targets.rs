//! e2e: Secrets by least privilege, on a real API server with RBAC enforced.
//!
//! Why: only the real authorizer shows what skiff's ServiceAccount may do with Secrets. One
//! test, in phases, on this binary's own control plane: the default install (`manifests/`)
//! gives skiff no right on any Secret, and the skiff binary run that way reads none (its log
//! has no 403) while the Secret sample Mirror reports `SecretTargetsDisabled`; then the
//! secret-targets component (`deploy/secret-targets`) lets the same sample mirror `app-tls`
//! into the selected namespaces, while any other Secret there stays forbidden to skiff.
//! `kubectl auth can-i --list` as the ServiceAccount is printed before and after.

use std::path::Path;
use std::time::Duration;

use crate::support::control_plane::{
    ControlPlane, OPERATOR_NAMESPACE, manifests_dir, require_e2e_binaries,
};
use crate::support::skiff::{Skiff, TempDir, eventually};
use serde_json::Value;

const STEP_TIMEOUT: Duration = Duration::from_secs(20);
/// What every run here passes besides `--secret-target-names`: sources in skiff's namespace,
/// no leader election (one replica), and no fixed ports.
const BASE_FLAGS: [&str; 3] = [
    "--source-namespaces=skiff-system",
    "--health-probe-bind-address=127.0.0.1:0",
    "--metrics-bind-address=0",
];
const SAMPLE: &str = "app-tls";

fn repo_path(relative: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(relative)
        .display()
        .to_string()
}

fn wait_until(what: &str, check: impl FnMut() -> bool) {
    assert!(eventually(STEP_TIMEOUT, check), "timed out: {what}");
}

/// `kubectl auth can-i VERB RESOURCE` with the ServiceAccount's own token; `None` namespace =
/// all namespaces.
fn can_i(cp: &ControlPlane, verb: &str, resource: &str, namespace: Option<&str>) -> bool {
    let mut args = vec!["auth", "can-i", verb, resource];
    match namespace {
        Some(ns) => args.extend(["-n", ns]),
        None => args.push("--all-namespaces"),
    }
    let output = cp.kubectl_as_operator(&args);
    match String::from_utf8_lossy(&output.stdout).trim() {
        "yes" => true,
        "no" => false,
        other => panic!(
            "can-i {args:?}: {other:?} {}",
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

/// Each `(verb, resource, namespace)` whose answer is not `expected`.
fn disagreements(
    cp: &ControlPlane,
    checks: &[(&str, &str, Option<&str>)],
    expected: bool,
) -> Vec<String> {
    checks
        .iter()
        .filter(|(verb, resource, ns)| can_i(cp, verb, resource, *ns) != expected)
        .map(|(verb, resource, ns)| format!("{verb} {resource} {}", ns.unwrap_or("(all)")))
        .collect()
}

/// Written straight to stderr, past the test harness's capture: the permissions of each mode
/// belong in every run's output, not only a failing one's.
fn print_permissions(cp: &ControlPlane, phase: &str, namespaces: &[&str]) {
    use std::io::Write as _;
    for ns in namespaces {
        let output = cp.kubectl_as_operator(&["auth", "can-i", "--list", "-n", ns]);
        let _ = writeln!(
            std::io::stderr(),
            "--- {phase}: kubectl auth can-i --list -n {ns} as the skiff ServiceAccount ---\n{}",
            String::from_utf8_lossy(&output.stdout)
        );
    }
}

/// Runs skiff with the operator's token, `BASE_FLAGS` and `extra`, until `test` returns; then
/// stops it (exit 0 expected) and returns its log.
fn with_skiff(name: &str, extra: &[&str], test: impl FnOnce()) -> String {
    let cp = ControlPlane::shared();
    let dir = TempDir::new(&format!("e2e-secret-targets-{name}"));
    let mut flags = BASE_FLAGS.to_vec();
    flags.extend_from_slice(extra);
    let mut skiff = Skiff::start(&cp.operator_kubeconfig(), dir.0.join("skiff.log"), &flags);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(test));
    skiff.signal("TERM");
    let code = skiff.wait_exit(STEP_TIMEOUT);
    let logs = skiff.logs();
    if let Err(panic) = outcome {
        eprintln!("skiff log ({name}):\n{logs}");
        std::panic::resume_unwind(panic);
    }
    assert_eq!(code, Some(0), "skiff exit; log:\n{logs}");
    logs
}

fn assert_no_forbidden(logs: &str, phase: &str) {
    let refused: Vec<&str> = logs
        .lines()
        .filter(|l| l.to_ascii_lowercase().contains("forbidden"))
        .collect();
    assert!(
        refused.is_empty(),
        "{phase}: skiff was refused by RBAC:\n{}",
        refused.join("\n")
    );
}

fn ready(cp: &ControlPlane, mirror: &str) -> Option<Value> {
    let mirror = cp.object("mirror", OPERATOR_NAMESPACE, mirror)?;
    let conditions = mirror["status"]["conditions"].as_array()?.clone();
    conditions.into_iter().find(|c| c["type"] == "Ready")
}

fn ready_is(cp: &ControlPlane, mirror: &str, status: &str, reason: &str) -> bool {
    ready(cp, mirror).is_some_and(|c| c["status"] == status && c["reason"] == reason)
}

/// The namespaces the samples select (and one they don't), labelled as the samples expect.
struct Namespaces {
    prod: String,
    staging: String,
    dev: String,
}

impl Namespaces {
    fn create(cp: &ControlPlane) -> Namespaces {
        let env = |value| [("environment", value), ("team", "payments")];
        Namespaces {
            prod: cp.create_namespace("sectgt-prod", &env("prod")),
            staging: cp.create_namespace("sectgt-staging", &env("staging")),
            dev: cp.create_namespace("sectgt-dev", &env("dev")),
        }
    }
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn secret_copies_need_the_component_and_stay_within_its_names() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    let ns = Namespaces::create(cp);
    default_install_reads_no_secret(cp, &ns);
    let names = install_component(cp);
    component_mirrors_only_its_names(cp, &ns, &names);
}

fn default_install_reads_no_secret(cp: &ControlPlane, ns: &Namespaces) {
    print_permissions(cp, "default install", &[OPERATOR_NAMESPACE, &ns.prod]);
    let denied = [
        ("get", "secrets", Some(OPERATOR_NAMESPACE)),
        ("list", "secrets", Some(OPERATOR_NAMESPACE)),
        ("watch", "secrets", Some(OPERATOR_NAMESPACE)),
        ("get", "secrets/app-tls", Some(ns.prod.as_str())),
        ("list", "secrets", Some(ns.prod.as_str())),
        ("create", "secrets", Some(ns.prod.as_str())),
        ("list", "secrets", None),
        ("watch", "secrets", None),
    ];
    let wrong = disagreements(cp, &denied, false);
    assert!(
        wrong.is_empty(),
        "default install allows:\n{}",
        wrong.join("\n")
    );

    let samples = manifests_dir().join("samples").display().to_string();
    cp.kubectl_ok(&["apply", "-k", &samples]);
    let logs = with_skiff("default", &[], || {
        wait_until("the ConfigMap sample still mirrors", || {
            cp.object("cm", &ns.prod, "app-ca").is_some()
        });
        wait_until("the Secret sample reports SecretTargetsDisabled", || {
            ready_is(cp, SAMPLE, "False", "SecretTargetsDisabled")
        });
        let message = ready(cp, SAMPLE).expect("Ready")["message"].to_string();
        for part in [
            "--secret-target-names",
            "manifests/components/secret-targets",
        ] {
            assert!(message.contains(part), "message lacks {part}: {message}");
        }
        assert!(cp.object("secret", &ns.prod, SAMPLE).is_none());
    });
    assert_no_forbidden(&logs, "default install");
}

/// Applies `deploy/secret-targets`; returns the names its flag and its ClusterRole agree on.
fn install_component(cp: &ControlPlane) -> Vec<String> {
    cp.kubectl_ok(&["apply", "-k", &repo_path("deploy/secret-targets")]);
    let deployment = cp
        .object("deployment", OPERATOR_NAMESPACE, "skiff")
        .expect("Deployment");
    let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"].clone();
    let flag = args
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .find_map(|a| a.strip_prefix("--secret-target-names="))
        .unwrap_or_else(|| panic!("the component sets no --secret-target-names: {args}"));
    let names: Vec<String> = flag.split(',').map(str::to_owned).collect();
    let role = cp
        .get_json(&["clusterrole", "skiff-secret-targets"])
        .expect("ClusterRole skiff-secret-targets");
    let by_name = role["rules"][0]["resourceNames"].clone();
    assert_eq!(
        by_name,
        serde_json::json!(names),
        "the flag and the ClusterRole's resourceNames must list the same Secrets"
    );
    assert_eq!(names, [SAMPLE], "the component is set up for the sample");
    names
}

fn component_mirrors_only_its_names(cp: &ControlPlane, ns: &Namespaces, names: &[String]) {
    print_permissions(cp, "with secret-targets", &[OPERATOR_NAMESPACE, &ns.prod]);
    let prod = Some(ns.prod.as_str());
    let allowed = [
        ("list", "secrets", Some(OPERATOR_NAMESPACE)),
        ("watch", "secrets", Some(OPERATOR_NAMESPACE)),
        ("get", "secrets/app-tls", prod),
        ("patch", "secrets/app-tls", prod),
        ("delete", "secrets/app-tls", prod),
        ("create", "secrets", prod),
        ("list", "secrets/app-tls", None),
        ("watch", "secrets/app-tls", None),
    ];
    let denied = [
        // Sources are listed and watched, copies patched: never read one by one, nor PUT.
        ("get", "secrets/db-password", Some(OPERATOR_NAMESPACE)),
        ("update", "secrets/app-tls", prod),
        ("get", "secrets/db-password", prod),
        ("update", "secrets/db-password", prod),
        ("delete", "secrets/db-password", prod),
        ("list", "secrets", prod),
        ("watch", "secrets", prod),
        ("list", "secrets", None),
        ("deletecollection", "secrets", prod),
    ];
    let mut wrong = disagreements(cp, &allowed, true);
    wrong.extend(disagreements(cp, &denied, false));
    assert!(
        wrong.is_empty(),
        "with the component:\n{}",
        wrong.join("\n")
    );

    cp.apply(&format!(
        r#"{{"apiVersion": "v1", "kind": "Secret", "metadata": {{"name": "db-password",
            "namespace": "{}"}}, "stringData": {{"password": "hunter2"}}}}"#,
        ns.prod
    ));
    let flag = format!("--secret-target-names={}", names.join(","));
    let logs = with_skiff("component", &[&flag], || {
        sample_mirrors_into_selected_namespaces(cp, ns);
        other_secrets_stay_forbidden(cp, ns);
        an_unlisted_target_is_refused(cp, ns);
    });
    assert_no_forbidden(&logs, "with secret-targets");
}

fn sample_mirrors_into_selected_namespaces(cp: &ControlPlane, ns: &Namespaces) {
    let source = cp
        .object("secret", OPERATOR_NAMESPACE, SAMPLE)
        .expect("sample Secret");
    let is_copy = |namespace: &str| {
        cp.object("secret", namespace, SAMPLE).is_some_and(|c| {
            c["data"] == source["data"]
                && c["type"] == "kubernetes.io/tls"
                && c["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "skiff"
        })
    };
    wait_until("app-tls copied into prod and staging", || {
        is_copy(&ns.prod) && is_copy(&ns.staging)
    });
    wait_until("the Secret sample is Ready", || {
        ready_is(cp, SAMPLE, "True", "Synced")
    });
    assert!(
        cp.object("secret", &ns.dev, SAMPLE).is_none(),
        "copied into dev"
    );
}

fn other_secrets_stay_forbidden(cp: &ControlPlane, ns: &Namespaces) {
    let token = cp.operator_token();
    for path in [
        format!("/api/v1/namespaces/{}/secrets/db-password", ns.prod),
        format!("/api/v1/namespaces/{}/secrets", ns.prod),
        "/api/v1/secrets".to_owned(),
    ] {
        let response = cp.raw_get(&path, token);
        assert_eq!(
            response.status, 403,
            "GET {path} as skiff: {}",
            response.body
        );
    }
    let read = cp.kubectl_as_operator(&["get", "secret", "db-password", "-n", &ns.prod]);
    let stderr = String::from_utf8_lossy(&read.stderr);
    assert!(
        !read.status.success() && stderr.contains("Forbidden"),
        "kubectl get secret db-password as skiff: {stderr}"
    );
}

fn an_unlisted_target_is_refused(cp: &ControlPlane, ns: &Namespaces) {
    let before = cp
        .object("secret", &ns.prod, "db-password")
        .expect("db-password");
    cp.apply(&format!(
        r#"{{"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {{"name": "db-copy", "namespace": "{OPERATOR_NAMESPACE}"}},
            "spec": {{"source": {{"kind": "Secret", "name": "{SAMPLE}"}},
                      "targetName": "db-password",
                      "namespaceSelector": {{"matchLabels": {{"environment": "prod"}}}}}}}}"#
    ));
    wait_until(
        "a Mirror to an unlisted name reports SecretTargetNotAllowed",
        || ready_is(cp, "db-copy", "False", "SecretTargetNotAllowed"),
    );
    let after = cp
        .object("secret", &ns.prod, "db-password")
        .expect("db-password");
    assert_eq!(
        after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
        "the unlisted Secret was written"
    );
}
