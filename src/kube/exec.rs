//! Exec credential plugins (`client.authentication.k8s.io/v1` and `v1beta1`), as client-go runs
//! them: the kubeconfig names a command (`aws eks get-token`, `gke-gcloud-auth-plugin`,
//! `kubelogin`) whose `ExecCredential` on stdout holds a token or a client certificate.
//!
//! This file is the kubeconfig's `exec` entry checked into an [`ExecPlugin`], and the plugin's
//! cached credential; `run` runs the command and reads its reply, and `credential` is what a
//! request presents.
//!
//! Why the state lives here: each [`ExecPlugin`] caches its last credential until it expires,
//! and a clone starts with an empty cache of its own. The lease client's config is a clone, so
//! a slow plugin run for the main client never holds up a lease renewal.

mod run;
mod credential;

use super::Error;
use super::config_error::ConfigError;
use run::{API_V1, API_V1BETA1, PluginSpec, run};
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

pub use credential::Credential;
pub(super) use run::ClusterInfo;

/// The kubeconfig `user.exec` entry.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct ExecEntry {
    api_version: Option<String>,
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<Vec<EnvVar>>,
    install_hint: Option<String>,
    provide_cluster_info: Option<bool>,
    interactive_mode: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
struct EnvVar {
    name: String,
    value: String,
}

/// A validated plugin configuration and this client's cached credential.
pub struct ExecPlugin {
    spec: Arc<PluginSpec>,
    /// One run at a time per client: concurrent requests wait for the run under way.
    cached: smol::lock::Mutex<Option<Credential>>,
}

impl Clone for ExecPlugin {
    /// The same plugin with an empty cache of its own: clones never wait on each other's runs.
    fn clone(&self) -> ExecPlugin {
        ExecPlugin {
            spec: self.spec.clone(),
            cached: smol::lock::Mutex::new(None),
        }
    }
}

impl fmt::Debug for ExecPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ExecPlugin({})", self.spec.command.display())
    }
}

impl ExecPlugin {
    /// Validates `user`'s exec entry; a relative command with a `/` resolves against `dir`, the
    /// directory of the kubeconfig that named it (as client-go does).
    pub(super) fn new(
        user: &str,
        entry: &ExecEntry,
        dir: &Path,
        cluster: ClusterInfo,
    ) -> Result<ExecPlugin, ConfigError> {
        let invalid = |what: String| ConfigError::Invalid(format!("user {user:?}: {what}"));
        let command = entry
            .command
            .clone()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| {
                invalid("exec has no command; set exec.command to the credential plugin".into())
            })?;
        let api_version = entry.api_version.clone().unwrap_or_default();
        if api_version != API_V1 && api_version != API_V1BETA1 {
            return Err(invalid(format!(
                "exec apiVersion {api_version:?} is not supported; use {API_V1} or {API_V1BETA1}"
            )));
        }
        let refused_mode = match entry.interactive_mode.as_deref() {
            Some("Never" | "IfAvailable") => None,
            None if api_version == API_V1BETA1 => None,
            None => Some(format!(
                "exec with {API_V1} must set interactiveMode; add `interactiveMode: Never`"
            )),
            Some("Always") => Some(format!(
                "exec plugin {command:?} has interactiveMode: Always, but skiff runs without a terminal; log in first (so the plugin can run unattended) and set interactiveMode: IfAvailable or Never"
            )),
            Some(other) => Some(format!(
                "exec interactiveMode {other:?} is not one of Never, IfAvailable, Always"
            )),
        };
        if let Some(why) = refused_mode {
            return Err(invalid(why));
        }
        let command = if command.contains('/') {
            dir.join(&command)
        } else {
            PathBuf::from(command)
        };
        let env = entry.env.iter().flatten();
        if let Some(i) = env.clone().position(|v| v.name.is_empty()) {
            return Err(invalid(format!(
                "exec env entry {i} has no name, which kubectl refuses too; give it a name"
            )));
        }
        Ok(ExecPlugin {
            spec: Arc::new(PluginSpec {
                user: user.to_owned(),
                command,
                args: entry.args.clone().unwrap_or_default(),
                env: env.map(|v| (v.name.clone(), v.value.clone())).collect(),
                api_version,
                install_hint: entry.install_hint.clone().filter(|h| !h.trim().is_empty()),
                cluster: entry
                    .provide_cluster_info
                    .unwrap_or(false)
                    .then_some(cluster),
            }),
            cached: smol::lock::Mutex::new(None),
        })
    }

    /// The command as it will be run, for logs and tests.
    pub fn command(&self) -> &Path {
        &self.spec.command
    }

    /// The arguments, the extra environment and the `apiVersion` it is run with (tests
    /// compare them with client-go's).
    pub fn args(&self) -> &[String] {
        &self.spec.args
    }

    pub fn env(&self) -> &[(String, String)] {
        &self.spec.env
    }

    pub fn api_version(&self) -> &str {
        &self.spec.api_version
    }

    /// The cached credential while it is fresh, else a new one from a plugin run.
    pub async fn current(&self) -> Result<Credential, Error> {
        let mut cached = self.cached.lock().await;
        if let Some(credential) = cached.as_ref().filter(|c| c.is_fresh_at(SystemTime::now())) {
            return Ok(credential.clone());
        }
        let credential = run(&self.spec).await?;
        *cached = Some(credential.clone());
        Ok(credential)
    }

    /// Forgets the credential of run `generation` (the server answered 401 to it), so the next
    /// [`current`](Self::current) runs the plugin again; a newer credential is kept.
    pub async fn retire(&self, generation: u64) {
        let mut cached = self.cached.lock().await;
        if cached.as_ref().is_some_and(|c| c.generation == generation) {
            *cached = None;
        }
    }
}

#[cfg(test)]
mod tests;
