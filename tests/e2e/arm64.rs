//! e2e smoke: the arm64 image's static binary, run under qemu's user-mode emulator, leads,
//! mirrors and hands over on a real control plane.
//!
//! Why: the arm64 binary is cross-compiled (Rust's aarch64 target, OpenSSL and glibc from
//! Debian's cross toolchain), so nothing else in the suite ever runs it. A wrong OpenSSL build,
//! a missing static piece or a signal that never arrives would only show on the first Graviton
//! or Ampere node. `qemu-aarch64` runs it here as it is (registering binfmt would need root).
//!
//! Ignored by `cargo test`, as it needs the cross build and qemu: `make test-arm64` builds the
//! binary (`make static-arm64`; `hack/cross-tools.sh aarch64-unknown-linux-gnu` installs the
//! toolchain and qemu) and runs it; CI does.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::control_plane::{
    ControlPlane, E2E_REPLICA_FLAGS, OPERATOR_NAMESPACE, require_e2e_binaries, say,
};
use crate::support::lease::{LeasePoller, LeaseRecord};
use crate::support::skiff::{Skiff, TempDir, eventually, free_port, http_get};
use serde_json::{Value, json};

const TARGET: &str = "aarch64-unknown-linux-gnu";
/// ELF e_machine of AArch64.
const EM_AARCH64: u16 = 183;
/// Emulated, everything is slower: TLS handshakes take tens of milliseconds, not one.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);
const LABEL: (&str, &str) = ("e2e-arm64", "yes");

/// The arm64 binary `make static-arm64` builds (a cross build goes to target/cross, as the
/// Makefile says); panics naming the fix when it is missing or is not an AArch64 executable.
fn arm64_binary() -> PathBuf {
    let dir = if std::env::consts::ARCH == "aarch64" {
        "target"
    } else {
        "target/cross"
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("{dir}/{TARGET}/release/skiff"));
    let header = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run `make static-arm64` (or `make test-arm64`)",
            path.display()
        )
    });
    let machine = header.get(18..20).map(|b| u16::from_le_bytes([b[0], b[1]]));
    assert!(
        header.starts_with(b"\x7fELF") && machine == Some(EM_AARCH64),
        "{} is not an AArch64 ELF executable (e_machine {machine:?})",
        path.display()
    );
    path
}

/// qemu's AArch64 user-mode emulator: `QEMU_AARCH64`, else qemu-aarch64 or qemu-aarch64-static
/// on PATH.
fn emulator() -> OsString {
    if let Some(path) = std::env::var_os("QEMU_AARCH64") {
        return path;
    }
    for name in ["qemu-aarch64", "qemu-aarch64-static"] {
        if Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return name.into();
        }
    }
    panic!(
        "qemu-aarch64 not found; run `hack/cross-tools.sh {TARGET}` (qemu-user-static) or set QEMU_AARCH64"
    );
}

fn start_replica(cp: &ControlPlane, dir: &TempDir, name: &str, probe_port: u16) -> Skiff {
    let program = [emulator(), arm64_binary().into()];
    let probe = format!("--health-probe-bind-address=127.0.0.1:{probe_port}");
    let mut args = E2E_REPLICA_FLAGS.to_vec();
    args.push(&probe);
    let log = dir.0.join(format!("{name}.log"));
    Skiff::start_program(
        &program,
        &cp.operator_kubeconfig(),
        log,
        &args,
        &[("POD_NAME", name)],
    )
}

fn held_by(replica: &str) -> impl Fn(&LeaseRecord) -> bool + '_ {
    move |r: &LeaseRecord| r.holder.starts_with(&format!("{replica}_"))
}

fn source_and_mirror(cp: &ControlPlane) -> Value {
    let data = json!({"ca.crt": "arm64 smoke CA"});
    cp.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "arm64-ca", "namespace": OPERATOR_NAMESPACE}, "data": data})
        .to_string(),
    );
    cp.apply(
        &json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {"name": "arm64-ca", "namespace": OPERATOR_NAMESPACE},
            "spec": {"source": {"kind": "ConfigMap", "name": "arm64-ca"},
                     "namespaceSelector": {"matchLabels": {LABEL.0: LABEL.1}}}})
        .to_string(),
    );
    data
}

fn wait_copy(cp: &ControlPlane, replica: &Skiff, namespace: &str, data: &Value) {
    let copied = eventually(STEP_TIMEOUT, || {
        cp.object("configmap", namespace, "arm64-ca")
            .is_some_and(|copy| &copy["data"] == data)
    });
    assert!(copied, "no copy in {namespace}; log:\n{}", replica.logs());
}

#[test]
#[ignore = "needs the arm64 static binary and qemu-aarch64: make test-arm64"]
fn arm64_binary_leads_mirrors_and_hands_over_under_emulation() {
    require_e2e_binaries();
    let version = Command::new(emulator())
        .arg(arm64_binary())
        .arg("--version")
        .output();
    let version = version.expect("run the arm64 binary under qemu");
    let version = String::from_utf8_lossy(&version.stdout).into_owned();
    assert!(
        version.contains(env!("CARGO_PKG_VERSION")),
        "--version: {version}"
    );

    let cp = ControlPlane::installed();
    let data = source_and_mirror(cp);
    let dir = TempDir::new("e2e-arm64");
    let poller = LeasePoller::start(cp, Duration::from_millis(50));
    let started = Instant::now();
    let mut a = start_replica(cp, &dir, "arm64-a", free_port());
    let led = poller.wait_for(started, STEP_TIMEOUT, held_by("arm64-a"));
    let led = led.unwrap_or_else(|| panic!("arm64-a never held the Lease; log:\n{}", a.logs()));
    for namespace in [
        cp.create_namespace("arm64", &[LABEL]),
        cp.create_namespace("arm64", &[LABEL]),
    ] {
        wait_copy(cp, &a, &namespace, &data);
    }
    say(&format!(
        "arm64: led {} ms after start, mirrored",
        led.at.duration_since(started).as_millis()
    ));

    let b_probe = free_port();
    let b = start_replica(cp, &dir, "arm64-b", b_probe);
    let standing_by = eventually(STEP_TIMEOUT, || {
        http_get(b_probe, "/readyz").is_some_and(|(status, _)| status == 200)
    });
    assert!(
        standing_by,
        "arm64-b never answered /readyz; log:\n{}",
        b.logs()
    );
    let signalled = Instant::now();
    a.terminate(STEP_TIMEOUT);
    let took_over = poller.wait_for(signalled, STEP_TIMEOUT, held_by("arm64-b"));
    let took_over =
        took_over.unwrap_or_else(|| panic!("arm64-b never took over; log:\n{}", b.logs()));
    say(&format!(
        "arm64: SIGTERM to the leader, the standby held the Lease {} ms later",
        took_over.at.duration_since(signalled).as_millis()
    ));
    let after = cp.create_namespace("arm64", &[LABEL]);
    wait_copy(cp, &b, &after, &data);
}
