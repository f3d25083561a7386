//! The API client against the fake API server: CRUD with resourceVersion conflicts, paged
//! lists, the status subresource, merge patches and finalizers, over plain HTTP and TLS.

use crate::support::fake::FakeServer;
use serde_json::json;
use skiff::kube::api::{ConfigMap, Namespace, ObjectMeta};
use skiff::kube::{Client, ListParams, Selectors};
use skiff::mirror::{Mirror, MirrorStatus};

fn client_for(server: &FakeServer) -> Client {
    Client::new(server.config()).expect("client")
}

fn config_map(namespace: &str, name: &str, value: &str) -> ConfigMap {
    let mut cm = ConfigMap {
        metadata: ObjectMeta::named(Some(namespace), name),
        ..ConfigMap::default()
    };
    cm.data.insert("key".into(), value.into());
    cm
}

/// Create, get, update, stale update, duplicate create, delete: what each step must return.
async fn crud_round_trip(server: &FakeServer) {
    let client = client_for(server);
    let created = client.create(&config_map("a", "app", "v1")).await.unwrap();
    let first_rv = created.metadata.resource_version().to_owned();
    assert!(!first_rv.is_empty(), "create returns a resourceVersion");
    assert!(created.metadata.uid.is_some(), "create returns a uid");

    let fetched: ConfigMap = client.get(Some("a"), "app").await.unwrap();
    assert_eq!(fetched.data["key"], "v1");
    assert_eq!(fetched.metadata.resource_version(), first_rv);

    let mut changed = fetched.clone();
    changed.data.insert("key".into(), "v2".into());
    let updated = client.replace(&changed).await.unwrap();
    assert_ne!(updated.metadata.resource_version(), first_rv);
    let stored = server.get("/api/v1/namespaces/a/configmaps/app").unwrap();
    assert_eq!(stored["data"]["key"], "v2");

    // `changed` still carries the first resourceVersion: a lost update must be refused.
    changed.data.insert("key".into(), "stale".into());
    let stale = client.replace(&changed).await.unwrap_err();
    assert!(stale.is_conflict() && !stale.is_already_exists(), "{stale}");
    let stored = server.get("/api/v1/namespaces/a/configmaps/app").unwrap();
    assert_eq!(stored["data"]["key"], "v2", "a stale update must not land");

    let duplicate = client
        .create(&config_map("a", "app", "again"))
        .await
        .unwrap_err();
    assert!(duplicate.is_already_exists(), "{duplicate}");

    client
        .delete::<ConfigMap>(Some("a"), "app", None)
        .await
        .unwrap();
    let gone = client.get::<ConfigMap>(Some("a"), "app").await.unwrap_err();
    assert!(gone.is_not_found(), "{gone}");
}

#[test]
fn crud_with_conflicts_over_plain_http() {
    let server = FakeServer::start();
    smol::block_on(crud_round_trip(&server));
}

#[test]
fn crud_with_conflicts_over_tls() {
    let server = FakeServer::start_tls();
    assert!(server.url().starts_with("https://"));
    smol::block_on(crud_round_trip(&server));
}

#[test]
fn delete_with_a_stale_precondition_conflicts() {
    let server = FakeServer::start();
    let client = client_for(&server);
    smol::block_on(async {
        let created = client.create(&config_map("a", "app", "v1")).await.unwrap();
        let mut changed = created.clone();
        changed.data.insert("key".into(), "v2".into());
        client.replace(&changed).await.unwrap();
        let stale_rv = created.metadata.resource_version();
        let err = client
            .delete::<ConfigMap>(Some("a"), "app", Some(stale_rv))
            .await
            .unwrap_err();
        assert!(err.is_conflict(), "{err}");
    });
    assert!(server.get("/api/v1/namespaces/a/configmaps/app").is_some());
}

#[test]
fn list_all_pages_through_1200_objects_in_three_pages() {
    const COUNT: usize = 1200;
    let server = FakeServer::start();
    for i in 0..COUNT {
        server.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i:04}"), "namespace": "paged"}}));
    }
    server.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "elsewhere", "namespace": "other"}}));
    let client = client_for(&server);
    let params = ListParams {
        limit: Some(500),
        ..ListParams::default()
    };
    let list = smol::block_on(client.list_all::<ConfigMap>(Some("paged"), &params)).unwrap();

    let mut names: Vec<&str> = list.items.iter().map(|cm| cm.metadata.name()).collect();
    assert_eq!(names.len(), COUNT);
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), COUNT, "no item twice");
    assert!(
        !list
            .metadata
            .resource_version
            .clone()
            .unwrap_or_default()
            .is_empty()
    );

    let pages: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path == "/api/v1/namespaces/paged/configmaps")
        .map(|r| r.query.clone())
        .collect();
    assert_eq!(pages.len(), 3, "{pages:?}");
    assert!(pages.iter().all(|q| q.contains("limit=500")), "{pages:?}");
    assert!(!pages[0].contains("continue="), "{pages:?}");
    assert!(
        pages[1..].iter().all(|q| q.contains("continue=")),
        "{pages:?}"
    );
}

fn mirror_object(name: &str) -> serde_json::Value {
    json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
        "metadata": {"name": name, "namespace": "a"},
        "spec": {"source": {"kind": "ConfigMap", "name": "app-ca"}}})
}

#[test]
fn status_subresource_round_trip_leaves_the_spec_alone() {
    let server = FakeServer::start();
    server.insert(mirror_object("m"));
    let client = client_for(&server);
    smol::block_on(async {
        let mut mirror: Mirror = client.get(Some("a"), "m").await.unwrap();
        mirror.spec.source.name = "not-through-status".into();
        mirror.status = Some(MirrorStatus {
            observed_generation: mirror.metadata.generation,
            selected: 3,
            synced: 2,
            ..MirrorStatus::default()
        });
        let written = client.replace_status(&mirror).await.unwrap();
        assert_eq!(written.status.as_ref().map(|s| s.selected), Some(3));
        assert_eq!(
            written.spec.source.name, "app-ca",
            "status PUT ignores spec"
        );

        let patched: Mirror = client
            .patch_status(Some("a"), "m", &json!({"status": {"synced": 3}}))
            .await
            .unwrap();
        let status = patched.status.unwrap();
        assert_eq!((status.selected, status.synced), (3, 3));

        let read: Mirror = client.get(Some("a"), "m").await.unwrap();
        assert_eq!(read.status.map(|s| s.synced), Some(3));
        assert_eq!(read.spec.source.name, "app-ca");
    });
    let requests = server.requests();
    assert!(
        requests.iter().any(|r| r.method == "PUT"
            && r.path == "/apis/skiff.dev/v1alpha1/namespaces/a/mirrors/m/status")
    );
}

#[test]
fn merge_patch_changes_only_the_named_fields() {
    let server = FakeServer::start();
    let client = client_for(&server);
    smol::block_on(async {
        let mut cm = config_map("a", "app", "v1");
        cm.data.insert("other".into(), "kept".into());
        client.create(&cm).await.unwrap();
        let patch = json!({"metadata": {"labels": {"team": "x"}}, "data": {"key": "v2"}});
        let patched: ConfigMap = client.patch_merge(Some("a"), "app", &patch).await.unwrap();
        assert_eq!(patched.data["key"], "v2");
        assert_eq!(patched.data["other"], "kept");
        assert_eq!(patched.metadata.labels["team"], "x");
        let removal = json!({"data": {"other": null}});
        let patched: ConfigMap = client
            .patch_merge(Some("a"), "app", &removal)
            .await
            .unwrap();
        assert!(!patched.data.contains_key("other"), "null removes a key");
    });
    let patch = server
        .requests()
        .into_iter()
        .find(|r| r.method == "PATCH")
        .expect("a PATCH was sent");
    assert_eq!(patch.path, "/api/v1/namespaces/a/configmaps/app");
}

#[test]
fn delete_with_a_finalizer_sets_deletion_timestamp_until_it_is_removed() {
    let server = FakeServer::start();
    let client = client_for(&server);
    smol::block_on(async {
        let mut cm = config_map("a", "held", "v1");
        cm.metadata.finalizers = vec!["skiff.dev/cleanup".into()];
        client.create(&cm).await.unwrap();
        client
            .delete::<ConfigMap>(Some("a"), "held", None)
            .await
            .unwrap();
        let held: ConfigMap = client.get(Some("a"), "held").await.unwrap();
        assert!(held.metadata.deletion_timestamp.is_some(), "{held:?}");

        let release = json!({"metadata": {"finalizers": null}});
        let _: Result<ConfigMap, _> = client.patch_merge(Some("a"), "held", &release).await;
        let gone = client
            .get::<ConfigMap>(Some("a"), "held")
            .await
            .unwrap_err();
        assert!(gone.is_not_found(), "{gone}");
    });
}

#[test]
fn label_and_field_selectors_reach_the_server_intact() {
    let server = FakeServer::start();
    for (name, team) in [("one", "a"), ("two", "b"), ("three", "c")] {
        server.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "s", "labels": {"team": team}}}));
    }
    let client = client_for(&server);
    let names = |params: ListParams| {
        let list = smol::block_on(client.list::<ConfigMap>(Some("s"), &params)).unwrap();
        let mut names: Vec<String> = list
            .items
            .iter()
            .map(|cm| cm.metadata.name().to_owned())
            .collect();
        names.sort();
        names
    };
    let by_label = names(ListParams {
        selectors: Selectors::labels("team in (a,b),team!=b"),
        ..ListParams::default()
    });
    assert_eq!(by_label, ["one"]);
    let by_field = names(ListParams {
        selectors: Selectors::fields("metadata.name=three"),
        ..ListParams::default()
    });
    assert_eq!(by_field, ["three"]);
}

#[test]
fn cluster_scoped_objects_ignore_the_namespace() {
    let server = FakeServer::start();
    let client = client_for(&server);
    smol::block_on(async {
        let mut ns = Namespace {
            metadata: ObjectMeta::named(None, "team-a"),
            ..Namespace::default()
        };
        ns.metadata.labels.insert("team".into(), "yes".into());
        client.create(&ns).await.unwrap();
        let read: Namespace = client.get(Some("ignored"), "team-a").await.unwrap();
        assert_eq!(read.metadata.labels["team"], "yes");
    });
    assert!(server.get("/api/v1/namespaces/team-a").is_some());
}
