//! e2e: the kubebuilder-shaped Makefile targets on a real API server, run as a user runs them
//! (`make` with the admin's kubeconfig): `install`/`uninstall` touch only the CRD,
//! `build-installer` writes one file that applies and deletes cleanly, `deploy IMG=...` sets the
//! Deployment's image without changing tracked files, and `undeploy` leaves no skiff object.
//!
//! The control plane has no namespace controller, so a deleted namespace stays Terminating:
//! the test accepts exactly that one leftover, and then finalizes the namespace itself, as the
//! namespace controller of a real cluster would, before deploying again.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde_json::json;

use crate::support::control_plane::{
    ControlPlane, E2E_REPLICA_FLAGS, OPERATOR_NAMESPACE, manifests_dir, require_e2e_binaries,
};
use crate::support::kubectl::succeeded;
use crate::support::mirror_e2e::{
    SELECT_LABEL, STEP_TIMEOUT, absent, has_copy, mirror, source_configmap, wait_until,
};
use crate::support::skiff::{Skiff, TempDir};

const NAMESPACE: &str = "skiff-system";
/// Not to wait for the namespace, which never finishes terminating here (see the module doc).
const DELETE_FLAGS: &str = "DELETE_FLAGS=--ignore-not-found --wait=false";

/// The tests of this suite deploy and undeploy the same objects: one at a time.
fn one_deploy_at_a_time() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `make ARGS` in the repository, against the control plane as its admin, whatever it exits.
fn make_output(cp: &ControlPlane, args: &[&str]) -> Output {
    Command::new("make")
        .arg("--no-print-directory")
        .arg("-C")
        .arg(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .env("KUBECONFIG", cp.admin_kubeconfig())
        .output()
        .expect("run make")
}

/// `make ARGS`, which must succeed; its standard output.
fn make(cp: &ControlPlane, args: &[&str]) -> String {
    let output = make_output(cp, args);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "make {} failed:\n{stdout}\n{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn deployment_image(cp: &ControlPlane) -> String {
    let image = "jsonpath={.spec.template.spec.containers[0].image}";
    cp.kubectl_ok(&["get", "deployment", "skiff", "-n", NAMESPACE, "-o", image])
}

/// What is left of the objects `file_args` (`-f FILE` or `-k DIR`) names, as `kind/name`.
fn leftovers(cp: &ControlPlane, file_args: &[&str]) -> Vec<String> {
    let args = [&["get", "--ignore-not-found", "-o", "name"], file_args].concat();
    let out = cp.kubectl_ok(&args);
    out.lines().map(str::to_owned).collect()
}

/// How long a deleted CRD may take to go: the API server's CRD informer resync (5 minutes in
/// apiextensions-apiserver), and one more minute for the finalizer's run then.
///
/// Each CRD the manifests install (Mirrors, MirrorAcceptances) goes once the API server's
/// `customresourcecleanup` finalizer has run. The finalizer lists the CRD's objects through a
/// watch cache that the API server starts only when the CRD is created; while it initialises the
/// list fails ("storage is (re)initializing", 429) and the finalizer retries from 5 ms, doubling.
/// On an idle machine that costs milliseconds. Under load it can stall until the resync: the
/// finalizer writes the CRD's `Terminating` condition twice per failed attempt, and a retry that
/// reads its informer's older copy gets a conflict, which it drops expecting an informer event to
/// wake it, while the events of its own writes change only that condition, which it ignores. So
/// nothing wakes it but the resync (seen once with every core busy: the MirrorAcceptance CRD,
/// deleted two seconds after `make deploy` created it, still there after 120 s; other projects'
/// e2e suites wait 5 minutes for the same reason). A CRD that never goes still fails.
const CRD_CLEANUP_TIMEOUT: Duration = Duration::from_secs(6 * 60);

/// After a delete: nothing but the namespace, Terminating, which is then finalized. The waits
/// for the CRDs are kubectl's own (`kubectl wait --for=delete`), each bounded by
/// [`CRD_CLEANUP_TIMEOUT`].
fn assert_only_terminating_namespace_left(cp: &ControlPlane, file_args: &[&str]) {
    let timeout = format!("--timeout={}s", CRD_CLEANUP_TIMEOUT.as_secs());
    let crds = leftovers(cp, file_args).into_iter();
    for crd in crds.filter(|object| object.starts_with("customresourcedefinition")) {
        let waited = cp.kubectl(&["wait", "--for=delete", &crd, &timeout]);
        assert!(
            waited.status.success(),
            "{crd} is still there: {}\n{}",
            String::from_utf8_lossy(&waited.stderr),
            why_the_crd_stays(cp, &crd)
        );
    }
    let left = leftovers(cp, file_args);
    assert_eq!(left, [format!("namespace/{NAMESPACE}")], "left behind");
    let phase = cp.kubectl_ok(&[
        "get",
        "namespace",
        NAMESPACE,
        "-o",
        "jsonpath={.status.phase}",
    ]);
    assert_eq!(phase, "Terminating");
    finalize_namespace(cp);
    assert!(leftovers(cp, file_args).is_empty());
}

/// What holds `crd` (`kind/name`), if it is still there: its finalizers and the conditions its
/// finalizer reports (`Terminating`, with the reason it is waiting), and the API server's log
/// lines about it.
fn why_the_crd_stays(cp: &ControlPlane, crd: &str) -> String {
    let name = crd.rsplit('/').next().unwrap_or(crd);
    let Some(crd) = cp.get_json(&["customresourcedefinition", name]) else {
        return String::new();
    };
    let log = std::fs::read_to_string(cp.dir().join("kube-apiserver.log")).unwrap_or_default();
    let lines: Vec<&str> = log.lines().filter(|line| line.contains(name)).collect();
    format!(
        "the CRD: finalizers {}, deletionTimestamp {}, conditions {}\nkube-apiserver.log:\n{}",
        crd["metadata"]["finalizers"],
        crd["metadata"]["deletionTimestamp"],
        crd["status"]["conditions"],
        lines[lines.len().saturating_sub(20)..].join("\n")
    )
}

/// Clears the namespace's finalizers through its `finalize` subresource, as the namespace
/// controller does once the namespace is empty.
fn finalize_namespace(cp: &ControlPlane) {
    let mut namespace = cp.get_json(&["namespace", NAMESPACE]).expect("namespace");
    namespace["spec"]["finalizers"] = serde_json::json!([]);
    let path = format!("/api/v1/namespaces/{NAMESPACE}/finalize");
    let args = ["replace", "--raw", &path, "-f", "-"];
    succeeded(&args, cp.kubectl_stdin(&args, &namespace.to_string()));
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn make_targets_install_deploy_and_remove_everything_they_create() {
    require_e2e_binaries();
    let _turn = one_deploy_at_a_time();
    let cp = ControlPlane::shared();
    let crd = "customresourcedefinition/mirrors.skiff.dev";

    make(cp, &["install"]);
    cp.wait_skiff_crds();
    assert!(
        cp.get_json(&["namespace", NAMESPACE]).is_none(),
        "install is only the CRD"
    );
    make(cp, &["uninstall"]);
    assert!(cp.get_json(&[crd]).is_none(), "uninstall left the CRD");

    let dir = TempDir::new("e2e-deploy");
    let installer = dir.0.join("install.yaml");
    let installer_arg = format!("INSTALLER={}", installer.display());
    make(
        cp,
        &[
            "build-installer",
            "IMG=registry.example/skiff:v1",
            &installer_arg,
        ],
    );
    let text = String::from_utf8(read(&installer)).expect("UTF-8");
    assert!(text.contains("image: registry.example/skiff:v1"), "{text}");
    let file = installer.display().to_string();
    cp.kubectl_ok(&["apply", "-f", &file]);
    assert_eq!(deployment_image(cp), "registry.example/skiff:v1");
    cp.kubectl_ok(&["delete", "-f", &file, "--wait=false"]);
    assert_only_terminating_namespace_left(cp, &["-f", &file]);

    let tracked = ["deployment.yaml", "kustomization.yaml"].map(|f| manifests_dir().join(f));
    let before = tracked.each_ref().map(|path| read(path));
    make(cp, &["deploy", "IMG=registry.example:5000/team/skiff:v2"]);
    assert_eq!(deployment_image(cp), "registry.example:5000/team/skiff:v2");
    assert_eq!(
        tracked.each_ref().map(|path| read(path)),
        before,
        "deploy changed tracked files"
    );
    let manifests = manifests_dir().display().to_string();
    assert!(leftovers(cp, &["-k", &manifests]).len() >= 10);
    make(cp, &["undeploy", DELETE_FLAGS]);
    assert_only_terminating_namespace_left(cp, &["-k", &manifests]);
    make(cp, &["undeploy", DELETE_FLAGS]); // nothing left to delete is no error
}

/// A skiff replica of the operator's ServiceAccount, as the e2e suites run it.
fn start_skiff(cp: &ControlPlane, dir: &TempDir, name: &str) -> Skiff {
    let log = dir.0.join(format!("{name}.log"));
    let skiff = Skiff::start_with_env(
        &cp.operator_kubeconfig(),
        log,
        &E2E_REPLICA_FLAGS,
        &[("POD_NAME", name)],
    );
    let lease = [
        "lease",
        "skiff-leader",
        "-n",
        OPERATOR_NAMESPACE,
        "--ignore-not-found",
    ];
    let holder = "jsonpath={.spec.holderIdentity}";
    wait_until("skiff leads", || {
        cp.kubectl_ok(&[&["get"], &lease[..], &["-o", holder]].concat())
            .starts_with(name)
    });
    skiff
}

/// `make undeploy` with Mirrors left: while no skiff leads, it deletes nothing and says what to
/// do (their `skiff.dev/cleanup` finalizers would hold the CRD for good); while one leads, it
/// deletes the Mirrors first, skiff deletes their copies, and then everything else goes.
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn undeploy_lets_skiff_delete_the_mirrors_first_and_refuses_without_a_leader() {
    require_e2e_binaries();
    let _turn = one_deploy_at_a_time();
    let cp = ControlPlane::shared();
    let dir = TempDir::new("e2e-undeploy");
    make(cp, &["deploy", "IMG=registry.example/skiff:v3"]);
    let target = "undeploy-target";
    cp.apply(&format!(
        r#"{{"apiVersion": "v1", "kind": "Namespace",
            "metadata": {{"name": "{target}", "labels": {{"{SELECT_LABEL}": "undeploy"}}}}}}"#
    ));
    source_configmap(cp, "undeploy-source", r#"{"k": "v"}"#);
    mirror(
        cp,
        "undeploy",
        "ConfigMap",
        "undeploy-source",
        "",
        "undeploy",
    );
    let copy = || {
        has_copy(
            cp,
            "configmap",
            target,
            "undeploy-source",
            &json!({"k": "v"}),
        )
    };

    let mut skiff = start_skiff(cp, &dir, "undeploy-a");
    wait_until("the copy", copy);
    skiff.signal("TERM"); // releases the Lease
    assert_eq!(skiff.wait_exit(STEP_TIMEOUT), Some(0), "{}", skiff.logs());

    let refused = make_output(cp, &["undeploy", DELETE_FLAGS]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success(),
        "undeploy without a leader: {stderr}"
    );
    assert!(
        stderr.contains("no skiff leads") && stderr.contains("finalizers"),
        "{stderr}"
    );
    assert!(
        cp.object("deployment", OPERATOR_NAMESPACE, "skiff")
            .is_some()
    );
    assert!(
        cp.object("mirror", OPERATOR_NAMESPACE, "undeploy")
            .is_some()
    );
    assert!(copy(), "a refused undeploy deleted the copy");

    let skiff = start_skiff(cp, &dir, "undeploy-b");
    make(cp, &["undeploy", DELETE_FLAGS]);
    assert!(
        absent(cp, "configmap", target, "undeploy-source"),
        "skiff did not delete the copy before its Mirror went; log:\n{}",
        skiff.logs()
    );
    skiff.signal("KILL");
    let manifests = manifests_dir().display().to_string();
    assert_only_terminating_namespace_left(cp, &["-k", &manifests]);
}
