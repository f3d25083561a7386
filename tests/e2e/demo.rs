//! `make demo` end to end: the demo program runs its whole tour against a real control plane
//! and says what happened in plain words.

use crate::support::control_plane::require_e2e_binaries;
use std::path::PathBuf;
use std::process::Command;

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn the_demo_tour_runs_end_to_end() {
    require_e2e_binaries();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let demo = root.join("target/debug/examples/demo");
    assert!(
        demo.exists(),
        "{} is missing: `cargo test --all-targets` builds it",
        demo.display()
    );
    let output = Command::new(&demo)
        .arg(env!("CARGO_BIN_EXE_skiff"))
        .arg("--no-wait")
        .output()
        .expect("run the demo");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "demo failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for line in [
        "replica-a holds the Lease",
        "a copy of app-ca appeared in team-a",
        "team-c has none",
        "its copy appeared",
        "skiff restored it",
        "released the lease and exited",
        "replica-b leads",
        "updated all three copies",
    ] {
        assert!(
            stdout.contains(line),
            "the demo never said {line:?}:\n{stdout}"
        );
    }
    assert!(!stdout.contains("demo stopped"), "{stdout}");
}
