//! kubeconfig loading: files merged like kubectl, one context resolved into a [`Config`].
//!
//! Merging: the first file that defines a cluster, user or context name wins, and
//! `current-context` comes from the first file that sets it; a file without a document
//! (empty, comments only) adds nothing. Relative file paths resolve against the directory of
//! the file that named them. Every refusal names the file and line of the entry at fault.

use super::config::{Auth, Config};
use super::config_error::ConfigError;
use super::credentials::{
    cluster_proxy, cluster_tls, user_auth, user_identity, user_impersonation,
};
use super::kubeconfig_file::{ClusterEntry, ContextEntry, Located, UserEntry};
use super::kubeconfig_read::{FileEntries, read};
use http_types::Url;
use std::path::{Path, PathBuf};

#[derive(Debug, Default)]
struct Merged {
    clusters: Vec<Located<ClusterEntry>>,
    users: Vec<Located<UserEntry>>,
    contexts: Vec<Located<ContextEntry>>,
    current_context: Option<String>,
    files: Vec<PathBuf>,
}

impl Merged {
    fn add(&mut self, file: FileEntries, path: &Path) {
        merge(&mut self.clusters, file.clusters);
        merge(&mut self.users, file.users);
        merge(&mut self.contexts, file.contexts);
        if self.current_context.is_none() {
            self.current_context = file.current_context.filter(|c| !c.is_empty());
        }
        self.files.push(path.to_owned());
    }
}

fn merge<T>(into: &mut Vec<Located<T>>, entries: Vec<Located<T>>) {
    for entry in entries {
        if into.iter().all(|known| known.name != entry.name) {
            into.push(entry);
        }
    }
}

fn find<'a, T>(entries: &'a [Located<T>], name: &str) -> Option<&'a Located<T>> {
    entries.iter().find(|e| e.name == name)
}

/// An error about `entry`, headed by the file and line it was written at.
fn at<T>(entry: &Located<T>, error: ConfigError) -> ConfigError {
    ConfigError::Invalid(format!("{}: {error}", entry.place()))
}

/// Where kubeconfig paths came from: how errors name them, and whether missing files count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Flag,
    Env,
    Home,
    /// Paths given directly (tests).
    Given,
}

impl Source {
    fn label(self) -> &'static str {
        match self {
            Source::Flag => "--kubeconfig",
            Source::Env => "$KUBECONFIG",
            Source::Home => "~/.kube/config",
            Source::Given => "the kubeconfig path list",
        }
    }
}

/// Reads `paths` (named by `source` in errors), merges them and resolves `context`.
///
/// For `$KUBECONFIG` missing files are skipped, as kubectl does, unless none exists.
pub(crate) fn load_files(
    paths: &[PathBuf],
    context: Option<&str>,
    source: Source,
) -> Result<Config, ConfigError> {
    let skip_missing = source == Source::Env;
    let source = source.label();
    let mut merged = Merged::default();
    for path in paths {
        if skip_missing && !path.exists() {
            continue;
        }
        merged.add(read_file(path, source)?, path);
    }
    if merged.files.is_empty() {
        let path = paths.first().cloned().unwrap_or_default();
        return Err(ConfigError::MissingFile {
            path,
            source: source.to_owned(),
        });
    }
    resolve(&merged, context)
}

fn read_file(path: &Path, source: &str) -> Result<FileEntries, ConfigError> {
    let text = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ConfigError::MissingFile {
            path: path.to_owned(),
            source: source.to_owned(),
        },
        _ => ConfigError::Unreadable {
            what: "kubeconfig".into(),
            path: path.to_owned(),
            error: e.to_string(),
        },
    })?;
    read(&text, path)
}

/// One kubeconfig's text, parsed and resolved as [`load_files`] does a file's, its relative
/// paths under `dir`. For the fuzzers and property tests.
#[cfg(any(test, fuzzing))]
pub(crate) fn load_text(text: &str, dir: &Path) -> Result<Config, ConfigError> {
    let path = dir.join("kubeconfig");
    let mut merged = Merged::default();
    merged.add(read(text.as_bytes(), &path)?, &path);
    resolve(&merged, None)
}

fn resolve(merged: &Merged, context: Option<&str>) -> Result<Config, ConfigError> {
    let files = || {
        let names: Vec<String> = merged
            .files
            .iter()
            .map(|f| f.display().to_string())
            .collect();
        names.join(", ")
    };
    let context_name = context
        .map(str::to_owned)
        .or_else(|| merged.current_context.clone())
        .ok_or_else(|| ConfigError::NoContext { sources: files() })?;
    let context =
        find(&merged.contexts, &context_name).ok_or_else(|| ConfigError::UnknownContext {
            name: context_name.clone(),
            known: merged.contexts.iter().map(|c| c.name.clone()).collect(),
        })?;
    let cluster_name = context.entry.cluster.clone().unwrap_or_default();
    let cluster =
        find(&merged.clusters, &cluster_name).ok_or_else(|| ConfigError::MissingCluster {
            place: context.place(),
            context: context_name.clone(),
            cluster: cluster_name.clone(),
        })?;
    let mut config = Config::new(server_url(cluster)?);
    config.tls = cluster_tls(cluster).map_err(|e| at(cluster, e))?;
    if config.tls.insecure_skip_verify && config.tls.ca_pem.is_some() {
        return Err(at(
            cluster,
            ConfigError::Invalid(format!(
                "cluster {:?} sets insecure-skip-tls-verify and a certificate-authority, which kubectl refuses too; keep the CA and remove insecure-skip-tls-verify",
                cluster.name
            )),
        ));
    }
    config.proxy = cluster_proxy(cluster).map_err(|e| at(cluster, e))?;
    if let Some(user_name) = context.entry.user.as_deref().filter(|u| !u.is_empty()) {
        let user = find(&merged.users, user_name).ok_or_else(|| ConfigError::MissingUser {
            place: context.place(),
            context: context_name.clone(),
            user: user_name.to_owned(),
        })?;
        config.auth = user_auth(user, cluster, &config).map_err(|e| at(user, e))?;
        config.impersonate = user_impersonation(user).map_err(|e| at(user, e))?;
        config.tls.identity = user_identity(user).map_err(|e| at(user, e))?;
    }
    config.namespace = context.entry.namespace.clone().filter(|n| !n.is_empty());
    if config.server.scheme() == "http" {
        plain_http_sends_no_identity(&mut config, cluster)?;
    }
    Ok(config)
}

/// Over a plain http:// server client-go reads no user and no CA: it sends no token, no client
/// certificate and no exec credential, where anyone on the path could read them. skiff does the
/// same, and says so. Impersonation is refused instead of dropped: dropping it would change who
/// skiff acts as without a word.
fn plain_http_sends_no_identity(
    config: &mut Config,
    cluster: &Located<ClusterEntry>,
) -> Result<(), ConfigError> {
    if config.impersonate.is_some() {
        return Err(at(
            cluster,
            ConfigError::Invalid(format!(
                "cluster {:?} has a plain http:// server, over which kubectl sends no credentials and no impersonation, so the user's as: fields would be lost; use an https:// server",
                cluster.name
            )),
        ));
    }
    let had_identity = !matches!(config.auth, Auth::None) || config.tls.identity.is_some();
    if had_identity {
        log::warn!(
            "cluster {:?} has a plain http:// server: like kubectl, skiff sends no credentials over it; use https:// to send the user's",
            cluster.name
        );
    }
    config.auth = Auth::None;
    config.tls.identity = None;
    config.tls.ca_pem = None;
    Ok(())
}

/// The cluster's server; a bare `host:port` is reached over http://, as client-go does (it
/// decides before it reads any TLS setting).
fn server_url(cluster: &Located<ClusterEntry>) -> Result<Url, ConfigError> {
    let name = &cluster.name;
    let server = cluster.entry.server.as_deref().unwrap_or_default();
    let refuse = |problem: String| {
        at(
            cluster,
            ConfigError::Invalid(format!(
                "cluster {name:?} {problem}; set server to e.g. https://host:6443"
            )),
        )
    };
    if server.is_empty() {
        return Err(refuse("has no server".into()));
    }
    let url = match Url::parse(server) {
        Ok(url) if url.has_host() => url,
        _ => {
            let url = Url::parse(&format!("http://{server}"))
                .map_err(|e| refuse(format!("has a server that is not a URL ({e})")))?;
            if url.path() != "/" {
                return Err(refuse(
                    "has a server that is neither a URL nor host:port".into(),
                ));
            }
            url
        }
    };
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(refuse(format!(
            "has server scheme {other:?}, which skiff cannot connect with"
        ))),
    }
}

#[cfg(test)]
mod tests {
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
}
