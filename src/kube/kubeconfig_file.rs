//! The kubeconfig file format: what serde reads from one file, and an entry located in the
//! directory its relative paths resolve against. Shared by the merger ([`super::kubeconfig`])
//! and the translation of entries into TLS, proxy and auth settings ([`super::credentials`]).

use super::exec::ExecEntry;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct KubeconfigFile {
    pub(super) clusters: Option<Vec<Named<ClusterEntry>>>,
    pub(super) users: Option<Vec<Named<UserEntry>>>,
    pub(super) contexts: Option<Vec<Named<ContextEntry>>>,
    #[serde(rename = "current-context")]
    pub(super) current_context: Option<String>,
}

/// `{name, cluster|user|context}`: the entry field's name varies, so accept all three.
#[derive(Debug, Deserialize)]
pub(super) struct Named<T> {
    pub(super) name: Option<String>,
    #[serde(alias = "cluster", alias = "user", alias = "context")]
    pub(super) entry: Option<T>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
pub(super) struct ClusterEntry {
    pub(super) server: Option<String>,
    pub(super) certificate_authority: Option<String>,
    pub(super) certificate_authority_data: Option<String>,
    pub(super) insecure_skip_tls_verify: Option<bool>,
    pub(super) tls_server_name: Option<String>,
    pub(super) proxy_url: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
pub(super) struct UserEntry {
    pub(super) token: Option<String>,
    #[serde(rename = "tokenFile")]
    pub(super) token_file: Option<String>,
    pub(super) client_certificate: Option<String>,
    pub(super) client_certificate_data: Option<String>,
    pub(super) client_key: Option<String>,
    pub(super) client_key_data: Option<String>,
    pub(super) exec: Option<ExecEntry>,
    pub(super) auth_provider: Option<AuthProvider>,
    pub(super) username: Option<String>,
    /// Impersonation (`as`, `as-uid`, `as-groups`, `as-user-extra`).
    #[serde(rename = "as")]
    pub(super) act_as: Option<String>,
    #[serde(rename = "as-uid")]
    pub(super) act_as_uid: Option<String>,
    #[serde(rename = "as-groups")]
    pub(super) act_as_groups: Option<Vec<String>>,
    #[serde(rename = "as-user-extra")]
    pub(super) act_as_user_extra: Option<BTreeMap<String, Vec<String>>>,
}

/// `auth-provider`: only its name is read, to say what to use instead (skiff refuses them).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub(super) struct AuthProvider {
    pub(super) name: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub(super) struct ContextEntry {
    pub(super) cluster: Option<String>,
    pub(super) user: Option<String>,
    pub(super) namespace: Option<String>,
}

/// An entry, the directory its relative paths resolve against, and where it was written.
#[derive(Debug, Clone)]
pub(super) struct Located<T> {
    pub(super) name: String,
    pub(super) entry: T,
    pub(super) dir: PathBuf,
    pub(super) file: PathBuf,
    pub(super) line: usize,
}

impl<T> Located<T> {
    /// Where it was written, to head an error about it.
    pub(super) fn place(&self) -> String {
        format!("kubeconfig {}, line {}", self.file.display(), self.line)
    }
}
