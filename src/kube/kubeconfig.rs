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
fn at<T>(entry: &Located<T>, error: impl std::fmt::Display) -> ConfigError {
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
        _ => ConfigError::unreadable("kubeconfig", path, &e),
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
        .ok_or_else(|| {
            ConfigError::Invalid(format!(
                "no current-context in {}; pass --context or run `kubectl config use-context`",
                files()
            ))
        })?;
    let context = find(&merged.contexts, &context_name).ok_or_else(|| {
        let known: Vec<&str> = merged.contexts.iter().map(|c| c.name.as_str()).collect();
        let known = match known.is_empty() {
            true => "no contexts".to_owned(),
            false => known.join(", "),
        };
        ConfigError::Invalid(format!(
            "context {context_name:?} is not in the kubeconfig; it has: {known}; pick one with --context"
        ))
    })?;
    let cluster_name = context.entry.cluster.clone().unwrap_or_default();
    let cluster = find(&merged.clusters, &cluster_name).ok_or_else(|| {
        at(
            context,
            format!(
                "context {context_name:?} names cluster {cluster_name:?}, which the kubeconfig does not define; add it or fix the context"
            ),
        )
    })?;
    let mut config = Config::new(server_url(cluster)?);
    config.tls = cluster_tls(cluster).map_err(|e| at(cluster, e))?;
    if config.tls.insecure_skip_verify && config.tls.ca_pem.is_some() {
        return Err(at(
            cluster,
            format!(
                "cluster {:?} sets insecure-skip-tls-verify and a certificate-authority, which kubectl refuses too; keep the CA and remove insecure-skip-tls-verify",
                cluster.name
            ),
        ));
    }
    config.proxy = cluster_proxy(cluster).map_err(|e| at(cluster, e))?;
    if let Some(user_name) = context.entry.user.as_deref().filter(|u| !u.is_empty()) {
        let user = find(&merged.users, user_name).ok_or_else(|| {
            at(
                context,
                format!(
                    "context {context_name:?} names user {user_name:?}, which the kubeconfig does not define (kubectl would connect without credentials); add the user or fix the context"
                ),
            )
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
            format!(
                "cluster {:?} has a plain http:// server, over which kubectl sends no credentials and no impersonation, so the user's as: fields would be lost; use an https:// server",
                cluster.name
            ),
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
            format!("cluster {name:?} {problem}; set server to e.g. https://host:6443"),
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
mod tests;
