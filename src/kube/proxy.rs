//! Which proxy, if any, carries the connections to the API server: an HTTP proxy (CONNECT,
//! [`super::tunnel`]) or a SOCKS5 one ([`super::socks`]).
//!
//! Why these rules: they are client-go's, so a kubeconfig and environment that work for kubectl
//! work for skiff. The cluster's `proxy-url` wins and the environment is then ignored; else
//! `HTTPS_PROXY` (`HTTP_PROXY` for an http:// server) applies unless `NO_PROXY` exempts the
//! server, as Go's `golang.org/x/net/http/httpproxy` decides: hosts, domain suffixes, IPs,
//! CIDRs, optional ports, `*`; `localhost` and loopback IPs never go through the proxy.
//! `https://` proxies, which client-go also takes, are refused: see [`parse_proxy_url`].

use http_types::Url;
use std::net::IpAddr;

/// Where a config's proxy comes from.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum ProxyConfig {
    /// `HTTPS_PROXY`/`HTTP_PROXY` and `NO_PROXY` (client-go's default, in-cluster too).
    #[default]
    FromEnvironment,
    /// The kubeconfig cluster's `proxy-url`; the environment is not consulted.
    Url(String),
}

impl std::fmt::Debug for ProxyConfig {
    /// Without the password a proxy URL may carry.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProxyConfig::FromEnvironment => f.write_str("FromEnvironment"),
            ProxyConfig::Url(text) => write!(f, "Url({})", without_password(text)),
        }
    }
}

/// A proxy URL with its password, if any, replaced by `redacted`.
fn without_password(text: &str) -> String {
    match Url::parse(text) {
        Ok(mut url) if url.password().is_some() => {
            let _ = url.set_password(Some("redacted"));
            url.to_string()
        }
        _ => text.to_owned(),
    }
}

/// How a proxy is asked for a tunnel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyScheme {
    /// HTTP CONNECT.
    Http,
    /// SOCKS5 (RFC 1928), with username/password authentication (RFC 1929) when given.
    Socks5,
}

/// A proxy that tunnels connections to the API server.
#[derive(Clone, PartialEq, Eq)]
pub struct Proxy {
    pub scheme: ProxyScheme,
    pub host: String,
    pub port: u16,
    /// The proxy URL's user and password, percent-decoded.
    pub credentials: Option<(String, String)>,
}

impl Proxy {
    /// `Basic …` for an HTTP proxy's `Proxy-Authorization`, from the URL's credentials.
    pub fn basic_authorization(&self) -> Option<String> {
        use base64::Engine;
        let (user, password) = self.credentials.as_ref()?;
        let pair = format!("{user}:{password}");
        let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
        Some(format!("Basic {encoded}"))
    }
}

impl std::fmt::Debug for Proxy {
    /// Without the credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = match self.scheme {
            ProxyScheme::Http => "http",
            ProxyScheme::Socks5 => "socks5",
        };
        write!(f, "{scheme}://{}:{}", self.host, self.port)
    }
}

/// The proxy for connections to `server`; `env` reads a variable (empty counts as unset).
pub fn resolve(
    config: &ProxyConfig,
    server: &Url,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Proxy>, String> {
    let from_env = |names: [&str; 2]| names.iter().find_map(|name| env(name));
    let (text, what) = match config {
        ProxyConfig::Url(url) => return parse_proxy_url(url, "the cluster's proxy-url").map(Some),
        ProxyConfig::FromEnvironment => match server.scheme() {
            "https" => (from_env(["HTTPS_PROXY", "https_proxy"]), "HTTPS_PROXY"),
            // As Go: under CGI, HTTP_PROXY may come from a request header and is not trusted.
            "http" if env("REQUEST_METHOD").is_none() => {
                (from_env(["HTTP_PROXY", "http_proxy"]), "HTTP_PROXY")
            }
            _ => (None, ""),
        },
    };
    let Some(text) = text else {
        return Ok(None);
    };
    let host = server.host_str().unwrap_or_default();
    let port = server.port_or_known_default().unwrap_or_default();
    let no_proxy = NoProxy::parse(&from_env(["NO_PROXY", "no_proxy"]).unwrap_or_default());
    if !no_proxy.use_proxy(host, port) {
        return Ok(None);
    }
    parse_proxy_url(&text, what).map(Some)
}

/// Parses a proxy URL as Go does: without a scheme it is `http://`. `http://` and
/// `socks5://` are supported, as kubectl's kubeconfig validation allows; `https://` is refused:
/// it would run TLS to the proxy and the API server's TLS inside it, verifying the proxy
/// against the system roots, for a setup a local http:// or socks5:// forwarder serves as well.
pub fn parse_proxy_url(text: &str, what: &str) -> Result<Proxy, String> {
    let text = text.trim();
    let url = match Url::parse(text) {
        Ok(url) if url.has_host() => url,
        _ => Url::parse(&format!("http://{text}")).map_err(|e| {
            format!("{what} {text:?} is not a proxy URL ({e}); use http://host:port")
        })?,
    };
    // The URL with its password hidden, for messages.
    let shown = without_password(text);
    let (scheme, default_port) = match url.scheme() {
        "http" => (ProxyScheme::Http, 80),
        "socks5" => (ProxyScheme::Socks5, 1080),
        "https" => {
            return Err(format!(
                "{what} {shown} is an https:// proxy (TLS to the proxy), which skiff does not support; use an http:// (CONNECT) or socks5:// proxy, e.g. a local forwarder"
            ));
        }
        other => {
            return Err(format!(
                "{what} {shown} has scheme {other:?}; use http://host:port or socks5://host:port"
            ));
        }
    };
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| format!("{what} {shown} has no host; use http://host:port"))?;
    let credentials = (!url.username().is_empty()).then(|| {
        let user = percent_decode(url.username());
        (user, percent_decode(url.password().unwrap_or_default()))
    });
    let too_long = |(user, password): &(String, String)| user.len() > 255 || password.len() > 255;
    if scheme == ProxyScheme::Socks5 && credentials.as_ref().is_some_and(too_long) {
        return Err(format!(
            "{what} {shown} has a user or password longer than SOCKS5 allows (255 bytes); shorten it"
        ));
    }
    Ok(Proxy {
        scheme,
        host: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned(),
        port: url.port().unwrap_or(default_port),
        credentials,
    })
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A parsed `NO_PROXY` list.
#[derive(Debug, Default)]
struct NoProxy {
    all: bool,
    networks: Vec<(IpAddr, u8)>,
    ips: Vec<(IpAddr, Option<u16>)>,
    domains: Vec<DomainRule>,
}

/// `.example.com` (suffix only) or `example.com` (itself and its subdomains), maybe with a port.
#[derive(Debug)]
struct DomainRule {
    /// With a leading dot.
    suffix: String,
    port: Option<u16>,
    matches_itself: bool,
}

impl NoProxy {
    fn parse(list: &str) -> NoProxy {
        let mut rules = NoProxy::default();
        for entry in list.split(',') {
            let entry = entry.trim().to_ascii_lowercase();
            if entry.is_empty() {
                continue;
            }
            if entry == "*" {
                rules.all = true;
                return rules;
            }
            if let Some(network) = parse_cidr(&entry) {
                rules.networks.push(network);
                continue;
            }
            let (host, port) = split_host_port(&entry);
            if host.is_empty() {
                continue;
            }
            if let Ok(ip) = host.parse::<IpAddr>() {
                rules.ips.push((ip, port));
                continue;
            }
            let host = host.strip_prefix('*').unwrap_or(host);
            let (suffix, matches_itself) = match host.strip_prefix('.') {
                Some(_) => (host.to_owned(), false),
                None => (format!(".{host}"), true),
            };
            rules.domains.push(DomainRule {
                suffix,
                port,
                matches_itself,
            });
        }
        rules
    }

    /// Whether a connection to `host:port` goes through the proxy (Go's `useProxy`).
    fn use_proxy(&self, host: &str, port: u16) -> bool {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let ip = host.parse::<IpAddr>().ok();
        if host == "localhost" || ip.is_some_and(|ip| ip.is_loopback()) || self.all {
            return false;
        }
        let port_matches = |rule: Option<u16>| rule.is_none_or(|p| p == port);
        if let Some(ip) = ip {
            let exempt = self
                .networks
                .iter()
                .any(|&(net, bits)| in_network(ip, net, bits))
                || self
                    .ips
                    .iter()
                    .any(|&(rule, rule_port)| rule == ip && port_matches(rule_port));
            return !exempt;
        }
        !self.domains.iter().any(|rule| {
            let named =
                host.ends_with(&rule.suffix) || (rule.matches_itself && host == rule.suffix[1..]);
            named && port_matches(rule.port)
        })
    }
}

/// `10.0.0.0/8` or `fd00::/8` as (network, prefix length).
fn parse_cidr(entry: &str) -> Option<(IpAddr, u8)> {
    let (ip, bits) = entry.split_once('/')?;
    let ip: IpAddr = ip.parse().ok()?;
    let bits: u8 = bits.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (bits <= max).then_some((ip, bits))
}

fn in_network(ip: IpAddr, network: IpAddr, bits: u8) -> bool {
    let (ip, network, width) = match (ip, network) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u128::from(a.to_bits()), u128::from(b.to_bits()), 32),
        (IpAddr::V6(a), IpAddr::V6(b)) => (a.to_bits(), b.to_bits(), 128),
        _ => return false,
    };
    let shift = width - u32::from(bits);
    shift >= 128 || (ip >> shift) == (network >> shift)
}

/// `host:port`, `[v6]:port` or a bare host; a port that is not a number is no port.
fn split_host_port(entry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[')
        && let Some((host, after)) = rest.split_once(']')
    {
        return (host, after.strip_prefix(':').and_then(|p| p.parse().ok()));
    }
    match entry.split_once(':') {
        Some((host, port)) if !port.contains(':') => (host, port.parse().ok()),
        _ => (entry, None),
    }
}

#[cfg(test)]
mod tests;
