//! Impersonation from a kubeconfig, on the wire: every request of both clients (the main
//! client's reads, writes and watches, the lease client's requests) carries the
//! `Impersonate-*` headers beside the credential's own bearer token.

use crate::support::fake::FakeServer;
use crate::support::skiff::TempDir;
use serde_json::json;
use skiff::kube::api::{ConfigMap, Lease, ObjectMeta};
use skiff::kube::{Client, ListParams, WatchParams, load_kubeconfig_files};

const NS: &str = "team-a";

fn kubeconfig(server: &FakeServer, dir: &TempDir) -> std::path::PathBuf {
    let text = format!(
        "current-context: c
clusters:
- name: k
  cluster:
    server: {url}
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
        url = server.url()
    );
    let path = dir.0.join("config");
    std::fs::write(&path, text).expect("write the kubeconfig");
    path
}

#[test]
fn every_request_of_both_clients_carries_the_impersonation_headers() {
    let server = FakeServer::start();
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
