//! Runs the image's binary the way the Deployment's pod runs it, without a container engine.
//!
//! Why: the image is `FROM scratch` with one static binary. What a pod adds to it is small and
//! known: a root filesystem holding only `/skiff` and the ServiceAccount files the kubelet
//! mounts, the Deployment's `runAsUser`/`runAsGroup`, its args, and an environment of
//! `KUBERNETES_SERVICE_HOST`/`_PORT` plus `POD_NAME`. `unshare` recreates exactly that: a user
//! namespace that maps the test's uid to the pod's user, and a chroot into a prepared root. So
//! the test runs the shipped binary with the shipped args and nothing from the build machine.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::control_plane::{ControlPlane, OPERATOR_NAMESPACE, manifests_dir};
use super::skiff::{Skiff, TempDir};

/// Where the kubelet mounts the ServiceAccount's token, CA and namespace.
const SERVICE_ACCOUNT_DIR: &str = "var/run/secrets/kubernetes.io/serviceaccount";

/// The binary `make static` builds and `make image` copies into the image.
pub fn static_binary() -> PathBuf {
    let triple = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join(triple)
        .join("release/skiff");
    assert!(
        path.is_file(),
        "{} is missing; run `make static` (make test builds it before the e2e suite)",
        path.display()
    );
    path
}

/// The skiff container of `manifests/deployment.yaml`: its args and the user it runs as.
#[derive(Debug, Clone)]
pub struct PodSpec {
    pub args: Vec<String>,
    pub user: u64,
    pub group: u64,
}

impl PodSpec {
    pub fn from_deployment() -> PodSpec {
        let path = manifests_dir().join("deployment.yaml");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let deployment: Value = skiff::kube::yaml::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not YAML we read: {e}", path.display()));
        let pod = &deployment["spec"]["template"]["spec"];
        let args = pod["containers"][0]["args"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: the container has no args", path.display()))
            .iter()
            .map(|arg| arg.as_str().expect("args are strings").to_owned())
            .collect();
        // Plain numbers read as numbers, as kubectl reads them.
        let id = |field: &str| {
            pod["securityContext"][field]
                .as_u64()
                .unwrap_or_else(|| panic!("{}: securityContext.{field} is not set", path.display()))
        };
        PodSpec {
            args,
            user: id("runAsUser"),
            group: id("runAsGroup"),
        }
    }

    /// The args with the probe and metrics listeners moved to the given loopback ports: the
    /// test shares the machine's network, where the manifest's `:8081` and `:8443` may be taken.
    pub fn args_on_ports(&self, probe_port: u16, metrics_port: u16) -> Vec<String> {
        let moved = |arg: &str| {
            for (flag, port) in [
                ("--health-probe-bind-address", probe_port),
                ("--metrics-bind-address", metrics_port),
            ] {
                if arg.starts_with(&format!("{flag}=")) {
                    return Some(format!("{flag}=127.0.0.1:{port}"));
                }
            }
            None
        };
        let args: Vec<String> = self
            .args
            .iter()
            .map(|arg| moved(arg).unwrap_or_else(|| arg.clone()))
            .collect();
        assert_eq!(
            args.iter().filter(|arg| moved(arg).is_some()).count(),
            2,
            "the Deployment's args name both listen addresses as --flag=value: {:?}",
            self.args
        );
        args
    }
}

/// A running pod: the skiff process (killed on drop) and its root filesystem.
pub struct Pod {
    pub skiff: Skiff,
    root: PathBuf,
}

impl Drop for Pod {
    /// Stops the pod first (it must never see a writable root), then makes the root writable
    /// again so that the temp dir holding it can be removed.
    fn drop(&mut self) {
        let _ = self.skiff.child.kill();
        let _ = self.skiff.child.wait();
        set_tree_modes(&self.root, 0o755, 0o644);
    }
}

/// Starts the pod `name` with `args`: its root is `dir/<name>-root`, its stderr
/// `dir/<name>.log`.
pub fn start_pod(
    cp: &ControlPlane,
    dir: &TempDir,
    name: &str,
    spec: &PodSpec,
    args: &[String],
) -> Pod {
    let root = dir.0.join(format!("{name}-root"));
    prepare_root(&root, cp);
    let log = dir.0.join(format!("{name}.log"));
    let stderr = std::fs::File::create(&log).expect("create log file");
    let port = cp
        .url()
        .rsplit(':')
        .next()
        .expect("the control plane's URL has a port");
    let child = Command::new("unshare")
        .arg("--user")
        .arg(format!("--map-user={}", spec.user))
        .arg(format!("--map-group={}", spec.group))
        .arg(format!("--root={}", root.display()))
        .arg("/skiff")
        .args(args)
        .env_clear()
        .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        .env("KUBERNETES_SERVICE_PORT", port)
        .env("POD_NAME", name)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start unshare (util-linux)");
    Pod {
        skiff: Skiff { child, log },
        root,
    }
}

/// The image's one file and the ServiceAccount mount. The pod's user owns them (the user
/// namespace maps it to the test's uid), so read-only modes stand in for the Deployment's
/// `readOnlyRootFilesystem`: a process without capabilities cannot write to them.
fn prepare_root(root: &Path, cp: &ControlPlane) {
    let account = root.join(SERVICE_ACCOUNT_DIR);
    std::fs::create_dir_all(&account).expect("create the pod's root");
    std::fs::copy(static_binary(), root.join("skiff")).expect("copy the static binary");
    for (file, content) in [
        ("token", cp.operator_token()),
        ("ca.crt", cp.ca_pem()),
        ("namespace", OPERATOR_NAMESPACE),
    ] {
        std::fs::write(account.join(file), content).expect("write a ServiceAccount file");
    }
    set_tree_modes(root, 0o555, 0o555);
}

/// Sets `dir_mode` on every directory under `path` (itself included) and `file_mode` on every
/// file; best effort, as it also runs on drop.
fn set_tree_modes(path: &Path, dir_mode: u32, file_mode: u32) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    let mode = if meta.is_dir() { dir_mode } else { file_mode };
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    if meta.is_dir()
        && let Ok(entries) = std::fs::read_dir(path)
    {
        for entry in entries.flatten() {
            set_tree_modes(&entry.path(), dir_mode, file_mode);
        }
    }
}
