//! Bakes the git revision into the binary for `skiff --version`, the start log line and
//! `skiff_build_info`. `SKIFF_GIT_REVISION` in the environment wins (a build from a source
//! tarball can pass it); outside git, without it, the revision is reported as "unknown".
//!
//! Also sets `cfg(skip_e2e)` when `SKIFF_SKIP_E2E=1`: the e2e tests are then built ignored,
//! so a run without the control plane reports them as ignored, never as passed.

use std::path::Path;
use std::process::Command;

const VARIABLE: &str = "SKIFF_GIT_REVISION";
const SKIP_E2E: &str = "SKIFF_SKIP_E2E";

fn main() {
    println!("cargo:rerun-if-env-changed={SKIP_E2E}");
    println!("cargo::rustc-check-cfg=cfg(skip_e2e)");
    if std::env::var(SKIP_E2E).is_ok_and(|value| value == "1") {
        println!("cargo:rustc-cfg=skip_e2e");
    }
    println!("cargo:rerun-if-env-changed={VARIABLE}");
    if std::env::var(VARIABLE).is_ok_and(|revision| !revision.is_empty()) {
        return; // already in the environment rustc sees
    }
    let Some(revision) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        return;
    };
    // A commit or checkout moves HEAD (or the branch it names, logged in logs/HEAD).
    for file in ["HEAD", "logs/HEAD"] {
        if let Some(path) = git(&["rev-parse", "--git-path", file])
            && Path::new(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rustc-env={VARIABLE}={revision}");
}

/// The trimmed stdout of a successful `git ARGS`; None without git or outside a repository.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (output.status.success() && !text.is_empty()).then(|| text.to_owned())
}
