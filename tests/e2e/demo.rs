//! `make demo` and `make demo-fleet` end to end: each demo program runs its whole tour against
//! real control planes and says what happened in plain words.

use crate::support::control_plane::require_e2e_binaries;
use std::path::PathBuf;
use std::process::Command;

/// Runs the example `demo` with the built skiff and `--no-wait`; its stdout, once it
/// succeeded and said none of its lines of failure.
fn tour_of(demo: &str) -> String {
    require_e2e_binaries();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let program = root.join("target/debug/examples").join(demo);
    assert!(
        program.exists(),
        "{} is missing: `cargo test --all-targets` builds it",
        program.display()
    );
    let output = Command::new(&program)
        .arg(env!("CARGO_BIN_EXE_skiff"))
        .arg("--no-wait")
        .output()
        .unwrap_or_else(|e| panic!("run {demo}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{demo} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!stdout.contains("demo stopped"), "{stdout}");
    stdout
}

fn says_each(stdout: &str, lines: &[&str]) {
    for line in lines {
        assert!(
            stdout.contains(line),
            "the demo never said {line:?}:\n{stdout}"
        );
    }
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn the_demo_tour_runs_end_to_end() {
    let stdout = tour_of("demo");
    says_each(
        &stdout,
        &[
            "replica-a holds the Lease",
            "a copy of app-ca appeared in team-a",
            "team-c has none",
            "its copy appeared",
            "skiff restored it",
            "released the lease and exited",
            "replica-b leads",
            "updated all three copies",
        ],
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn the_fleet_demo_tour_runs_end_to_end() {
    let stdout = tour_of("demo_fleet");
    says_each(
        &stdout,
        &[
            "it made namespace eu-1 on the hub",
            "skiff.dev/member=eu-1",
            "Started skiff in eu-1: skiff --leader-elect --hub-kubeconfig=",
            "app-ca appeared in team-a and team-b of eu-1",
            "team-c has none",
            "skiff-system.app-ca",
            "CURRENT",
            "the hub's Mirror counts it CURRENT",
            "both copies in eu-1 hold the new content",
            "kubectl get namespaces is forbidden",
        ],
    );
}
