//! Config: where the API server is and how to authenticate. Where it is loaded from, and in
//! which order, is [`super::load`]'s.
//!
//! The lease client's config is a copy made by [`Config::for_leader_election`]; a config holds
//! no connection, bucket or pool, so two clients built from two configs share nothing.

use http_types::Url;
use std::fmt;
use std::time::{Duration, Instant};

use super::Error;
pub use super::client_identity::ClientIdentity;
pub use super::exec::{Credential, ExecPlugin};
pub use super::impersonate::Impersonation;
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
    /// The user every request acts as (`Impersonate-*` headers), on top of `auth`.
    pub impersonate: Option<Impersonation>,
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

impl Config {
    /// A config for `server` with no credentials and default limits (tests, local servers).
    pub fn new(server: Url) -> Config {
        Config {
            server,
            tls: TlsOptions::default(),
            auth: Auth::None,
            impersonate: None,
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
        assert_eq!(lease.impersonate, None);
        let mut impersonating = base();
        impersonating.impersonate = Some(Impersonation {
            user: "jane".into(),
            ..Impersonation::default()
        });
        let lease = impersonating.for_leader_election(5.0, 10);
        assert_eq!(lease.impersonate, impersonating.impersonate);
    }

    #[test]
    fn tokens_never_appear_in_debug_output() {
        let text = format!("{:?}", base());
        assert!(!text.contains("secret"), "{text}");
    }
}
