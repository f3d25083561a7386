use super::*;
use crate::kube::config::{Auth, ProxyConfig};
use crate::kube::load_kubeconfig_files;
use crate::kube::test_dir::temp_dir;
use crate::testing::assert_mentions;

const FIRST: &str = r#"
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev-cluster
  cluster:
    server: https://dev.example:6443
    tls-server-name: api.dev
    insecure-skip-tls-verify: true
users:
- name: dev-user
  user:
    token: dev-token
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user, namespace: apps}
- name: shared
  context: {cluster: dev-cluster, user: dev-user}
"#;

const SECOND: &str = r#"
current-context: prod
clusters:
- name: prod-cluster
  cluster:
    server: https://prod.example
users:
- name: prod-user
  user:
    tokenFile: tokens/prod
contexts:
- name: prod
  context: {cluster: prod-cluster, user: prod-user, namespace: ops}
- name: shared
  context: {cluster: prod-cluster, user: prod-user}
"#;

fn two_files(tag: &str) -> (PathBuf, Vec<PathBuf>) {
    let dir = temp_dir(tag);
    std::fs::create_dir_all(dir.join("b/tokens")).unwrap();
    std::fs::write(dir.join("b/tokens/prod"), "prod-token\n").unwrap();
    std::fs::write(dir.join("a.yaml"), FIRST).unwrap();
    std::fs::write(dir.join("b/config"), SECOND).unwrap();
    let paths = vec![dir.join("a.yaml"), dir.join("b/config")];
    (dir, paths)
}

/// Writes `text` as the only kubeconfig at `path` and loads it.
fn load_one(path: &Path, text: &str) -> Result<Config, ConfigError> {
    std::fs::write(path, text).unwrap();
    load_kubeconfig_files(&[path.to_path_buf()], None)
}

#[test]
fn current_context_comes_from_the_first_file_that_sets_it() {
    let (_dir, paths) = two_files("kc-current");
    let config = load_kubeconfig_files(&paths, None).unwrap();
    assert_eq!(config.server.as_str(), "https://dev.example:6443/");
    assert_eq!(config.namespace.as_deref(), Some("apps"));
    assert_eq!(config.tls.server_name.as_deref(), Some("api.dev"));
    assert!(config.tls.insecure_skip_verify);
    assert!(matches!(&config.auth, Auth::Token(t) if t == "dev-token"));
}

#[test]
fn first_file_defining_a_name_wins_when_merging() {
    let (_dir, paths) = two_files("kc-merge");
    let config = load_kubeconfig_files(&paths, Some("shared")).unwrap();
    assert_eq!(config.server.as_str(), "https://dev.example:6443/");
    let reversed: Vec<PathBuf> = paths.iter().rev().cloned().collect();
    let config = load_kubeconfig_files(&reversed, Some("shared")).unwrap();
    assert_eq!(config.server.as_str(), "https://prod.example/");
}

#[test]
fn context_flag_selects_across_files_and_token_file_is_relative_to_its_kubeconfig() {
    let (_dir, paths) = two_files("kc-context");
    let config = load_kubeconfig_files(&paths, Some("prod")).unwrap();
    assert_eq!(config.namespace.as_deref(), Some("ops"));
    let Auth::TokenFile(file) = &config.auth else {
        panic!("expected a token file, got {:?}", config.auth);
    };
    assert!(file.path().ends_with("b/tokens/prod"), "{:?}", file.path());
    assert_eq!(file.token_at(std::time::Instant::now()), "prod-token");
}

#[test]
fn unknown_context_lists_the_contexts_that_exist() {
    let (_dir, paths) = two_files("kc-unknown");
    let err = load_kubeconfig_files(&paths, Some("staging")).unwrap_err();
    assert_mentions(&err.to_string(), &["staging", "dev", "shared", "prod"]);
}

#[test]
fn kubeconfig_list_skips_missing_files_but_not_when_none_exists() {
    let (dir, mut paths) = two_files("kc-missing");
    paths.insert(0, dir.join("absent"));
    assert!(load_files(&paths, None, Source::Env).is_ok());
    let err = load_files(&[dir.join("absent")], None, Source::Env).unwrap_err();
    assert!(matches!(err, ConfigError::MissingFile { .. }), "{err}");
    let err = load_files(&[dir.join("absent")], None, Source::Flag).unwrap_err();
    assert_mentions(&err.to_string(), &["absent", "--kubeconfig"]);
}

#[test]
fn exec_user_loads_as_a_plugin_and_auth_provider_is_refused_with_what_to_use_instead() {
    let dir = temp_dir("kc-exec");
    let path = dir.join("config");
    let exec = "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: bin/get-token\n      args: [eks, get-token]";
    let config = load_one(&path, &FIRST.replace("    token: dev-token", exec)).unwrap();
    let Auth::Exec(plugin) = &config.auth else {
        panic!("expected an exec plugin, got {:?}", config.auth);
    };
    assert_eq!(plugin.command(), dir.join("bin/get-token"));

    let provider = "    auth-provider:\n      name: oidc";
    let err = load_one(&path, &FIRST.replace("    token: dev-token", provider)).unwrap_err();
    assert_mentions(
        &err.to_string(),
        &["auth-provider", "exec credential plugin"],
    );
}

#[test]
fn proxy_url_is_checked_at_load_naming_the_cluster() {
    let dir = temp_dir("kc-proxy");
    let path = dir.join("config");
    let with = |line: &str| {
        FIRST.replace(
            "    tls-server-name: api.dev",
            &format!("    tls-server-name: api.dev\n    proxy-url: {line}"),
        )
    };
    let config = load_one(&path, &with("http://proxy.corp:3128")).unwrap();
    assert_eq!(
        config.proxy,
        ProxyConfig::Url("http://proxy.corp:3128".into())
    );
    let err = load_one(&path, &with("https://proxy.corp:443")).unwrap_err();
    assert_mentions(&err.to_string(), &["dev-cluster", "https://"]);
}

#[test]
fn malformed_yaml_names_the_file() {
    let dir = temp_dir("kc-yaml");
    let path = dir.join("broken");
    let err = load_one(&path, "clusters: [\n  - name: x\n   oops: {").unwrap_err();
    assert!(matches!(err, ConfigError::Yaml { .. }), "{err}");
    assert!(err.to_string().contains("broken"), "{err}");
    assert!(err.to_string().contains("line 2, column 3"), "{err}");
}

#[test]
fn a_field_of_the_wrong_type_is_refused_naming_file_line_and_field_but_not_the_value() {
    let dir = temp_dir("kc-type");
    let path = dir.join("config");
    let text = FIRST.replace("    token: dev-token", "    token: 123456789");
    let err = load_one(&path, &text).unwrap_err().to_string();
    assert_mentions(&err, &["config", "line 14", "users[0].user.token", "quote"]);
    assert!(!err.contains("123456789"), "{err}");
    let text = FIRST.replace(
        "insecure-skip-tls-verify: true",
        "insecure-skip-tls-verify: yes",
    );
    assert!(load_one(&path, &text).unwrap().tls.insecure_skip_verify);
}

#[test]
fn duplicate_names_in_one_file_are_refused_but_merge_across_files() {
    let dir = temp_dir("kc-dup");
    let path = dir.join("config");
    let text = FIRST.replace("- name: shared\n", "- name: dev\n");
    let err = load_one(&path, &text).unwrap_err().to_string();
    assert_mentions(&err, &["line 18", "contexts", "\"dev\"", "line 16"]);
    let (_dir, paths) = two_files("kc-dup-merge");
    assert!(load_kubeconfig_files(&paths, Some("shared")).is_ok());
}

#[test]
fn files_without_a_document_add_nothing_to_a_merge() {
    let (dir, mut paths) = two_files("kc-empty");
    for (name, text) in [
        ("comments", "# nothing yet\n"),
        ("dashes", "---\n"),
        ("empty", ""),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
        paths.insert(0, dir.join(name));
    }
    let config = load_kubeconfig_files(&paths, None).unwrap();
    assert_eq!(config.server.as_str(), "https://dev.example:6443/");
}

#[test]
fn insecure_with_a_ca_is_refused_and_a_bare_host_port_is_http() {
    let dir = temp_dir("kc-insecure");
    let path = dir.join("config");
    let key = openssl::pkey::PKey::from_rsa(openssl::rsa::Rsa::generate(2048).unwrap());
    let ca = crate::kube::test_cert::self_signed(&key.unwrap());
    std::fs::write(dir.join("ca.pem"), ca).unwrap();
    let text = FIRST.replace(
        "    insecure-skip-tls-verify: true",
        "    insecure-skip-tls-verify: true\n    certificate-authority: ca.pem",
    );
    let err = load_one(&path, &text).unwrap_err().to_string();
    assert_mentions(&err, &["line 6", "insecure-skip-tls-verify"]);
    let text = FIRST.replace("https://dev.example:6443", "dev.example:6443");
    let config = load_one(&path, &text).unwrap();
    assert_eq!(config.server.as_str(), "http://dev.example:6443/");
}

#[test]
fn a_plain_http_server_gets_no_credentials_and_impersonation_over_it_is_refused() {
    let dir = temp_dir("kc-http");
    let path = dir.join("config");
    let text = FIRST.replace("https://dev.example:6443", "http://dev.example:8080");
    let config = load_one(&path, &text).unwrap();
    assert!(matches!(config.auth, Auth::None), "{:?}", config.auth);
    let https = load_one(&path, FIRST).unwrap();
    assert!(matches!(https.auth, Auth::Token(_)), "{:?}", https.auth);
    let text = text.replace("token: dev-token", "token: dev-token\n    as: viewer");
    let err = load_one(&path, &text).unwrap_err().to_string();
    assert_mentions(&err, &["http://", "as:", "https://"]);
}

#[test]
fn missing_cluster_and_unreadable_ca_are_named() {
    let dir = temp_dir("kc-refs");
    let path = dir.join("config");
    let text = FIRST.replace(
        "cluster: dev-cluster, user: dev-user, namespace",
        "cluster: gone, user: dev-user, namespace",
    );
    let err = load_one(&path, &text).unwrap_err();
    assert!(err.to_string().contains("gone"), "{err}");
    let text = FIRST.replace(
        "    insecure-skip-tls-verify: true",
        "    certificate-authority: certs/ca.pem",
    );
    let err = load_one(&path, &text).unwrap_err();
    assert!(err.to_string().contains("certs/ca.pem"), "{err}");
}
