//! Where the config comes from, in kubectl's order: `--kubeconfig`, else `$KUBECONFIG`, else
//! the pod's service account, else `~/.kube/config`. The top of the config layers: it picks a
//! loader ([`super::kubeconfig`] or [`super::incluster`]), and nothing below it knows the order.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::config::Config;
use super::config_error::ConfigError;
use super::impersonate::Overrides;
use super::incluster::{self, SERVICE_ACCOUNT_DIR};
use super::kubeconfig::{self, Source};

/// Where to look for a kubeconfig (the `--kubeconfig` and `--context` flags), and whom to
/// impersonate over what it says (`--as`, `--as-uid`, `--as-group`).
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub impersonate: Overrides,
}

impl LoadOptions {
    /// Loads from `--kubeconfig`, else `$KUBECONFIG`, else in-cluster, else `~/.kube/config`;
    /// the impersonation flags then apply, whichever it was (as kubectl's do).
    pub fn load(&self) -> Result<Config, ConfigError> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let mut config = load_with(self, &env, Path::new(SERVICE_ACCOUNT_DIR))?;
        config.impersonate = (self.impersonate)
            .apply(config.impersonate.take())
            .map_err(ConfigError::Invalid)?;
        if config.impersonate.is_some() && config.server.scheme() == "http" {
            return Err(ConfigError::Invalid(format!(
                "--as/--as-group/--as-uid with the plain http:// server {}: kubectl sends no impersonation over it, so skiff would not act as that user; use an https:// server",
                config.server
            )));
        }
        Ok(config)
    }
}

/// Reads and merges kubeconfig files like kubectl (the first file naming an entry wins).
pub fn load_kubeconfig_files(
    paths: &[PathBuf],
    context: Option<&str>,
) -> Result<Config, ConfigError> {
    kubeconfig::load_files(paths, context, Source::Given)
}

fn load_with(
    opts: &LoadOptions,
    env: &dyn Fn(&str) -> Option<String>,
    service_account_dir: &Path,
) -> Result<Config, ConfigError> {
    let context = opts.context.as_deref();
    if let Some(path) = &opts.kubeconfig {
        return kubeconfig::load_files(std::slice::from_ref(path), context, Source::Flag);
    }
    let mut tried = vec!["--kubeconfig (not given)".to_owned()];
    if let Some(list) = env("KUBECONFIG") {
        let paths: Vec<PathBuf> = std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        return kubeconfig::load_files(&paths, context, Source::Env);
    }
    tried.push("$KUBECONFIG (not set)".into());
    if let (Some(host), Some(port)) = (
        env("KUBERNETES_SERVICE_HOST"),
        env("KUBERNETES_SERVICE_PORT"),
    ) {
        return incluster::load(service_account_dir, Some(host), Some(port), Instant::now());
    }
    tried.push("in-cluster (KUBERNETES_SERVICE_HOST/_PORT not set)".into());
    if let Some(home) = env("HOME") {
        let path = Path::new(&home).join(".kube").join("config");
        if path.exists() {
            return kubeconfig::load_files(&[path], context, Source::Home);
        }
        tried.push(format!("{} (does not exist)", path.display()));
    } else {
        tried.push("~/.kube/config ($HOME not set)".into());
    }
    Err(ConfigError::NothingFound { tried })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_order_prefers_flag_then_env_then_in_cluster_then_home() {
        let nothing = load_with(
            &LoadOptions::default(),
            &|_| None,
            Path::new("/nonexistent"),
        );
        let tried = [
            "--kubeconfig (not given)",
            "$KUBECONFIG (not set)",
            "in-cluster (KUBERNETES_SERVICE_HOST/_PORT not set)",
            "~/.kube/config ($HOME not set)",
        ];
        match nothing {
            Err(ConfigError::NothingFound { tried: all }) => assert_eq!(all, tried),
            other => panic!("expected NothingFound, got {other:?}"),
        }

        // ~/.kube/config is read when nothing before it applies.
        let home = super::super::test_dir::temp_dir("load-order");
        std::fs::create_dir_all(home.join(".kube")).expect("create ~/.kube");
        std::fs::write(home.join(".kube/config"), HOME_KUBECONFIG).expect("write ~/.kube/config");
        let home_text = home.display().to_string();
        let env = |vars: &'static [(&'static str, &'static str)]| {
            let home = home_text.clone();
            move |name: &str| match name {
                "HOME" => Some(home.clone()),
                _ => vars
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned()),
            }
        };
        let from_home = load_with(&LoadOptions::default(), &env(&[]), Path::new("/x"));
        assert_eq!(
            from_home.map(|c| c.server.to_string()),
            Ok("https://home.example:6443/".to_owned())
        );

        // In-cluster comes before ~/.kube/config (here it fails: no service-account files).
        const IN_CLUSTER: &[(&str, &str)] = &[
            ("KUBERNETES_SERVICE_HOST", "10.0.0.1"),
            ("KUBERNETES_SERVICE_PORT", "443"),
        ];
        let err = load_with(
            &LoadOptions::default(),
            &env(IN_CLUSTER),
            Path::new("/nonexistent"),
        );
        assert!(
            matches!(err, Err(ConfigError::NotInCluster { .. })),
            "{err:?}"
        );

        // $KUBECONFIG comes before in-cluster, and --kubeconfig before $KUBECONFIG.
        const BOTH: &[(&str, &str)] = &[
            ("KUBECONFIG", "/nonexistent/kc"),
            ("KUBERNETES_SERVICE_HOST", "10.0.0.1"),
            ("KUBERNETES_SERVICE_PORT", "443"),
        ];
        let err = load_with(&LoadOptions::default(), &env(BOTH), Path::new("/x"));
        assert!(
            matches!(&err, Err(ConfigError::MissingFile { source, .. }) if source == "$KUBECONFIG"),
            "{err:?}"
        );
        let opts = LoadOptions {
            kubeconfig: Some("/nonexistent/flag".into()),
            ..LoadOptions::default()
        };
        let err = load_with(&opts, &env(BOTH), Path::new("/x"));
        assert!(
            matches!(&err, Err(ConfigError::MissingFile { source, .. }) if source == "--kubeconfig"),
            "{err:?}"
        );
    }

    const HOME_KUBECONFIG: &str = "apiVersion: v1
kind: Config
clusters:
- name: home
  cluster:
    server: https://home.example:6443
users:
- name: home
  user:
    token: t
contexts:
- name: home
  context:
    cluster: home
    user: home
current-context: home
";
}
