//! kubeconfig credentials: the cluster CA and the user's token or client certificate.
//!
//! Client keys come as PKCS#8, PKCS#1 RSA (kind, minikube) or SEC1 EC PEM; native-tls only takes
//! PKCS#8, so every key is converted here, when the config is loaded.

use super::client_identity::{ClientIdentity, to_pkcs8};
use super::config::{Auth, Config, TlsOptions, TokenFile};
use super::config_error::ConfigError;
use super::exec::{ClusterInfo, ExecPlugin};
use super::impersonate::Impersonation;
use super::kubeconfig_file::{AuthProvider, ClusterEntry, Located, UserEntry};
use super::proxy::{ProxyConfig, parse_proxy_url};
use base64::Engine;
use std::path::Path;

pub(super) fn cluster_tls(cluster: &Located<ClusterEntry>) -> Result<TlsOptions, ConfigError> {
    let entry = &cluster.entry;
    let what = format!("certificate-authority of cluster {:?}", cluster.name);
    let ca_pem = pem_from(
        &what,
        entry.certificate_authority_data.as_deref(),
        entry.certificate_authority.as_deref(),
        &cluster.dir,
    )?;
    if let Some(pem) = &ca_pem {
        openssl::x509::X509::stack_from_pem(pem)
            .ok()
            .filter(|certs| !certs.is_empty())
            .ok_or_else(|| {
                ConfigError::Invalid(format!("{what} holds no PEM certificate; fix the CA data"))
            })?;
    }
    Ok(TlsOptions {
        ca_pem,
        insecure_skip_verify: entry.insecure_skip_tls_verify.unwrap_or(false),
        server_name: entry.tls_server_name.clone().filter(|s| !s.is_empty()),
        identity: None,
    })
}

/// The cluster's `proxy-url`, checked now so a bad one fails at start, naming the cluster.
pub(super) fn cluster_proxy(cluster: &Located<ClusterEntry>) -> Result<ProxyConfig, ConfigError> {
    let Some(url) = cluster.entry.proxy_url.as_deref().filter(|u| !u.is_empty()) else {
        return Ok(ProxyConfig::FromEnvironment);
    };
    let what = format!("proxy-url of cluster {:?}", cluster.name);
    parse_proxy_url(url, &what).map_err(ConfigError::Invalid)?;
    Ok(ProxyConfig::Url(url.to_owned()))
}

/// The user's credentials; an exec plugin may be told about `cluster` (`provideClusterInfo`).
pub(super) fn user_auth(
    user: &Located<UserEntry>,
    cluster: &Located<ClusterEntry>,
    config: &Config,
) -> Result<Auth, ConfigError> {
    let entry = &user.entry;
    let unsupported = |(kind, fix): (String, &str)| {
        ConfigError::Invalid(format!(
            "user {:?} authenticates with {kind}; {fix}",
            user.name
        ))
    };
    if let Some(exec) = &entry.exec {
        let info = ClusterInfo {
            server: config.server.to_string(),
            ca_pem: config.tls.ca_pem.clone(),
            insecure_skip_tls_verify: config.tls.insecure_skip_verify,
            tls_server_name: config.tls.server_name.clone(),
            proxy_url: cluster.entry.proxy_url.clone().filter(|u| !u.is_empty()),
        };
        return Ok(Auth::Exec(ExecPlugin::new(
            &user.name, exec, &user.dir, info,
        )?));
    }
    if let Some(provider) = &entry.auth_provider {
        return Err(unsupported(provider_refusal(provider)));
    }
    // With both, client-go sends the file's token (re-read as it changes), as skiff does.
    if let Some(file) = entry.token_file.as_deref().filter(|t| !t.is_empty()) {
        return Ok(Auth::TokenFile(TokenFile::load(&user.dir.join(file))?));
    }
    if let Some(token) = entry.token.as_deref().filter(|t| !t.is_empty()) {
        return Ok(Auth::Token(token.to_owned()));
    }
    let has_cert = entry.client_certificate.is_some() || entry.client_certificate_data.is_some();
    if entry.username.is_some() && !has_cert {
        return Err(unsupported((
            "basic auth (username/password), which API servers refuse since Kubernetes 1.19".into(),
            OTHER_AUTH,
        )));
    }
    Ok(Auth::None)
}

/// Whom the user's requests act as (`as`, `as-uid`, `as-groups`, `as-user-extra`).
pub(super) fn user_impersonation(
    user: &Located<UserEntry>,
) -> Result<Option<Impersonation>, ConfigError> {
    let entry = &user.entry;
    Impersonation::from_fields(
        &format!("user {:?}", user.name),
        entry.act_as.clone(),
        entry.act_as_uid.clone(),
        entry.act_as_groups.clone().unwrap_or_default(),
        entry.act_as_user_extra.clone().unwrap_or_default(),
    )
    .map_err(ConfigError::Invalid)
}

const OTHER_AUTH: &str =
    "use a token, tokenFile, client certificate or exec credential plugin instead";

/// Why skiff refuses an auth-provider, and what to use instead.
fn provider_refusal(provider: &AuthProvider) -> (String, &'static str) {
    match provider.name.as_deref().unwrap_or_default() {
        "gcp" => (
            "the gcp auth-provider, which client-go removed in 1.26".into(),
            "install gke-gcloud-auth-plugin and run `gcloud container clusters get-credentials` again, which writes its exec credential plugin",
        ),
        "azure" => (
            "the azure auth-provider, which client-go removed in 1.26".into(),
            "run `kubelogin convert-kubeconfig`, which writes the kubelogin exec credential plugin",
        ),
        "oidc" => (
            "the oidc auth-provider, which client-go deprecated for exec plugins".into(),
            "use an exec credential plugin such as kubelogin (`kubectl oidc-login get-token`) instead",
        ),
        name => (format!("the auth-provider {name:?}"), OTHER_AUTH),
    }
}

pub(super) fn user_identity(
    user: &Located<UserEntry>,
) -> Result<Option<ClientIdentity>, ConfigError> {
    let entry = &user.entry;
    let cert_what = format!("client-certificate of user {:?}", user.name);
    let key_what = format!("client-key of user {:?}", user.name);
    let pem = |what: &str, data: &Option<String>, file: &Option<String>| {
        pem_from(what, data.as_deref(), file.as_deref(), &user.dir)
    };
    let cert = pem(
        &cert_what,
        &entry.client_certificate_data,
        &entry.client_certificate,
    )?;
    let key = pem(&key_what, &entry.client_key_data, &entry.client_key)?;
    match (cert, key) {
        (None, None) => Ok(None),
        (Some(cert_pem), Some(key)) => {
            if openssl::x509::X509::from_pem(&cert_pem).is_err() {
                return Err(ConfigError::Invalid(format!(
                    "{cert_what} is not a PEM certificate; fix the certificate data"
                )));
            }
            Ok(Some(ClientIdentity {
                cert_pem,
                key_pkcs8_pem: to_pkcs8(&key, &key_what)?,
            }))
        }
        _ => Err(ConfigError::Invalid(format!(
            "user {:?} has a client certificate or key but not both; set client-certificate and client-key together",
            user.name
        ))),
    }
}

/// A PEM as kubeconfig names one: inline as base64 (`<field>-data`) or as a `file` path
/// (`<field>`); the inline one wins when both are set, as in client-go.
fn pem_from(
    what: &str,
    data: Option<&str>,
    file: Option<&str>,
    dir: &Path,
) -> Result<Option<Vec<u8>>, ConfigError> {
    if let Some(data) = data.filter(|d| !d.is_empty()) {
        // Go's base64 decoding skips line breaks, not spaces (a folded `>` scalar is refused).
        let compact: String = data.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(compact)
            .map_err(|e| {
                ConfigError::Invalid(format!(
                    "{what} data is not valid base64 ({e}); encode the PEM with `base64 -w0`"
                ))
            })?;
        return Ok(Some(bytes));
    }
    let Some(file) = file.filter(|f| !f.is_empty()) else {
        return Ok(None);
    };
    let path = dir.join(file);
    std::fs::read(&path)
        .map(Some)
        .map_err(|e| ConfigError::unreadable(what, &path, &e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::config::Config;
    use crate::kube::load_kubeconfig_files;
    use crate::kube::test_cert::self_signed;
    use crate::kube::test_dir::temp_dir;
    use crate::testing::assert_mentions;
    use openssl::ec::{EcGroup, EcKey};
    use openssl::nid::Nid;
    use openssl::pkey::{PKey, Private};
    use openssl::rsa::Rsa;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Writes a kubeconfig whose user has the given cert (inline) and key (as a relative file).
    fn config_with_key(tag: &str, cert: &[u8], key_pem: &[u8]) -> Result<Config, ConfigError> {
        let dir = temp_dir(tag);
        std::fs::create_dir_all(dir.join("pki")).unwrap();
        std::fs::write(dir.join("pki/client.key"), key_pem).unwrap();
        let text = format!(
            "current-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:6443\n    certificate-authority-data: {ca}\nusers:\n- name: u\n  user:\n    client-certificate-data: {cert}\n    client-key: pki/client.key\ncontexts:\n- name: c\n  context: {{cluster: k, user: u}}\n",
            ca = b64(cert),
            cert = b64(cert),
        );
        let path = dir.join("config");
        std::fs::write(&path, text).unwrap();
        load_kubeconfig_files(&[path], None)
    }

    /// Loads a kubeconfig whose client key is `key_pem` (a PEM of `key`) and checks that the
    /// identity carries it as PKCS#8.
    fn assert_loads_as_pkcs8(tag: &str, key: &PKey<Private>, key_pem: &[u8]) {
        let config = config_with_key(tag, &self_signed(key), key_pem).unwrap();
        let identity = config.tls.identity.expect("client identity");
        let pem = String::from_utf8(identity.key_pkcs8_pem.clone()).unwrap();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"), "{pem}");
        let back = PKey::private_key_from_pem(&identity.key_pkcs8_pem).unwrap();
        assert!(back.public_eq(key));
        assert!(config.tls.ca_pem.is_some());
    }

    #[test]
    fn rsa_pkcs1_key_is_converted_to_pkcs8() {
        let rsa = Rsa::generate(2048).unwrap();
        let pkcs1 = rsa.private_key_to_pem().unwrap();
        assert!(String::from_utf8_lossy(&pkcs1).contains("BEGIN RSA PRIVATE KEY"));
        assert_loads_as_pkcs8("creds-rsa", &PKey::from_rsa(rsa).unwrap(), &pkcs1);
    }

    #[test]
    fn ec_sec1_key_is_converted_to_pkcs8() {
        let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
        let ec = EcKey::generate(&group).unwrap();
        let sec1 = ec.private_key_to_pem().unwrap();
        assert!(String::from_utf8_lossy(&sec1).contains("BEGIN EC PRIVATE KEY"));
        assert_loads_as_pkcs8("creds-ec", &PKey::from_ec_key(ec).unwrap(), &sec1);
    }

    #[test]
    fn pkcs8_key_is_kept_as_pkcs8() {
        let key = PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap();
        let pkcs8 = key.private_key_to_pem_pkcs8().unwrap();
        assert_loads_as_pkcs8("creds-pkcs8", &key, &pkcs8);
    }

    #[test]
    fn garbage_key_and_bad_base64_are_named() {
        let key = PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap();
        let err = config_with_key("creds-garbage", &self_signed(&key), b"not a key").unwrap_err();
        assert!(
            err.to_string().contains("client-key of user \"u\""),
            "{err}"
        );
        let inline = Some("@@not base64@@");
        let err = pem_from("certificate-authority", inline, None, Path::new(".")).unwrap_err();
        assert!(err.to_string().contains("base64"), "{err}");
    }

    /// Loads a kubeconfig whose token user `u` also has `user_lines` (indented under `user:`).
    fn load_user(tag: &str, user_lines: &str) -> Result<Config, ConfigError> {
        let dir = temp_dir(tag);
        let text = format!(
            "current-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:6443\nusers:\n- name: u\n  user:\n    token: t0ken\n{user_lines}\ncontexts:\n- name: c\n  context: {{cluster: k, user: u}}\n"
        );
        let path = dir.join("config");
        std::fs::write(&path, text).unwrap();
        load_kubeconfig_files(&[path], None)
    }

    #[test]
    fn impersonation_fields_are_read_and_a_group_without_a_user_is_refused() {
        let lines = "    as: jane\n    as-uid: \"1234\"\n    as-groups: [devs, ops]\n    as-user-extra:\n      example.com/scopes: [view]";
        let config = load_user("creds-as", lines).unwrap();
        let impersonate = config.impersonate.expect("impersonation");
        assert_eq!(impersonate.user, "jane");
        assert_eq!(impersonate.uid.as_deref(), Some("1234"));
        assert_eq!(impersonate.groups, ["devs", "ops"]);
        assert_eq!(impersonate.extra["example.com/scopes"], ["view"]);
        assert!(matches!(&config.auth, Auth::Token(t) if t == "t0ken"));

        let err = load_user("creds-as-groups", "    as-groups: [secret-group]").unwrap_err();
        assert_mentions(
            &err.to_string(),
            &["user \"u\"", "`as-groups`", "without `as`"],
        );
        assert!(!err.to_string().contains("secret"), "{err}");
        let empty = "    as: \"\"\n    as-groups: []\n    as-user-extra: {}";
        assert_eq!(
            load_user("creds-as-empty", empty).unwrap().impersonate,
            None
        );
    }
}
