use super::*;

fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |name| {
        vars.iter()
            .find(|(k, v)| *k == name && !v.is_empty())
            .map(|(_, v)| (*v).to_owned())
    }
}

fn proxy_for(server: &str, vars: &[(&str, &str)]) -> Option<String> {
    let url = Url::parse(server).unwrap();
    resolve(&ProxyConfig::FromEnvironment, &url, &env(vars))
        .unwrap()
        .map(|p| format!("{p:?}"))
}

const PROXY: (&str, &str) = ("HTTPS_PROXY", "proxy.corp:3128");

#[test]
fn https_proxy_applies_to_https_servers_and_http_proxy_to_http_ones() {
    let via = Some("http://proxy.corp:3128".to_owned());
    assert_eq!(proxy_for("https://api.example:6443", &[PROXY]), via);
    assert_eq!(proxy_for("http://api.example:8080", &[PROXY]), None);
    let http = [("http_proxy", "http://web.corp:8080")];
    assert_eq!(
        proxy_for("http://api.example:8080", &http),
        Some("http://web.corp:8080".into())
    );
    let cgi = [
        ("http_proxy", "http://web.corp:8080"),
        ("REQUEST_METHOD", "GET"),
    ];
    assert_eq!(proxy_for("http://api.example:8080", &cgi), None);
    let lower = [("https_proxy", "http://lower:1")];
    assert_eq!(
        proxy_for("https://api.example", &lower),
        Some("http://lower:1".into())
    );
}

#[test]
fn loopback_and_localhost_are_never_proxied_from_the_environment() {
    for server in [
        "https://127.0.0.1:6443",
        "https://127.9.9.9",
        "https://[::1]:6443",
        "https://localhost:6443",
    ] {
        assert_eq!(proxy_for(server, &[PROXY]), None, "{server}");
    }
}

#[test]
fn no_proxy_matches_hosts_suffixes_ips_cidrs_ports_and_star() {
    let rules = NoProxy::parse(
        " Example.com, .internal, *.corp.net, 10.0.0.0/8, 192.168.1.7, 172.16.0.1:6443, api.other:443, fd00::/8, [2001:db8::1]:6443",
    );
    let route = |host: &str, port| {
        if rules.use_proxy(host, port) {
            "proxied"
        } else {
            "direct"
        }
    };
    for (host, port, want) in [
        ("example.com", 443, "direct"),
        ("api.example.com", 443, "direct"),
        ("x.internal", 6443, "direct"),
        ("a.b.corp.net", 1, "direct"),
        ("10.1.2.3", 6443, "direct"),
        ("192.168.1.7", 1, "direct"),
        ("172.16.0.1", 6443, "direct"),
        ("api.other", 443, "direct"),
        ("fd12::1", 443, "direct"),
        ("[2001:db8::1]", 6443, "direct"),
        ("notexample.com", 443, "proxied"),
        ("internal", 443, "proxied"),
        ("corp.net", 443, "proxied"),
        ("11.0.0.1", 443, "proxied"),
        ("192.168.1.8", 443, "proxied"),
        ("172.16.0.1", 443, "proxied"),
        ("api.other", 6443, "proxied"),
        ("2001:db8::1", 443, "proxied"),
    ] {
        assert_eq!(route(host, port), want, "{host}:{port}");
    }
    assert!(!NoProxy::parse("a.com, *").use_proxy("anything.example", 443));
    let star = [PROXY, ("NO_PROXY", "*")];
    assert_eq!(proxy_for("https://api.example", &star), None);
    let cidr = [PROXY, ("no_proxy", "10.96.0.0/12")];
    assert_eq!(proxy_for("https://10.96.0.1:443", &cidr), None);
}

#[test]
fn proxy_url_wins_over_the_environment_and_carries_credentials() {
    let url = Url::parse("https://127.0.0.1:6443").unwrap();
    let config = ProxyConfig::Url("http://us%40r:p%3Ass@proxy:8888".into());
    let proxy = resolve(&config, &url, &env(&[("NO_PROXY", "*")]))
        .unwrap()
        .unwrap();
    assert_eq!((proxy.host.as_str(), proxy.port), ("proxy", 8888));
    // base64("us@r:p:ss")
    assert_eq!(
        proxy.basic_authorization().as_deref(),
        Some("Basic dXNAcjpwOnNz")
    );
    assert!(!format!("{proxy:?}").contains("p%3Ass"));
    assert_eq!(
        format!("{config:?}"),
        "Url(http://us%40r:redacted@proxy:8888/)"
    );
}

#[test]
fn socks5_proxies_are_read_with_their_credentials_and_default_port() {
    let proxy = parse_proxy_url("socks5://us%40r:p%3Ass@proxy.corp", "proxy-url").unwrap();
    assert_eq!(proxy.scheme, ProxyScheme::Socks5);
    assert_eq!((proxy.host.as_str(), proxy.port), ("proxy.corp", 1080));
    let credentials = ("us@r".to_owned(), "p:ss".to_owned());
    assert_eq!(proxy.credentials, Some(credentials));
    assert_eq!(format!("{proxy:?}"), "socks5://proxy.corp:1080");
    let bare = parse_proxy_url("socks5://[::1]:9050", "proxy-url").unwrap();
    assert_eq!(
        (bare.host.as_str(), bare.port, bare.credentials),
        ("::1", 9050, None)
    );
    let long = format!("socks5://{}:pw@proxy", "u".repeat(256));
    let err = parse_proxy_url(&long, "proxy-url").unwrap_err();
    assert!(err.contains("255") && !err.contains("pw@"), "{err}");
}

#[test]
fn https_and_other_proxies_are_refused_by_name_without_the_password() {
    for text in [
        "https://u:hunter2@proxy:443",
        "socks5h://proxy:1080",
        "ftp://proxy",
    ] {
        let err = parse_proxy_url(text, "proxy-url").unwrap_err();
        assert!(
            err.contains("http://") && err.contains("socks5://"),
            "{err}"
        );
        assert!(err.contains("proxy") && !err.contains("hunter2"), "{err}");
    }
}
