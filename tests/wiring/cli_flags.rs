//! Wiring tests of the binary's front door: `--help`, `--version`, and bad flags refused at
//! start with exit 2.

use std::process::{Command, Output};

fn skiff(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skiff"))
        .args(args)
        .output()
        .expect("the skiff binary runs")
}

#[test]
fn help_prints_every_flag_to_stdout_and_exits_zero() {
    let out = skiff(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--leader-elect-renew-deadline",
        "--metrics-bind-address",
        "--log-format",
    ] {
        assert!(stdout.contains(flag), "help lacks {flag}:\n{stdout}");
    }
}

#[test]
fn version_prints_the_version_and_the_git_revision_it_was_built_from() {
    let out = skiff(&["--version", "--metrics-secure=false"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let prefix = format!("skiff {} (revision ", env!("CARGO_PKG_VERSION"));
    assert!(stdout.starts_with(&prefix), "{stdout}");
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|head| head.status.success());
    if let Some(head) = head {
        let head = String::from_utf8_lossy(&head.stdout);
        assert_eq!(stdout.trim(), format!("{prefix}{})", head.trim()));
    } else {
        assert_eq!(stdout.trim(), format!("{prefix}unknown)"));
    }
}

#[test]
fn a_cert_dir_with_plain_http_metrics_exits_2() {
    let out = skiff(&["--metrics-secure=false", "--metrics-cert-dir=/certs"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--metrics-cert-dir"), "{stderr}");
}

#[test]
fn invalid_lease_timings_exit_2_naming_the_flag() {
    let out = skiff(&["--leader-elect", "--leader-elect-renew-deadline=15s"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("skiff: --leader-elect-renew-deadline (15s) must be shorter"),
        "{stderr}"
    );
}

#[test]
fn unknown_flags_and_bad_durations_exit_2() {
    let out = skiff(&["--leader-elect-lease=15s"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--leader-elect-lease"));

    let out = skiff(&["--graceful-shutdown-timeout=30"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--graceful-shutdown-timeout") && stderr.contains("30s"),
        "{stderr}"
    );
}

#[test]
fn qps_zero_is_refused_for_the_main_client() {
    let out = skiff(&["--kube-api-qps", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--kube-api-qps must be"));
}

#[test]
fn a_self_service_kind_skiff_may_not_copy_exits_2_naming_the_fix() {
    for (kinds, fix) in [
        (
            "--self-service-kinds=configmaps,secrets",
            "--secret-target-names",
        ),
        ("--self-service-kinds=rolebindings", "--kinds"),
    ] {
        let out = skiff(&["--self-service", kinds]);
        assert_eq!(out.status.code(), Some(2), "{kinds}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("--self-service-kinds") && stderr.contains(fix),
            "{kinds}: {stderr}"
        );
    }
}
