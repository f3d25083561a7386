//! Config: where the API server is and how to authenticate, and the order it is loaded in.
//!
//! The lease client's config is a copy made by [`Config::for_leader_election`]; a config holds
//! no connection, bucket or pool, so two clients built from two configs share nothing.

use http_types::Url;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::Error;
pub use super::exec::{Credential, ExecPlugin};
pub use super::incluster::SERVICE_ACCOUNT_DIR;
use super::kubeconfig::Source;
pub use super::proxy::ProxyConfig;
pub use super::tokenfile::TokenFile;

/// Main client QPS: the kubebuilder `--kube-api-qps` default (client-go's own is 5).
pub const DEFAULT_QPS: f32 = 20.0;
/// Main client burst: the kubebuilder `--kube-api-burst` default (client-go's own is 10).
pub const DEFAULT_BURST: u32 = 30;
/// Per-request timeout (for a watch: until the response head arrives).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// TCP (+TLS) connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a watch may hear nothing (no event, no bookmark, no end) before its connection is
/// given up and the watch resumed on a new one: the longest server-side watch timeout the
/// watcher asks for (45 s + 20 % jitter: 54 s) + 16 s. A live server ends every watch before
/// this.
pub const DEFAULT_WATCH_IDLE_TIMEOUT: Duration = Duration::from_secs(70);
/// How often the main client retries a 429 (client-go retries up to 10; skiff keeps it short).
pub const DEFAULT_RETRIES_ON_429: u32 = 3;

/// Everything a [`Client`](super::Client) needs to reach and authenticate to the API server.
#[derive(Debug, Clone)]
pub struct Config {
    pub server: Url,
    pub tls: TlsOptions,
    pub auth: Auth,
    /// The kubeconfig's `proxy-url`, else the environment's proxy settings.
    pub proxy: ProxyConfig,
    /// The in-cluster namespace, or the kubeconfig context's namespace.
    pub namespace: Option<String>,
    pub qps: f32,
    pub burst: u32,
    pub user_agent: String,
    /// The `client` metric label: `main` or `leader-election`.
    pub name: String,
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    pub retries_on_429: u32,
    /// See [`DEFAULT_WATCH_IDLE_TIMEOUT`].
    pub watch_idle_timeout: Duration,
    /// Send a GET or PUT again on a new connection when it has no reply after this long
    /// (the lease client's requests, see [`super::hedge`]); `None` never hedges.
    pub hedge_after: Option<Duration>,
}

#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// PEM CA bundle; when set, only it is trusted (not the system roots).
    pub ca_pem: Option<Vec<u8>>,
    pub insecure_skip_verify: bool,
    /// Name for SNI and certificate verification instead of the URL host.
    pub server_name: Option<String>,
    pub identity: Option<ClientIdentity>,
}

/// A client certificate; the key is converted to PKCS#8 when the config is loaded.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    pub cert_pem: Vec<u8>,
    pub key_pkcs8_pem: Vec<u8>,
}

impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientIdentity { .. }")
    }
}

#[derive(Clone)]
pub enum Auth {
    None,
    Token(String),
    TokenFile(TokenFile),
    /// A credential plugin; each clone of the config caches its credential on its own.
    Exec(ExecPlugin),
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::None => f.write_str("None"),
            Auth::Token(_) => f.write_str("Token(<redacted>)"),
            Auth::TokenFile(t) => write!(f, "TokenFile({})", t.path().display()),
            Auth::Exec(plugin) => write!(f, "{plugin:?}"),
        }
    }
}

impl Auth {
    /// What to present on the next request; only a plugin may take time (and fail).
    pub async fn credential(&self) -> Result<Credential, Error> {
        match self {
            Auth::None => Ok(Credential::default()),
            Auth::Token(token) => Ok(Credential::token(token.clone())),
            Auth::TokenFile(file) => Ok(Credential::token(file.token_at(Instant::now()))),
            Auth::Exec(plugin) => plugin.current().await,
        }
    }

    /// After a 401 to `used`: whether asking again may give a different credential (a plugin
    /// run), having forgotten `used`. client-go's exec authenticator does the same.
    pub async fn retire(&self, used: &Credential) -> bool {
        match self {
            Auth::Exec(plugin) => {
                plugin.retire(used.generation).await;
                true
            }
            _ => false,
        }
    }
}

/// Where to look for a kubeconfig (the `--kubeconfig` and `--context` flags).
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

impl Config {
    /// A config for `server` with no credentials and default limits (tests, local servers).
    pub fn new(server: Url) -> Config {
        Config {
            server,
            tls: TlsOptions::default(),
            auth: Auth::None,
            proxy: ProxyConfig::default(),
            namespace: None,
            qps: DEFAULT_QPS,
            burst: DEFAULT_BURST,
            user_agent: format!("skiff/{}", env!("CARGO_PKG_VERSION")),
            name: "main".into(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            retries_on_429: DEFAULT_RETRIES_ON_429,
            watch_idle_timeout: DEFAULT_WATCH_IDLE_TIMEOUT,
            hedge_after: None,
        }
    }

    /// Loads from `--kubeconfig`, else `$KUBECONFIG`, else in-cluster, else `~/.kube/config`.
    pub fn load(opts: &LoadOptions) -> Result<Config, ConfigError> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        load_with(opts, &env, Path::new(SERVICE_ACCOUNT_DIR))
    }

    /// Reads and merges kubeconfig files like kubectl (the first file naming an entry wins).
    pub fn from_kubeconfig_files(
        paths: &[PathBuf],
        context: Option<&str>,
    ) -> Result<Config, ConfigError> {
        super::kubeconfig::load_files(paths, context, Source::Given)
    }

    /// The lease client's config: a copy with its own rate limits and name; `self` is untouched.
    pub fn for_leader_election(&self, qps: f32, burst: u32) -> Config {
        Config {
            qps,
            burst,
            user_agent: "skiff/leader-election".into(),
            name: "leader-election".into(),
            retries_on_429: 0,
            ..self.clone()
        }
    }
}

fn load_with(
    opts: &LoadOptions,
    env: &dyn Fn(&str) -> Option<String>,
    service_account_dir: &Path,
) -> Result<Config, ConfigError> {
    let context = opts.context.as_deref();
    if let Some(path) = &opts.kubeconfig {
        return super::kubeconfig::load_files(std::slice::from_ref(path), context, Source::Flag);
    }
    let mut tried = vec!["--kubeconfig (not given)".to_owned()];
    if let Some(list) = env("KUBECONFIG") {
        let paths: Vec<PathBuf> = std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        return super::kubeconfig::load_files(&paths, context, Source::Env);
    }
    tried.push("$KUBECONFIG (not set)".into());
    if let (Some(host), Some(port)) = (
        env("KUBERNETES_SERVICE_HOST"),
        env("KUBERNETES_SERVICE_PORT"),
    ) {
        return super::incluster::load(service_account_dir, Some(host), Some(port), Instant::now());
    }
    tried.push("in-cluster (KUBERNETES_SERVICE_HOST/_PORT not set)".into());
    if let Some(home) = env("HOME") {
        let path = Path::new(&home).join(".kube").join("config");
        if path.exists() {
            return super::kubeconfig::load_files(&[path], context, Source::Home);
        }
        tried.push(format!("{} (does not exist)", path.display()));
    } else {
        tried.push("~/.kube/config ($HOME not set)".into());
    }
    Err(ConfigError::NothingFound { tried })
}

/// Why a config could not be loaded; each message names the problem and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A kubeconfig that a flag or env var pointed to does not exist.
    MissingFile {
        path: PathBuf,
        source: String,
    },
    Unreadable {
        what: String,
        path: PathBuf,
        error: String,
    },
    Yaml {
        path: PathBuf,
        error: String,
    },
    UnknownContext {
        name: String,
        known: Vec<String>,
    },
    NoContext {
        sources: String,
    },
    MissingCluster {
        context: String,
        cluster: String,
    },
    MissingUser {
        context: String,
        user: String,
    },
    UnsupportedAuth {
        user: String,
        kind: String,
    },
    NotInCluster {
        missing: String,
    },
    NothingFound {
        tried: Vec<String>,
    },
    /// Any other bad value; the message says which and what to do.
    Invalid(String),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::MissingFile { path, source } => write!(
                f,
                "kubeconfig {} (from {source}) does not exist; fix the path given by {source}",
                path.display()
            ),
            ConfigError::Unreadable { what, path, error } => {
                write!(f, "cannot read {what} {}: {error}", path.display())
            }
            ConfigError::Yaml { path, error } => write!(
                f,
                "kubeconfig {} is not valid YAML: {error}; fix the file or point --kubeconfig elsewhere",
                path.display()
            ),
            ConfigError::UnknownContext { name, known } => write!(
                f,
                "context {name:?} is not in the kubeconfig; it has: {}; pick one with --context",
                if known.is_empty() {
                    "no contexts".to_owned()
                } else {
                    known.join(", ")
                }
            ),
            ConfigError::NoContext { sources } => write!(
                f,
                "{sources} sets no current-context; pass --context or run `kubectl config use-context`"
            ),
            ConfigError::MissingCluster { context, cluster } => write!(
                f,
                "context {context:?} names cluster {cluster:?}, which the kubeconfig does not define; add it or fix the context"
            ),
            ConfigError::MissingUser { context, user } => write!(
                f,
                "context {context:?} names user {user:?}, which the kubeconfig does not define; add it or fix the context"
            ),
            ConfigError::UnsupportedAuth { user, kind } => write!(
                f,
                "user {user:?} authenticates with {kind}, which skiff does not support yet; use a token, tokenFile, client certificate or exec credential plugin instead"
            ),
            ConfigError::NotInCluster { missing } => write!(
                f,
                "not running in a cluster: {missing}; pass --kubeconfig outside a pod"
            ),
            ConfigError::NothingFound { tried } => write!(
                f,
                "no Kubernetes config found; tried {}; pass --kubeconfig or set $KUBECONFIG",
                tried.join(", ")
            ),
            ConfigError::Invalid(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Config {
        let mut c = Config::new(Url::parse("https://10.0.0.1:6443").unwrap());
        c.auth = Auth::Token("secret".into());
        c
    }

    #[test]
    fn for_leader_election_leaves_the_base_untouched() {
        let main = base();
        let lease = main.for_leader_election(5.0, 10);
        assert_eq!((lease.qps, lease.burst), (5.0, 10));
        assert_eq!(lease.name, "leader-election");
        assert_eq!(lease.user_agent, "skiff/leader-election");
        assert_eq!(lease.retries_on_429, 0);
        assert_eq!(lease.server, main.server);
        assert_eq!((main.qps, main.burst), (DEFAULT_QPS, DEFAULT_BURST));
        assert_eq!(main.name, "main");
        assert!(main.user_agent.starts_with("skiff/0"));
        assert_eq!(main.retries_on_429, DEFAULT_RETRIES_ON_429);
    }

    #[test]
    fn tokens_never_appear_in_debug_output() {
        let text = format!("{:?}", base());
        assert!(!text.contains("secret"), "{text}");
    }

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
            context: None,
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
