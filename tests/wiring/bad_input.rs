//! The built binary given bad input: a missing or malformed kubeconfig, an unknown context, an
//! unreadable CA, an interactive `exec` user, bad flag values. Each exits non-zero at once with a message
//! naming the problem, and nothing panics.

use crate::support::skiff::{Skiff, TempDir, write_kubeconfig};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Bad input is found before anything is dialed; the binary must not linger.
const EXIT_WITHIN: Duration = Duration::from_secs(10);
/// A server address nothing listens on: these tests never get as far as dialing it.
const NOWHERE: &str = "http://127.0.0.1:1";

/// Runs the binary with `kubeconfig` and `args`; its exit code and stderr.
fn run(dir: &TempDir, kubeconfig: &Path, args: &[&str]) -> (i32, String) {
    let skiff = Skiff::start(&kubeconfig.to_path_buf(), dir.0.join("stderr.log"), args);
    finish(skiff)
}

/// Waits for `skiff` to exit; its exit code and stderr, which must not tell of a panic.
fn finish(mut skiff: Skiff) -> (i32, String) {
    let code = skiff.wait_exit(EXIT_WITHIN);
    let stderr = skiff.logs();
    let Some(code) = code else {
        panic!("skiff did not exit within {EXIT_WITHIN:?}; stderr:\n{stderr}");
    };
    assert!(!stderr.contains("panicked"), "skiff panicked:\n{stderr}");
    (code, stderr)
}

/// A kubeconfig with one context `test` whose cluster and user are given as YAML lines.
fn kubeconfig_with(dir: &TempDir, cluster: &str, user: &str) -> PathBuf {
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n{cluster}users:\n- name: test\n  user:\n{user}contexts:\n- name: test\n  context:\n    cluster: test\n    user: test\n    namespace: a\ncurrent-context: test\n"
    );
    let path = dir.0.join("kubeconfig");
    std::fs::write(&path, text).expect("write kubeconfig");
    path
}

fn plain_cluster() -> String {
    format!("    server: {NOWHERE}\n")
}

#[test]
fn missing_kubeconfig_exits_1_naming_the_path() {
    let dir = TempDir::new("bad-missing");
    let missing = dir.0.join("no-such-kubeconfig");
    let (code, stderr) = run(&dir, &missing, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
    assert!(stderr.contains("does not exist"), "{stderr}");
}

#[test]
fn malformed_kubeconfig_exits_1_saying_it_is_not_yaml() {
    let dir = TempDir::new("bad-yaml");
    let path = dir.0.join("kubeconfig");
    std::fs::write(&path, "apiVersion: v1\nclusters: [ {name: test\n  : :\n").unwrap();
    let (code, stderr) = run(&dir, &path, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains(&path.display().to_string()), "{stderr}");
    assert!(
        stderr.contains("line 3, column 3"),
        "the place is named: {stderr}"
    );
    assert!(stderr.contains("fix the YAML there"), "{stderr}");
}

#[test]
fn unknown_context_exits_1_listing_the_known_ones() {
    let dir = TempDir::new("bad-context");
    let path = write_kubeconfig(&dir, NOWHERE, None, None, "a");
    let (code, stderr) = run(&dir, &path, &["--context", "prod"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("prod"), "{stderr}");
    assert!(
        stderr.contains("test"),
        "the known context is listed: {stderr}"
    );
}

/// Runs skiff with a kubeconfig whose cluster names `ca` as its certificate-authority file.
fn run_with_ca_path(dir: &TempDir, ca: &std::path::Path) -> (i32, String) {
    let cluster = format!(
        "    server: https://127.0.0.1:1\n    certificate-authority: {}\n",
        ca.display()
    );
    let path = kubeconfig_with(dir, &cluster, "    {}\n");
    run(dir, &path, &[])
}

#[test]
fn missing_ca_file_exits_1_naming_the_path() {
    let dir = TempDir::new("bad-ca-missing");
    let ca = dir.0.join("missing-ca.crt");
    let (code, stderr) = run_with_ca_path(&dir, &ca);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains(&ca.display().to_string()), "{stderr}");
}

#[test]
fn ca_path_that_is_a_directory_exits_1_naming_the_path() {
    let dir = TempDir::new("bad-ca-dir");
    let ca = dir.0.join("ca-dir");
    std::fs::create_dir_all(&ca).unwrap();
    let (code, stderr) = run_with_ca_path(&dir, &ca);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains(&ca.display().to_string()), "{stderr}");
}

#[test]
fn ca_file_that_is_not_a_certificate_exits_1() {
    let dir = TempDir::new("bad-ca-garbage");
    let ca = dir.0.join("ca.crt");
    std::fs::write(&ca, "this is not a certificate\n").unwrap();
    let (code, stderr) = run_with_ca_path(&dir, &ca);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.to_lowercase().contains("certificate"), "{stderr}");
}

#[test]
fn interactive_exec_user_exits_1_saying_skiff_has_no_terminal() {
    let dir = TempDir::new("bad-exec");
    let user = "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: kubelogin\n      interactiveMode: Always\n";
    let path = kubeconfig_with(&dir, &plain_cluster(), user);
    let (code, stderr) = run(&dir, &path, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("kubelogin"), "{stderr}");
    assert!(stderr.contains("interactiveMode: Always"), "{stderr}");
    assert!(
        stderr.contains("IfAvailable or Never"),
        "the fix is named: {stderr}"
    );
}

#[test]
fn auth_provider_user_exits_1_saying_it_is_unsupported() {
    let dir = TempDir::new("bad-auth-provider");
    let user = "    auth-provider:\n      name: oidc\n      config: {}\n";
    let path = kubeconfig_with(&dir, &plain_cluster(), user);
    let (code, stderr) = run(&dir, &path, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("oidc auth-provider"), "{stderr}");
    assert!(
        stderr.contains("use an exec credential plugin"),
        "the fix is named: {stderr}"
    );
}

#[test]
fn as_flag_with_a_plain_http_server_exits_1_instead_of_dropping_the_impersonation() {
    let dir = TempDir::new("bad-as-http");
    let path = write_kubeconfig(&dir, NOWHERE, None, Some("t"), "a");
    let (code, stderr) = run(&dir, &path, &["--as", "viewer"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("plain http://"), "{stderr}");
    assert!(stderr.contains("use an https:// server"), "{stderr}");
}

#[test]
fn kube_api_qps_zero_exits_2_naming_the_flag() {
    let dir = TempDir::new("bad-qps");
    let path = write_kubeconfig(&dir, NOWHERE, None, None, "a");
    let (code, stderr) = run(&dir, &path, &["--kube-api-qps", "0"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--kube-api-qps"), "{stderr}");
}

#[test]
fn renew_deadline_equal_to_the_lease_duration_exits_2_naming_the_flag() {
    let dir = TempDir::new("bad-renew");
    let path = write_kubeconfig(&dir, NOWHERE, None, None, "a");
    let args = [
        "--leader-elect",
        "--leader-elect-lease-duration",
        "15s",
        "--leader-elect-renew-deadline",
        "15s",
    ];
    let (code, stderr) = run(&dir, &path, &args);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--leader-elect-renew-deadline"), "{stderr}");
    assert!(stderr.contains("--leader-elect-lease-duration"), "{stderr}");
}

#[test]
fn empty_kubeconfig_exits_1_asking_for_a_context() {
    let dir = TempDir::new("bad-empty");
    let path = dir.0.join("kubeconfig");
    std::fs::write(&path, "").unwrap();
    let (code, stderr) = run(&dir, &path, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("current-context"), "{stderr}");
    assert!(stderr.contains("--context"), "the fix is named: {stderr}");
}

#[test]
fn ca_data_that_is_not_base64_exits_1_saying_so() {
    let dir = TempDir::new("bad-ca-base64");
    let cluster =
        format!("    server: {NOWHERE}\n    certificate-authority-data: \"!!not-base64\"\n");
    let path = kubeconfig_with(&dir, &cluster, "    {}\n");
    let (code, stderr) = run(&dir, &path, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("certificate-authority"), "{stderr}");
    assert!(stderr.contains("base64"), "{stderr}");
}

/// Starts the binary against `server` and waits until its log holds `needle`; the log.
fn log_until(dir: &TempDir, kubeconfig: &Path, needle: &str) -> String {
    let skiff = Skiff::start(&kubeconfig.to_path_buf(), dir.0.join("stderr.log"), &[]);
    let found = crate::support::skiff::eventually(EXIT_WITHIN, || skiff.logs().contains(needle));
    let logs = skiff.logs();
    assert!(found, "the log never said {needle:?}:\n{logs}");
    assert!(!logs.contains("panicked"), "skiff panicked:\n{logs}");
    logs
}

#[test]
fn wrong_token_is_logged_as_wrong_or_expired_without_the_token() {
    let server = crate::support::fake::FakeServer::start_tls();
    server.require_token("the-right-token");
    let dir = TempDir::new("bad-token");
    let ca = server.ca_pem();
    let path = write_kubeconfig(
        &dir,
        &server.url(),
        ca.as_deref(),
        Some("a-revoked-token"),
        "a",
    );
    let logs = log_until(&dir, &path, "wrong or expired");
    assert!(
        !logs.contains("a-revoked-token"),
        "the token leaked:\n{logs}"
    );
}

#[test]
fn server_certificate_from_another_ca_is_logged_as_a_certificate_error() {
    let server = crate::support::fake::FakeServer::start_tls();
    let stranger = crate::support::fake::FakeServer::start_tls();
    let dir = TempDir::new("bad-ca-signer");
    let ca = stranger.ca_pem().expect("CA");
    let path = write_kubeconfig(&dir, &server.url(), Some(&ca), None, "a");
    let logs = log_until(&dir, &path, "TLS handshake");
    assert!(
        logs.contains("certificate-authority"),
        "the fix is named:\n{logs}"
    );
    assert!(
        server.requests().is_empty(),
        "nothing was sent to an untrusted server"
    );
}

/// Runs the binary without `--kubeconfig`, with `$HOME` at `dir` and the given `$KUBECONFIG`.
fn run_without_flag(dir: &TempDir, kubeconfig_env: Option<&str>) -> (i32, String) {
    let log = dir.0.join("stderr.log");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_skiff"));
    cmd.args([
        "--metrics-bind-address=0",
        "--health-probe-bind-address=127.0.0.1:0",
    ])
    .env("HOME", &dir.0)
    .env_remove("KUBERNETES_SERVICE_HOST")
    .env_remove("KUBERNETES_SERVICE_PORT")
    .env_remove("KUBECONFIG")
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::null())
    .stderr(std::fs::File::create(&log).expect("create log file"));
    if let Some(value) = kubeconfig_env {
        cmd.env("KUBECONFIG", value);
    }
    let child = cmd.spawn().expect("start skiff");
    finish(Skiff { child, log })
}

#[test]
fn kubeconfig_env_naming_only_missing_files_exits_1_naming_it() {
    let dir = TempDir::new("bad-env");
    let missing = dir.0.join("missing-a");
    let list = format!(
        "{}:{}",
        missing.display(),
        dir.0.join("missing-b").display()
    );
    let (code, stderr) = run_without_flag(&dir, Some(&list));
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("$KUBECONFIG"), "{stderr}");
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
}

#[test]
fn no_config_anywhere_exits_1_listing_what_was_tried() {
    let dir = TempDir::new("bad-nothing");
    let (code, stderr) = run_without_flag(&dir, None);
    assert_eq!(code, 1, "{stderr}");
    for tried in ["--kubeconfig", "$KUBECONFIG", "in-cluster", ".kube/config"] {
        assert!(stderr.contains(tried), "{tried} not named: {stderr}");
    }
}
