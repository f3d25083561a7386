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
use std::time::Duration;

use crate::support::control_plane::{ControlPlane, manifests_dir, require_e2e_binaries};
use crate::support::kubectl::succeeded;
use crate::support::skiff::{TempDir, eventually};

const NAMESPACE: &str = "skiff-system";
/// Not to wait for the namespace, which never finishes terminating here (see the module doc).
const DELETE_FLAGS: &str = "DELETE_FLAGS=--ignore-not-found --wait=false";

/// `make ARGS` in the repository, against the control plane as its admin.
fn make(cp: &ControlPlane, args: &[&str]) -> String {
    let output: Output = Command::new("make")
        .arg("--no-print-directory")
        .arg("-C")
        .arg(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .env("KUBECONFIG", cp.admin_kubeconfig())
        .output()
        .expect("run make");
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

/// After a delete: nothing but the namespace, Terminating, which is then finalized. (The CRD
/// goes once the API server's own finalizer has run, a moment after the delete.)
fn assert_only_terminating_namespace_left(cp: &ControlPlane, file_args: &[&str]) {
    let only_namespace = [format!("namespace/{NAMESPACE}")];
    let mut left = Vec::new();
    let gone = eventually(Duration::from_secs(30), || {
        left = leftovers(cp, file_args);
        left == only_namespace
    });
    assert!(gone, "left behind: {left:?}");
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
    let cp = ControlPlane::shared();
    let crd = "customresourcedefinition/mirrors.skiff.dev";

    make(cp, &["install"]);
    cp.kubectl_ok(&["wait", "--for=condition=Established", crd, "--timeout=60s"]);
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
