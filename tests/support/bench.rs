//! What the benchmarks of memory per copy on a real control plane share: how many namespaces
//! a run takes, skiff started as leader there, and the pause before each reading.
//!
//! `cargo bench` passes `--bench` and measures 1,000 namespaces (`SKIFF_BENCH_NAMESPACES`
//! changes it); `cargo test --all-targets` runs the same program on 20, and checks only that
//! it converges.

use super::control_plane::ControlPlane;
use super::skiff::{Skiff, TempDir, eventually};
use std::time::Duration;

/// How long a step (skiff filling its caches, a Mirror converging) may take.
pub const STEP_LIMIT: Duration = Duration::from_secs(300);
/// The pause before a memory reading of a bench run: the heap's free memory returned.
const SETTLE: Duration = Duration::from_secs(5);

pub fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// The namespaces of this run.
pub fn namespaces() -> usize {
    match (bench_mode(), std::env::var("SKIFF_BENCH_NAMESPACES")) {
        (false, _) => 20,
        (true, Ok(n)) => n.parse().unwrap_or(1_000),
        (true, Err(_)) => 1_000,
    }
}

/// A control plane with `manifests/` and the kustomize overlay `deploy/<overlay>` applied.
pub fn control_plane(overlay: &str) -> ControlPlane {
    let cp = ControlPlane::start();
    cp.install_manifests();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(overlay);
    cp.kubectl_ok(&["apply", "-k", &dir.display().to_string()]);
    cp
}

/// skiff, named `name` (its `POD_NAME`), leading `cp` with `flags` once its caches are filled;
/// its log is in the returned folder.
pub fn leading(cp: &ControlPlane, name: &str, flags: &[&str]) -> (Skiff, TempDir) {
    let dir = TempDir::new(name);
    let skiff = Skiff::start_with_env(
        &cp.operator_kubeconfig(),
        dir.0.join("skiff.log"),
        flags,
        &[("POD_NAME", name)],
    );
    let filled = eventually(STEP_LIMIT, || {
        skiff.logs().contains("mirror caches filled; reconciling")
    });
    assert!(
        filled,
        "skiff did not start reconciling; log:\n{}",
        skiff.logs()
    );
    (skiff, dir)
}

/// Stops `skiff` with SIGTERM, expecting exit 0, then the control plane.
pub fn finish(mut skiff: Skiff, cp: &ControlPlane) {
    skiff.signal("TERM");
    let code = skiff.wait_exit(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{}", skiff.logs());
    cp.stop();
}

/// Waits before a memory reading of a bench run; a test run reads at once.
pub fn settle() {
    if bench_mode() {
        std::thread::sleep(SETTLE);
    }
}
