//! One run of an exec credential plugin: the command started with its arguments, environment
//! and `KUBERNETES_EXEC_INFO`, given a deadline, and its `ExecCredential` read into a
//! [`Credential`], every failure naming the user, the command and the kubeconfig's install hint.
//!
//! Kept apart from the plugin's configuration and cache (`exec.rs`): this is the part that
//! talks to another process and trusts nothing it prints.

use super::credential::Credential;
use crate::deadline::or_timeout;
use crate::kube::Error;
use crate::kube::client_identity::{ClientIdentity, to_pkcs8};
use serde::Deserialize;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Longest a plugin may run; a cloud CLI fetching a token takes seconds, never a minute.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(60);

pub(super) const API_V1: &str = "client.authentication.k8s.io/v1";
pub(super) const API_V1BETA1: &str = "client.authentication.k8s.io/v1beta1";

/// What a plugin may learn about the cluster (`provideClusterInfo: true`).
#[derive(Debug, Clone, Default)]
pub(in crate::kube) struct ClusterInfo {
    pub(in crate::kube) server: String,
    pub(in crate::kube) ca_pem: Option<Vec<u8>>,
    pub(in crate::kube) insecure_skip_tls_verify: bool,
    pub(in crate::kube) tls_server_name: Option<String>,
    pub(in crate::kube) proxy_url: Option<String>,
}

/// A validated plugin configuration: what is run, and for whom.
pub(super) struct PluginSpec {
    pub(super) user: String,
    pub(super) command: PathBuf,
    pub(super) args: Vec<String>,
    pub(super) env: Vec<(String, String)>,
    pub(super) api_version: String,
    pub(super) install_hint: Option<String>,
    pub(super) cluster: Option<ClusterInfo>,
}

/// Runs the plugin once: a fresh credential, or an error naming the user, the command and what
/// went wrong.
pub(super) async fn run(spec: &PluginSpec) -> Result<Credential, Error> {
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
    let expires = status.expiration_timestamp.as_deref().map(|text| {
        crate::time::parse_rfc3339(text).ok_or_else(|| {
            let what = format!("returned expirationTimestamp {text:?}, which is not RFC 3339");
            failure(spec, &what)
        })
    });
    let expires = expires.transpose()?;
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
