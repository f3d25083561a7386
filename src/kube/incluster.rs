//! In-cluster config: the pod's service-account token, CA and namespace, and the service env.

use super::config::{Auth, Config, TlsOptions, TokenFile};
use super::config_error::ConfigError;
use http_types::Url;
use std::net::Ipv6Addr;
use std::path::Path;
use std::time::Instant;

/// Where the kubelet mounts the service-account token, CA and namespace.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Builds the in-cluster config from `dir` and the `KUBERNETES_SERVICE_HOST` / `_PORT` values.
pub(crate) fn load(
    dir: &Path,
    host: Option<String>,
    port: Option<String>,
    now: Instant,
) -> Result<Config, ConfigError> {
    let host = non_empty(host).ok_or_else(|| ConfigError::NotInCluster {
        missing: "KUBERNETES_SERVICE_HOST is not set".into(),
    })?;
    let port = non_empty(port).ok_or_else(|| ConfigError::NotInCluster {
        missing: "KUBERNETES_SERVICE_PORT is not set".into(),
    })?;
    let server = server_url(&host, &port)?;
    let token =
        TokenFile::load_at(&dir.join("token"), now).map_err(|e| ConfigError::NotInCluster {
            missing: format!("{e} (is automountServiceAccountToken off?)"),
        })?;
    let ca_path = dir.join("ca.crt");
    let ca = std::fs::read(&ca_path)
        .map_err(|e| ConfigError::unreadable("service-account CA", &ca_path, &e))?;
    let namespace = std::fs::read_to_string(dir.join("namespace"))
        .ok()
        .map(|ns| ns.trim().to_owned())
        .filter(|ns| !ns.is_empty());
    let mut config = Config::new(server);
    config.tls = TlsOptions {
        ca_pem: Some(ca),
        ..TlsOptions::default()
    };
    config.auth = Auth::TokenFile(token);
    config.namespace = namespace;
    Ok(config)
}

fn non_empty(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

fn server_url(host: &str, port: &str) -> Result<Url, ConfigError> {
    let host = if host.parse::<Ipv6Addr>().is_ok() {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    let text = format!("https://{host}:{port}");
    Url::parse(&text).map_err(|e| {
        ConfigError::Invalid(format!(
            "KUBERNETES_SERVICE_HOST/_PORT make the server URL {text:?}, which is invalid ({e}); check the pod's environment"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::time::Duration;

    fn service_account_dir(tag: &str) -> PathBuf {
        let dir = crate::kube::test_dir::temp_dir(tag);
        std::fs::write(dir.join("token"), "token-one\n").unwrap();
        std::fs::write(dir.join("ca.crt"), "-----BEGIN CERTIFICATE-----\n").unwrap();
        std::fs::write(dir.join("namespace"), "skiff-system").unwrap();
        dir
    }

    #[test]
    fn ipv6_host_is_bracketed_and_files_are_read() {
        let dir = service_account_dir("incluster-v6");
        let t0 = Instant::now();
        let config = load(&dir, Some("fd00::1".into()), Some("443".into()), t0).unwrap();
        assert_eq!(config.server.as_str(), "https://[fd00::1]/");
        assert_eq!(config.namespace.as_deref(), Some("skiff-system"));
        assert!(config.tls.ca_pem.is_some());
        let config = load(&dir, Some("10.96.0.1".into()), Some("6443".into()), t0).unwrap();
        assert_eq!(config.server.as_str(), "https://10.96.0.1:6443/");
    }

    #[test]
    fn rotated_token_is_picked_up_after_a_minute_not_before() {
        let dir = service_account_dir("incluster-rotate");
        let t0 = Instant::now();
        let config = load(&dir, Some("10.0.0.1".into()), Some("443".into()), t0).unwrap();
        let Auth::TokenFile(file) = &config.auth else {
            panic!(
                "in-cluster auth must be a token file, got {:?}",
                config.auth
            );
        };
        std::fs::write(dir.join("token"), "token-two\n").unwrap();
        assert_eq!(file.token_at(t0 + Duration::from_secs(30)), "token-one");
        assert_eq!(file.token_at(t0 + Duration::from_secs(61)), "token-two");
    }

    #[test]
    fn missing_env_or_token_says_what_is_missing() {
        let dir = service_account_dir("incluster-missing");
        let err = load(&dir, None, Some("443".into()), Instant::now()).unwrap_err();
        assert!(err.to_string().contains("KUBERNETES_SERVICE_HOST"), "{err}");
        std::fs::remove_file(dir.join("token")).unwrap();
        let err = load(&dir, Some("h".into()), Some("443".into()), Instant::now()).unwrap_err();
        assert!(err.to_string().contains("token"), "{err}");
    }
}
