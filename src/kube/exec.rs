//! Exec credential plugins (`client.authentication.k8s.io/v1` and `v1beta1`), as client-go runs
//! them: the kubeconfig names a command (`aws eks get-token`, `gke-gcloud-auth-plugin`,
//! `kubelogin`) whose `ExecCredential` on stdout holds a token or a client certificate.
//!
//! Why the state lives here: each [`ExecPlugin`] caches its last credential until it expires,
//! and a clone starts with an empty cache of its own. The lease client's config is a clone, so
//! a slow plugin run for the main client never holds up a lease renewal.

use super::Error;
use super::client_identity::{ClientIdentity, to_pkcs8};
use super::config_error::ConfigError;
use crate::deadline::or_timeout;
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// Longest a plugin may run; a cloud CLI fetching a token takes seconds, never a minute.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(60);
/// A credential is renewed this long before its `expirationTimestamp`, so a request never
/// reaches the server with a token that expires on the way.
pub const EXPIRY_MARGIN: Duration = Duration::from_secs(10);

const API_V1: &str = "client.authentication.k8s.io/v1";
const API_V1BETA1: &str = "client.authentication.k8s.io/v1beta1";

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

/// What a plugin may learn about the cluster (`provideClusterInfo: true`).
#[derive(Debug, Clone, Default)]
pub(super) struct ClusterInfo {
    pub(super) server: String,
    pub(super) ca_pem: Option<Vec<u8>>,
    pub(super) insecure_skip_tls_verify: bool,
    pub(super) tls_server_name: Option<String>,
    pub(super) proxy_url: Option<String>,
}

/// What to present to the API server on the next request.
#[derive(Clone, Default)]
pub struct Credential {
    pub token: Option<String>,
    /// A client certificate from a plugin (a kubeconfig's own certificate is in `TlsOptions`).
    pub identity: Option<ClientIdentity>,
    /// Which plugin run produced it (0: not from a plugin); a 401 retires only this one.
    pub generation: u64,
    expires: Option<SystemTime>,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("identity", &self.identity)
            .field("generation", &self.generation)
            .field("expires", &self.expires)
            .finish()
    }
}

impl Credential {
    pub fn token(token: String) -> Credential {
        Credential {
            token: Some(token),
            ..Credential::default()
        }
    }

    fn is_fresh_at(&self, now: SystemTime) -> bool {
        self.expires
            .is_none_or(|expires| now + EXPIRY_MARGIN < expires)
    }
}

/// A validated plugin configuration and this client's cached credential.
pub struct ExecPlugin {
    spec: Arc<PluginSpec>,
    /// One run at a time per client: concurrent requests wait for the run under way.
    cached: smol::lock::Mutex<Option<Credential>>,
}

struct PluginSpec {
    user: String,
    command: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    api_version: String,
    install_hint: Option<String>,
    cluster: Option<ClusterInfo>,
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
        match entry.interactive_mode.as_deref() {
            Some("Never" | "IfAvailable") => {}
            None if api_version == API_V1BETA1 => {}
            None => {
                return Err(invalid(format!(
                    "exec with {API_V1} must set interactiveMode; add `interactiveMode: Never`"
                )));
            }
            Some("Always") => {
                return Err(invalid(format!(
                    "exec plugin {command:?} has interactiveMode: Always, but skiff runs without a terminal; log in first (so the plugin can run unattended) and set interactiveMode: IfAvailable or Never"
                )));
            }
            Some(other) => {
                return Err(invalid(format!(
                    "exec interactiveMode {other:?} is not one of Never, IfAvailable, Always"
                )));
            }
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

async fn run(spec: &PluginSpec) -> Result<Credential, Error> {
    let mut command = smol::process::Command::new(&spec.command);
    command
        .args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env("KUBERNETES_EXEC_INFO", exec_info(spec).to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = command
        .spawn()
        .map_err(|e| failure(spec, &format!("could not be started ({e})")))?;
    let output = or_timeout(
        async {
            child
                .output()
                .await
                .map_err(|e| failure(spec, &format!("could not be read ({e})")))
        },
        smol::Timer::after(EXEC_TIMEOUT),
        || describe(spec, &format!("did not finish within {EXEC_TIMEOUT:?}")),
    )
    .await
    .map_err(|e| Error::Credentials(e.to_string()))?;
    for line in String::from_utf8_lossy(&output.stderr).lines() {
        if !line.trim().is_empty() {
            log::info!("exec plugin {}: {line}", spec.command.display());
        }
    }
    if !output.status.success() {
        return Err(failure(spec, &format!("exited with {}", output.status)));
    }
    parse(spec, &output.stdout)
}

/// `KUBERNETES_EXEC_INFO`: an `ExecCredential` whose spec says skiff is not interactive and,
/// with `provideClusterInfo`, which cluster the credential is for.
fn exec_info(spec: &PluginSpec) -> serde_json::Value {
    use base64::Engine;
    let mut info = serde_json::json!({
        "apiVersion": spec.api_version,
        "kind": "ExecCredential",
        "spec": {"interactive": false},
    });
    if let Some(cluster) = &spec.cluster {
        let mut value = serde_json::json!({"server": cluster.server});
        if let Some(ca) = &cluster.ca_pem {
            value["certificate-authority-data"] =
                base64::engine::general_purpose::STANDARD.encode(ca).into();
        }
        if cluster.insecure_skip_tls_verify {
            value["insecure-skip-tls-verify"] = true.into();
        }
        if let Some(name) = &cluster.tls_server_name {
            value["tls-server-name"] = name.clone().into();
        }
        if let Some(proxy) = &cluster.proxy_url {
            value["proxy-url"] = proxy.clone().into();
        }
        info["spec"]["cluster"] = value;
    }
    info
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredentialReply {
    api_version: Option<String>,
    kind: Option<String>,
    status: Option<ExecStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecStatus {
    token: Option<String>,
    client_certificate_data: Option<String>,
    client_key_data: Option<String>,
    expiration_timestamp: Option<String>,
}

fn parse(spec: &PluginSpec, stdout: &[u8]) -> Result<Credential, Error> {
    let reply: ExecCredentialReply = serde_json::from_slice(stdout).map_err(|e| {
        let preview: String = String::from_utf8_lossy(stdout).chars().take(80).collect();
        failure(
            spec,
            &format!("printed no ExecCredential JSON ({e}); it began {preview:?}"),
        )
    })?;
    let api_version = reply.api_version.unwrap_or_default();
    if api_version != spec.api_version || reply.kind.as_deref() != Some("ExecCredential") {
        return Err(failure(
            spec,
            &format!(
                "answered apiVersion {api_version:?} kind {:?}, but the kubeconfig asks for {} ExecCredential",
                reply.kind.unwrap_or_default(),
                spec.api_version
            ),
        ));
    }
    let status = reply
        .status
        .ok_or_else(|| failure(spec, "returned an ExecCredential without status"))?;
    let expires = match status.expiration_timestamp.as_deref() {
        Some(text) => Some(crate::time::parse_rfc3339(text).ok_or_else(|| {
            failure(
                spec,
                &format!("returned expirationTimestamp {text:?}, which is not RFC 3339"),
            )
        })?),
        None => None,
    };
    let identity = identity(spec, &status)?;
    let token = status.token.filter(|t| !t.is_empty());
    if token.is_none() && identity.is_none() {
        return Err(failure(
            spec,
            "returned neither a token nor clientCertificateData and clientKeyData",
        ));
    }
    Ok(Credential {
        token,
        identity,
        generation: next_generation(),
        expires,
    })
}

fn identity(spec: &PluginSpec, status: &ExecStatus) -> Result<Option<ClientIdentity>, Error> {
    let cert = status
        .client_certificate_data
        .as_deref()
        .filter(|c| !c.is_empty());
    let key = status.client_key_data.as_deref().filter(|k| !k.is_empty());
    match (cert, key) {
        (None, None) => Ok(None),
        (Some(cert), Some(key)) => {
            if openssl::x509::X509::from_pem(cert.as_bytes()).is_err() {
                return Err(failure(
                    spec,
                    "returned clientCertificateData that is not PEM",
                ));
            }
            let key_pkcs8_pem = to_pkcs8(key.as_bytes(), "its clientKeyData")
                .map_err(|e| failure(spec, &format!("returned a bad key: {e}")))?;
            Ok(Some(ClientIdentity {
                cert_pem: cert.as_bytes().to_vec(),
                key_pkcs8_pem,
            }))
        }
        _ => Err(failure(
            spec,
            "returned only one of clientCertificateData and clientKeyData; both are needed",
        )),
    }
}

fn next_generation() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn failure(spec: &PluginSpec, what: &str) -> Error {
    Error::Credentials(describe(spec, what))
}

/// Names the user, the command, what went wrong and the kubeconfig's `installHint`.
fn describe(spec: &PluginSpec, what: &str) -> String {
    let mut text = format!(
        "exec credential plugin {:?} of user {:?} {what}",
        spec.command.display().to_string(),
        spec.user
    );
    match &spec.install_hint {
        Some(hint) => text.push_str(&format!("; install hint: {}", hint.trim())),
        None => text.push_str("; check that it runs in a shell with the same environment"),
    }
    text
}

#[cfg(test)]
mod tests;
