//! The skiff binary behind an HTTP CONNECT or a SOCKS5 proxy, against the fake API server over
//! TLS.
//!
//! The server is named `api.skiff.test`, which does not resolve: only a connection through the
//! test proxy (which tunnels every CONNECT to 127.0.0.1) can reach it. So a leader that renews
//! its lease proves the proxy carried it, and the proxy's record shows which connections.

use crate::support::fake::{FakeServer, RequestClass, RequestRecord};
use crate::support::proxy::ConnectProxy;
use crate::support::skiff::{HOME_NS, SHORT_LEASE, Skiff, TempDir, eventually, is_lease_hold};
use crate::support::socks::SocksProxy;
use serde_json::json;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

const HOST: &str = "api.skiff.test";
const LEASE_UA: &str = "skiff/leader-election";

fn tls_server() -> FakeServer {
    let server = FakeServer::start_tls();
    server.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HOME_NS}}));
    server
}

fn port_of(server: &FakeServer) -> u16 {
    let url: http_types::Url = server.url().parse().expect("server URL");
    url.port().expect("server port")
}

/// A kubeconfig for `https://api.skiff.test:<port>` (certificate checked as `localhost`).
fn kubeconfig(dir: &TempDir, server: &FakeServer, cluster_extra: &str) -> PathBuf {
    let ca = dir.0.join("ca.crt");
    std::fs::write(&ca, server.ca_pem().expect("TLS server")).expect("write CA");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: https://{HOST}:{port}\n    certificate-authority: {ca}\n    tls-server-name: localhost\n{cluster_extra}users:\n- name: t\n  user:\n    token: t\ncontexts:\n- name: t\n  context: {{cluster: t, user: t, namespace: {HOME_NS}}}\ncurrent-context: t\n",
        port = port_of(server),
        ca = ca.display(),
    );
    let path = dir.0.join("kubeconfig");
    std::fs::write(&path, text).expect("write kubeconfig");
    path
}

fn start(kubeconfig: &PathBuf, dir: &TempDir, env: &[(&str, &str)]) -> Skiff {
    let mut args: Vec<&str> = SHORT_LEASE.to_vec();
    args.push("--log-level=debug");
    Skiff::start_with_env(kubeconfig, dir.0.join("skiff.log"), &args, env)
}

/// Waits until the binary leads and its controllers watch.
fn wait_leading(server: &FakeServer, skiff: &Skiff) {
    let ok = eventually(Duration::from_secs(30), || {
        let records = server.requests();
        records.iter().any(is_lease_hold)
            && records
                .iter()
                .any(|r| r.watch && r.class == RequestClass::Other && r.status == 200)
    });
    assert!(ok, "not leading through the proxy; log:\n{}", skiff.logs());
}

/// Every connection the server saw came through a tunnel to the configured host, and both
/// clients (lease and main) had connections of their own through it.
fn assert_all_connections_tunnelled(server: &FakeServer, proxy: &ConnectProxy) {
    // Records first: a connection's tunnel is recorded before its first request arrives.
    let records = server.requests();
    let tunnels: Vec<String> = proxy.tunnels().into_iter().map(|t| t.authority).collect();
    assert_tunnelled(server, &records, &tunnels);
}

/// [`assert_all_connections_tunnelled`] of `records`, given the tunnels' authorities.
fn assert_tunnelled(server: &FakeServer, records: &[RequestRecord], tunnels: &[String]) {
    let expected = format!("{HOST}:{}", port_of(server));
    assert!(tunnels.iter().all(|t| *t == expected), "{tunnels:?}");
    let connections: BTreeSet<u64> = records.iter().map(|r| r.conn_id).collect();
    assert!(
        connections.len() <= tunnels.len(),
        "a connection without a tunnel"
    );
    let lease: BTreeSet<u64> = records
        .iter()
        .filter(|r| r.user_agent.as_deref() == Some(LEASE_UA))
        .map(|r| r.conn_id)
        .collect();
    let main: BTreeSet<u64> = records
        .iter()
        .filter(|r| r.user_agent.as_deref() != Some(LEASE_UA))
        .map(|r| r.conn_id)
        .collect();
    assert!(!lease.is_empty() && !main.is_empty());
    assert!(
        lease.is_disjoint(&main),
        "the lease client has its own tunnels"
    );
}

#[test]
fn proxy_url_carries_every_connection_of_both_clients() {
    let server = tls_server();
    let proxy = ConnectProxy::start();
    let dir = TempDir::new("proxy-url");
    // The environment's settings are ignored when the cluster names a proxy.
    let extra = format!("    proxy-url: {}\n", proxy.url());
    let kubeconfig = kubeconfig(&dir, &server, &extra);
    let skiff = start(&kubeconfig, &dir, &[("NO_PROXY", "*")]);
    wait_leading(&server, &skiff);
    assert_all_connections_tunnelled(&server, &proxy);
}

#[test]
fn https_proxy_from_the_environment_is_used_unless_no_proxy_exempts_the_server() {
    let server = tls_server();
    let proxy = ConnectProxy::start();
    let dir = TempDir::new("proxy-env");
    let kubeconfig = kubeconfig(&dir, &server, "");
    let url = proxy.url();
    let skiff = start(
        &kubeconfig,
        &dir,
        &[("HTTPS_PROXY", &url), ("NO_PROXY", "10.0.0.0/8")],
    );
    wait_leading(&server, &skiff);
    assert_all_connections_tunnelled(&server, &proxy);
    drop(skiff);

    let exempt = ConnectProxy::start();
    let url = exempt.url();
    let skiff = start(
        &kubeconfig,
        &dir,
        &[("https_proxy", &url), ("no_proxy", ".skiff.test")],
    );
    // The dial is direct or through the proxy, never both: once the direct one has failed
    // and been logged, the proxy was passed over.
    let dialed = eventually(Duration::from_secs(30), || direct_dial_failed(&skiff));
    assert!(
        dialed,
        "the direct dial to {HOST} fails and is logged; log:\n{}",
        skiff.logs()
    );
    assert!(
        exempt.tunnels().is_empty(),
        "NO_PROXY=.skiff.test must bypass the proxy"
    );
}

/// Whether skiff logged a failed dial of the server by its name, which does not resolve.
fn direct_dial_failed(skiff: &Skiff) -> bool {
    skiff.logs().contains(&format!("connect to {HOST}:"))
}

/// Starts skiff with `proxy-url: <url>` (plus `cluster_extra`) until it leads; the tunnels of
/// `proxy` then carried every connection, each naming the server by its host name.
fn leads_through_socks(proxy: &SocksProxy, url: &str, tag: &str) -> Vec<(String, String)> {
    let server = tls_server();
    let dir = TempDir::new(tag);
    let kubeconfig = kubeconfig(&dir, &server, &format!("    proxy-url: {url}\n"));
    let skiff = start(&kubeconfig, &dir, &[("NO_PROXY", "*")]);
    wait_leading(&server, &skiff);
    let records = server.requests();
    let tunnels = proxy.tunnels();
    assert!(tunnels.iter().all(|t| t.address_type == 3), "{tunnels:?}");
    let authorities: Vec<String> = tunnels.iter().map(|t| t.authority.clone()).collect();
    assert_tunnelled(&server, &records, &authorities);
    tunnels.into_iter().filter_map(|t| t.credentials).collect()
}

#[test]
fn a_socks5_proxy_url_carries_every_connection_naming_the_server_by_its_host_name() {
    let proxy = SocksProxy::start();
    let url = format!("socks5://{}", proxy.address());
    let credentials = leads_through_socks(&proxy, &url, "proxy-socks");
    assert!(credentials.is_empty(), "{credentials:?}");
}

#[test]
fn a_socks5_proxy_gets_the_user_and_password_of_the_proxy_url() {
    let proxy = SocksProxy::start_requiring(Some(("us@r", "p:ss")));
    let url = format!("socks5://us%40r:p%3Ass@{}", proxy.address());
    let credentials = leads_through_socks(&proxy, &url, "proxy-socks-auth");
    let expected = ("us@r".to_owned(), "p:ss".to_owned());
    assert!(!credentials.is_empty());
    assert!(
        credentials.iter().all(|c| *c == expected),
        "{credentials:?}"
    );

    // Wrong credentials: refused by the proxy, said so, the password never logged.
    let server = tls_server();
    let dir = TempDir::new("proxy-socks-wrong");
    let line = format!(
        "    proxy-url: socks5://us%40r:hunter2@{}\n",
        proxy.address()
    );
    let skiff = start(&kubeconfig(&dir, &server, &line), &dir, &[]);
    let refused = eventually(Duration::from_secs(20), || {
        skiff.logs().contains("refused the user and password")
    });
    let logs = skiff.logs();
    assert!(refused, "{logs}");
    assert!(!logs.contains("hunter2"), "{logs}");
    assert!(server.requests().is_empty());
}

#[test]
fn through_a_socks5_proxy_tls_still_verifies_the_servers_name() {
    let server = tls_server();
    let proxy = SocksProxy::start();
    let dir = TempDir::new("proxy-socks-tls");
    // Without tls-server-name, the certificate (for localhost) must match api.skiff.test.
    let line = format!("    proxy-url: socks5://{}\n", proxy.address());
    let text = std::fs::read_to_string(kubeconfig(&dir, &server, &line)).expect("kubeconfig");
    let path = dir.0.join("unnamed");
    std::fs::write(&path, text.replace("    tls-server-name: localhost\n", "")).expect("write");
    let skiff = start(&path, &dir, &[]);
    let failed = eventually(Duration::from_secs(20), || {
        skiff.logs().contains("TLS handshake with api.skiff.test")
    });
    assert!(failed, "{}", skiff.logs());
    assert!(!proxy.tunnels().is_empty(), "the proxy carried the dial");
    assert!(
        server.requests().is_empty(),
        "no request passed an unverified TLS"
    );
}

#[test]
fn an_https_proxy_url_is_refused_at_start_naming_the_fix() {
    let server = tls_server();
    let dir = TempDir::new("proxy-https");
    let kubeconfig = kubeconfig(&dir, &server, "    proxy-url: https://127.0.0.1:3129\n");
    let mut skiff = start(&kubeconfig, &dir, &[]);
    assert_eq!(skiff.wait_exit(Duration::from_secs(20)), Some(1));
    let logs = skiff.logs();
    assert!(
        logs.contains("https://127.0.0.1:3129") && logs.contains("socks5://"),
        "{logs}"
    );
    assert!(server.requests().is_empty());
}
