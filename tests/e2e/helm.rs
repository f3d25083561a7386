//! e2e: the Helm chart on a real control plane, installed, upgraded and uninstalled by Helm v4
//! as a user runs it, with skiff run as the pod the installed Deployment describes.
//!
//! The control plane has no kubelet, so `helm install --wait` would wait forever and no pod
//! starts by itself: the test reads the Deployment Helm created and runs the built binary with
//! its args (the listeners moved to free loopback ports), its `POD_NAME`, and a token of the
//! chart's ServiceAccount from the TokenRequest API. So the chart's args, RBAC and
//! ServiceAccount are what is tested, and an upgrade is "rolled out" by stopping that process
//! and starting one with the upgraded Deployment's args, as the kubelet would.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::control_plane::{ControlPlane, manifests_dir, require_e2e_binaries, say};
use crate::support::helm::{Helm, chart_dir, container_args, object_key, parse_objects};
use crate::support::lease::LeaseReader;
use crate::support::pod::PodSpec;
use crate::support::skiff::{Skiff, TempDir, eventually, free_port, write_kubeconfig};
use serde_json::{Value, json};

const RELEASE: &str = "skiff";
const NAMESPACE: &str = "skiff-system";
/// Starting, leading, fanning out and deleting are quick; the machine may be busy compiling.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);

fn chart() -> String {
    chart_dir().display().to_string()
}

/// The Deployment as Helm installed it.
fn deployment(cp: &ControlPlane) -> Value {
    cp.object("deployment", NAMESPACE, RELEASE)
        .expect("helm created the Deployment")
}

/// A token of the Deployment's ServiceAccount, from the TokenRequest API.
fn service_account_token(cp: &ControlPlane, deployment: &Value) -> String {
    let account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
        .as_str()
        .expect("the pod names its ServiceAccount");
    let args = ["create", "token", account, "-n", NAMESPACE, "--duration=1h"];
    cp.kubectl_ok(&args).trim().to_owned()
}

/// The skiff container of the Deployment Helm installed: its args and the user it runs as.
fn pod_spec(deployment: &Value) -> PodSpec {
    let pod = &deployment["spec"]["template"]["spec"];
    let id = |field: &str| {
        let id = pod["securityContext"][field].as_u64();
        id.unwrap_or_else(|| panic!("securityContext.{field} is not set: {deployment}"))
    };
    PodSpec {
        args: container_args(deployment),
        user: id("runAsUser"),
        group: id("runAsGroup"),
    }
}

/// skiff as the Deployment's pod `name`: its args and ServiceAccount, in its namespace.
fn start_pod(cp: &ControlPlane, name: &str) -> (Skiff, TempDir, String) {
    let deployment = deployment(cp);
    let spec = pod_spec(&deployment);
    let args = spec.args_on_ports(free_port(), free_port());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let token = service_account_token(cp, &deployment);
    let dir = TempDir::new("e2e-helm");
    let ca = cp.ca_pem().as_bytes();
    let kubeconfig = write_kubeconfig(&dir, cp.url(), Some(ca), Some(&token), NAMESPACE);
    let log = dir.0.join(format!("{name}.log"));
    let pod = Skiff::start_with_env(&kubeconfig, log, &args, &[("POD_NAME", name)]);
    (pod, dir, token)
}

fn apply_file(cp: &ControlPlane, path: &Path) {
    cp.kubectl_ok(&["apply", "-f", &path.display().to_string()]);
}

/// Waits until `pod` holds the Lease; panics with its log if it does not.
fn wait_leading(cp: &ControlPlane, pod: &Skiff, name: &str) {
    let mut lease = LeaseReader::new(cp);
    let holder = format!("{name}_");
    let leads = eventually(STEP_TIMEOUT, || {
        lease.read().is_some_and(|l| l.holder.starts_with(&holder))
    });
    assert!(leads, "{name} never held the Lease; log:\n{}", pod.logs());
}

fn wait_for(pod: &Skiff, what: &str, check: impl FnMut() -> bool) {
    assert!(
        eventually(STEP_TIMEOUT, check),
        "timed out waiting for {what}; log:\n{}",
        pod.logs()
    );
}

fn ready_reason(cp: &ControlPlane, mirror: &str) -> Value {
    let Some(mirror) = cp.object("mirror", NAMESPACE, mirror) else {
        return Value::Null;
    };
    let conditions = mirror["status"]["conditions"].as_array().cloned();
    let ready = conditions
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready");
    ready.map_or(Value::Null, |c| c["reason"].clone())
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn helm_install_upgrade_and_uninstall_a_working_skiff() {
    require_e2e_binaries();
    let cp = ControlPlane::shared();
    let helm = Helm::with_kubeconfig(&cp.admin_kubeconfig());
    let samples = manifests_dir().join("samples");

    // Install: the chart's pod leads and mirrors the sample.
    let started = Instant::now();
    let notes = helm.ok(&[
        "install",
        RELEASE,
        &chart(),
        "-n",
        NAMESPACE,
        "--create-namespace",
    ]);
    let installed = started.elapsed();
    assert!(notes.contains("See it work"), "no NOTES:\n{notes}");
    let (mut pod, _dir, _) = start_pod(cp, "skiff-5d8c7b9f4-x2k4q");
    let pod_started = started.elapsed();
    cp.wait_skiff_crds();
    apply_file(cp, &samples.join("configmap-mirror.yaml"));
    let payments = cp.create_namespace("payments", &[("team", "payments")]);
    let sample_applied = started.elapsed();
    wait_leading(cp, &pod, "skiff-5d8c7b9f4-x2k4q");
    let source = cp
        .object("configmap", NAMESPACE, "app-ca")
        .expect("the sample's source");
    wait_for(&pod, "the sample's copy", || {
        cp.object("configmap", &payments, "app-ca")
            .is_some_and(|copy| copy["data"] == source["data"])
    });
    say(&format!(
        "helm: install to leading with the sample mirrored: {} ms (helm install {} ms, the pod \
         started at {} ms, the sample applied at {} ms)",
        started.elapsed().as_millis(),
        installed.as_millis(),
        pod_started.as_millis(),
        sample_applied.as_millis()
    ));

    // Upgrade: secretTargetNames sets the flag and the RBAC together; Secret Mirrors start working.
    apply_file(cp, &samples.join("secret-mirror.yaml"));
    let prod = cp.create_namespace("prod", &[("environment", "prod")]);
    wait_for(&pod, "SecretTargetsDisabled before the upgrade", || {
        ready_reason(cp, "app-tls") == "SecretTargetsDisabled"
    });
    // (commonLabels too: the CRD is a template, so an upgrade reaches it.)
    let set = "secretTargetNames={app-tls},commonLabels.rollout=second";
    helm.ok(&[
        "upgrade",
        RELEASE,
        &chart(),
        "-n",
        NAMESPACE,
        "--reuse-values",
        "--set",
        set,
    ]);
    let crd_labels =
        cp.get_json(&["crd", "mirrors.skiff.dev"]).expect("the CRD")["metadata"]["labels"].clone();
    assert_eq!(
        crd_labels["rollout"], "second",
        "helm upgrade left the CRD: {crd_labels}"
    );
    let args = container_args(&deployment(cp));
    assert!(
        args.contains(&"--secret-target-names=app-tls".to_owned()),
        "{args:?}"
    );
    let role = cp
        .object("clusterrole", "", "skiff-secret-targets")
        .expect("the ClusterRole");
    assert_eq!(role["rules"][0]["resourceNames"], json!(["app-tls"]));
    let user = "--as=system:serviceaccount:skiff-system:skiff";
    let can = |name: &str| {
        let resource = format!("secrets/{name}");
        let output = cp.kubectl(&["auth", "can-i", "patch", &resource, "-n", &prod, user]);
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    };
    assert_eq!(
        (can("app-tls").as_str(), can("other").as_str()),
        ("yes", "no")
    );
    pod.terminate(STEP_TIMEOUT); // the rollout replaces the pod
    let (mut pod, _dir, token) = start_pod(cp, "skiff-7c6f5d8b9-m4n7p");
    wait_leading(cp, &pod, "skiff-7c6f5d8b9-m4n7p");
    wait_for(&pod, "the Secret copy in prod", || {
        cp.object("secret", &prod, "app-tls")
            .is_some_and(|copy| copy["type"] == "kubernetes.io/tls")
    });
    wait_for(&pod, "the Secret Mirror Synced", || {
        ready_reason(cp, "app-tls") == "Synced"
    });

    // Uninstall: nothing of the release is left but the kept CRD, so the Mirrors stay.
    let manifest = parse_objects(&helm.ok(&["get", "manifest", RELEASE, "-n", NAMESPACE]));
    pod.terminate(STEP_TIMEOUT); // the pod goes with its Deployment
    helm.ok(&["uninstall", RELEASE, "-n", NAMESPACE]);
    let mut left = Vec::new();
    let gone = eventually(STEP_TIMEOUT, || {
        left = manifest
            .iter()
            .filter(|o| still_there(cp, o))
            .map(object_key)
            .collect();
        left == [
            "CustomResourceDefinition//mirrors.skiff.dev",
            "CustomResourceDefinition//mirroracceptances.skiff.dev",
        ]
    });
    assert!(gone, "left after helm uninstall: {left:?}");
    // Kept, not merely stuck deleting behind the Mirrors' finalizers.
    let crd = cp
        .get_json(&["crd", "mirrors.skiff.dev"])
        .expect("the CRD is kept");
    assert!(
        crd["metadata"]["deletionTimestamp"].is_null(),
        "the CRD is being deleted"
    );
    let mirrors = cp
        .get_json(&["mirrors", "-n", NAMESPACE])
        .expect("the Mirrors");
    let mirrors = mirrors["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(mirrors.len(), 2);
    assert!(
        mirrors
            .iter()
            .all(|m| m["metadata"]["deletionTimestamp"].is_null())
    );
    // The API server caches a token's authentication for 10 s; then it dies with its account.
    let mut status = 0;
    let refused = eventually(STEP_TIMEOUT, || {
        status = cp.raw_get("/api/v1/namespaces/skiff-system", &token).status;
        status == 401
    });
    assert!(refused, "the ServiceAccount's token outlived it: {status}");
    let releases = helm.ok(&["list", "-n", NAMESPACE, "-q"]);
    assert!(releases.trim().is_empty(), "releases left: {releases}");
}

/// Whether the object `o` of a release manifest still exists.
fn still_there(cp: &ControlPlane, o: &Value) -> bool {
    let kind = o["kind"].as_str().unwrap_or_default();
    let api = o["apiVersion"].as_str().unwrap_or_default();
    let group = api.split_once('/').map_or("", |(group, _)| group);
    let resource = if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    };
    let name = o["metadata"]["name"].as_str().unwrap_or_default();
    let mut args = vec!["get", &resource, name, "--ignore-not-found", "-o", "name"];
    let namespace = o["metadata"]["namespace"].as_str().unwrap_or_default();
    if !namespace.is_empty() {
        args.extend(["-n", namespace]);
    }
    !cp.kubectl_ok(&args).trim().is_empty()
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn helm_install_refuses_a_bad_value_and_names_it() {
    require_e2e_binaries();
    let cp = ControlPlane::shared();
    let helm = Helm::with_kubeconfig(&cp.admin_kubeconfig());
    let namespace = "helm-refused";
    let stderr = helm.fails(&[
        "install",
        "refused",
        &chart(),
        "-n",
        namespace,
        "--create-namespace",
        "--set",
        "leaderElection.renewDeadline=ten seconds",
    ]);
    assert!(
        stderr.contains("renewDeadline") && stderr.contains("schema"),
        "the error does not name the value:\n{stderr}"
    );
    let releases = helm.ok(&["list", "-A", "-q"]);
    assert!(
        !releases.contains("refused"),
        "a release was made: {releases}"
    );
    assert!(
        cp.get_json(&["namespace", namespace]).is_none(),
        "a refused install created its namespace"
    );
}

/// `hack/hub-admit.sh` (`make hub-admit`) run as is, on a hub its admin set up with Helm.
fn hub_admit(cp: &ControlPlane, cluster: &str, env: &[(&str, &str)]) -> std::process::Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("hack/hub-admit.sh");
    let mut command = std::process::Command::new(script);
    command
        .args([cluster, "region=eu", "1h"])
        .env("KUBECONFIG", cp.admin_kubeconfig())
        .env(
            "KUBECTL",
            crate::support::control_plane::bin_dir().join("kubectl"),
        )
        .env_remove("MEMBER_ROLE")
        .env_remove("SECRET_NAMESPACE");
    command.envs(env.iter().copied());
    command.output().expect("run hack/hub-admit.sh")
}

/// A hub installed by Helm under another release name: `make hub-admit` binds the member to the
/// release's member role when told it (`MEMBER_ROLE`), refuses a role the hub does not have,
/// and prints the Secret for the namespace skiff runs in on the member (`SECRET_NAMESPACE`).
/// The member's identity then reads its own namespace's Placements on the hub, and no other's.
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn hub_admit_binds_a_helm_release_s_member_role() {
    require_e2e_binaries();
    let cp = ControlPlane::start(); // a hub of its own: the Placement CRD is Helm's here
    let helm = Helm::with_kubeconfig(&cp.admin_kubeconfig());
    let install = [
        "install",
        "ops",
        &chart(),
        "-n",
        "platform",
        "--create-namespace",
    ];
    let mut args = install.to_vec();
    args.extend(["--set", "fleet.hub.enable=true"]);
    helm.ok(&args);

    let refused = hub_admit(&cp, "eu-1", &[]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "admitted without the role");
    assert!(
        stderr.contains("no ClusterRole skiff-fleet-member") && stderr.contains("MEMBER_ROLE"),
        "{stderr}"
    );
    assert!(
        cp.get_json(&["namespace", "eu-1"]).is_none(),
        "a refused admission made eu-1"
    );

    let env = [
        ("MEMBER_ROLE", "ops-skiff-fleet-member"),
        ("SECRET_NAMESPACE", "skiff-ops"),
    ];
    let printed = crate::support::kubectl::output_ok("hub-admit.sh", hub_admit(&cp, "eu-1", &env));
    let secret = cp.kubectl_stdin(
        &["create", "--dry-run=client", "-o", "json", "-f", "-"],
        &printed,
    );
    let secret: Value = serde_json::from_slice(&secret.stdout).expect("the printed Secret");
    assert_eq!(
        (
            &secret["metadata"]["name"],
            &secret["metadata"]["namespace"]
        ),
        (&json!("skiff-hub"), &json!("skiff-ops"))
    );
    let binding = cp
        .object("rolebinding", "eu-1", "skiff-fleet-member")
        .expect("the member's RoleBinding");
    assert_eq!(binding["roleRef"]["name"], "ops-skiff-fleet-member");

    let other = cp.create_namespace("other-member", &[]);
    let member = "--as=system:serviceaccount:eu-1:skiff-member";
    let can = |verb: &str, resource: &str, namespace: &str| {
        let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
        let subresource = format!("--subresource={subresource}");
        let args = [
            "auth",
            "can-i",
            verb,
            resource,
            &subresource,
            "-n",
            namespace,
            member,
        ];
        let output = cp.kubectl(&args);
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    };
    assert_eq!(can("list", "placements.skiff.dev", "eu-1"), "yes");
    assert_eq!(can("patch", "placements.skiff.dev/status", "eu-1"), "yes");
    assert_eq!(can("patch", "placements.skiff.dev", "eu-1"), "no");
    assert_eq!(can("list", "placements.skiff.dev", &other), "no");

    let bad = [
        ("MEMBER_ROLE", "ops-skiff-fleet-member"),
        ("SECRET_NAMESPACE", "Skiff"),
    ];
    let refused = hub_admit(&cp, "eu-2", &bad);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && stderr.contains("SECRET_NAMESPACE 'Skiff'"),
        "{stderr}"
    );
}
