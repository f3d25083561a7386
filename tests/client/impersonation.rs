//! Impersonation from a kubeconfig, and from the binary's `--as` flags, on the wire: every
//! request of both clients (the main client's reads, writes and watches, the lease client's
//! requests) carries the `Impersonate-*` headers beside the credential's own bearer token.

use crate::support::fake::FakeServer;
use crate::support::fake::RequestClass;
use crate::support::skiff::{
    HOME_NS, SHORT_LEASE, Skiff, TempDir, eventually, is_lease_hold, write_kubeconfig,
};
use serde_json::json;
use skiff::kube::api::{ConfigMap, Lease, ObjectMeta};
use skiff::kube::{Client, ListParams, WatchParams, load_kubeconfig_files};
use std::time::Duration;

const NS: &str = "team-a";

/// Over TLS: kubectl sends no credentials or impersonation to a plain http:// server.
fn kubeconfig(server: &FakeServer, dir: &TempDir) -> std::path::PathBuf {
    let ca = dir.0.join("ca.crt");
    std::fs::write(&ca, server.ca_pem().expect("a TLS server")).expect("write the CA");
    let text = format!(
        "current-context: c
clusters:
- name: k
  cluster:
    server: {url}
    certificate-authority: {ca}
users:
- name: u
  user:
    token: underlying
    as: jane
    as-groups: [devs, system:authenticated]
    as-user-extra:
      example.com/scopes: [view, edit]
contexts:
- name: c
  context: {{cluster: k, user: u}}
",
        url = server.url(),
        ca = ca.display()
    );
    let path = dir.0.join("config");
    std::fs::write(&path, text).expect("write the kubeconfig");
    path
}

#[test]
fn every_request_of_both_clients_carries_the_impersonation_headers() {
    let server = FakeServer::start_tls();
    server.require_token("underlying");
    server.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}));
    let dir = TempDir::new("client-impersonation");
    let config = load_kubeconfig_files(&[kubeconfig(&server, &dir)], None).expect("load");
    let lease_config = config.for_leader_election(5.0, 10);
    let main = Client::new(config).expect("main client");
    let lease = Client::new(lease_config).expect("lease client");
    smol::block_on(async {
        let cm = ConfigMap {
            metadata: ObjectMeta::named(Some(NS), "x"),
            ..ConfigMap::default()
        };
        main.create(&cm).await.expect("create");
        main.get::<ConfigMap>(Some(NS), "x").await.expect("get");
        main.list::<ConfigMap>(Some(NS), &ListParams::default())
            .await
            .expect("list");
        let _watch = main
            .watch::<ConfigMap>(Some(NS), &WatchParams::default())
            .await
            .expect("watch");
        let _ = lease.get::<Lease>(Some(NS), "skiff-leader").await;
    });

    let want: Vec<(String, String)> = [
        ("impersonate-user", "jane"),
        ("impersonate-group", "devs"),
        ("impersonate-group", "system:authenticated"),
        ("impersonate-extra-example.com%2fscopes", "view"),
        ("impersonate-extra-example.com%2fscopes", "edit"),
    ]
    .iter()
    .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
    .collect();
    // Header names come in any order; each name's values in the order given.
    let by_name = |headers: &[(String, String)]| {
        let mut sorted = headers.to_vec();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        sorted
    };
    let records = server.requests();
    let seen: Vec<String> = records
        .iter()
        .map(|r| format!("{} {} watch={}", r.method, r.path, r.watch))
        .collect();
    assert_eq!(records.len(), 5, "{seen:?}");
    assert!(records.iter().any(|r| r.watch), "{seen:?}");
    assert!(
        records.iter().any(|r| r.path.contains("/leases/")),
        "{seen:?}"
    );
    for record in &records {
        assert_eq!(
            by_name(&record.impersonation),
            by_name(&want),
            "{} {}",
            record.method,
            record.path
        );
        assert_eq!(record.token.as_deref(), Some("underlying"));
    }
}

#[test]
fn the_binary_with_as_flags_impersonates_on_every_request_of_both_clients() {
    let server = FakeServer::start_tls();
    server.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HOME_NS}}));
    let dir = TempDir::new("binary-impersonation");
    let kubeconfig = write_kubeconfig(
        &dir,
        &server.url(),
        server.ca_pem().as_deref(),
        Some("underlying"),
        HOME_NS,
    );
    let mut args: Vec<&str> = SHORT_LEASE.to_vec();
    args.extend(["--as=jane", "--as-group=devs", "--as-group", "ops"]);
    let skiff = Skiff::start(&kubeconfig, dir.0.join("skiff.log"), &args);
    let leading = eventually(Duration::from_secs(30), || {
        let records = server.requests();
        records.iter().any(is_lease_hold)
            && records
                .iter()
                .any(|r| r.watch && r.class == RequestClass::Other)
    });
    assert!(leading, "not leading; log:\n{}", skiff.logs());
    let mut want = vec![
        ("impersonate-group".to_owned(), "devs".to_owned()),
        ("impersonate-group".to_owned(), "ops".to_owned()),
        ("impersonate-user".to_owned(), "jane".to_owned()),
    ];
    want.sort();
    for record in server.requests() {
        let mut seen = record.impersonation.clone();
        seen.sort();
        assert_eq!(seen, want, "{} {}", record.method, record.path);
    }
}
