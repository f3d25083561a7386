//! Self-tests of the fake API server, through a minimal HTTP client written here (async-h1 over
//! a plain or TLS TCP stream). Objects, writes and lists here; watches and transport in the
//! `fake_server/` modules.

#[path = "fake_server/client.rs"]
mod client;
#[path = "fake_server/transport.rs"]
mod transport;
#[path = "fake_server/watches.rs"]
mod watches;

use crate::support::fake::FakeServer;
use client::{address, call, configmap, exchange, names, request};
use http_types::Method;
use serde_json::json;
use smol::net::TcpStream;

#[test]
fn create_get_and_duplicate_create_conflicts() {
    let server = FakeServer::start();
    let object = configmap("a", "x", json!({}));
    let (status, created) = call(
        &server,
        Method::Post,
        "/api/v1/namespaces/a/configmaps",
        Some(object.clone()),
    );
    assert_eq!(status, 201);
    assert!(created["metadata"]["uid"].is_string());
    assert_eq!(
        created["metadata"]["resourceVersion"],
        json!(server.current_resource_version().to_string())
    );
    assert_eq!(created["metadata"]["generation"], json!(1));
    let (status, fetched) = call(
        &server,
        Method::Get,
        "/api/v1/namespaces/a/configmaps/x",
        None,
    );
    assert_eq!((status, &fetched), (200, &created));
    let (status, error) = call(
        &server,
        Method::Post,
        "/api/v1/namespaces/a/configmaps",
        Some(object),
    );
    assert_eq!(
        (status, error["reason"].as_str()),
        (409, Some("AlreadyExists"))
    );
    assert_eq!(error["kind"], json!("Status"));
    let (status, error) = call(
        &server,
        Method::Get,
        "/api/v1/namespaces/a/configmaps/missing",
        None,
    );
    assert_eq!((status, error["reason"].as_str()), (404, Some("NotFound")));
    let (status, _) = call(&server, Method::Get, "/nonsense/path", None);
    assert_eq!(status, 404);
    let nameless = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}});
    let (status, error) = call(
        &server,
        Method::Post,
        "/api/v1/namespaces/a/configmaps",
        Some(nameless),
    );
    assert_eq!((status, error["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(
        server.get("/api/v1/namespaces/a/configmaps/x"),
        Some(created)
    );
}

#[test]
fn bad_json_is_a_bad_request() {
    let server = FakeServer::start();
    let (status, error) = smol::block_on(async {
        let stream = TcpStream::connect(address(&server)).await.expect("connect");
        let mut bad = request(
            &server,
            Method::Post,
            "/api/v1/namespaces/a/configmaps",
            None,
        );
        bad.set_body("{not json");
        let (status, error, _) = exchange(stream, bad).await;
        (status, error)
    });
    assert_eq!(
        (status, error["reason"].as_str()),
        (400, Some("BadRequest"))
    );
}

#[test]
fn put_with_stale_resource_version_conflicts() {
    let server = FakeServer::start();
    let stored = server.insert(configmap("a", "x", json!({})));
    let path = "/api/v1/namespaces/a/configmaps/x";
    let mut changed = stored.clone();
    changed["data"]["k"] = json!("v2");
    let (status, updated) = call(&server, Method::Put, path, Some(changed.clone()));
    assert_eq!(status, 200);
    assert_ne!(
        updated["metadata"]["resourceVersion"],
        stored["metadata"]["resourceVersion"]
    );
    let (status, error) = call(&server, Method::Put, path, Some(changed.clone()));
    assert_eq!((status, error["reason"].as_str()), (409, Some("Conflict")));
    changed["metadata"]["resourceVersion"] = json!("");
    changed["data"]["k"] = json!("v3");
    let (status, unconditional) = call(&server, Method::Put, path, Some(changed));
    assert_eq!((status, &unconditional["data"]["k"]), (200, &json!("v3")));
}

#[test]
fn status_subresource_and_generation_follow_apiserver_rules() {
    let server = FakeServer::start();
    let mirror = json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
                        "metadata": {"name": "m", "namespace": "a"}, "spec": {"source": "s"}, "status": {"ok": false}});
    let path = "/apis/skiff.dev/v1alpha1/namespaces/a/mirrors/m";
    let stored = server.insert(mirror);
    let mut main = stored.clone();
    main["spec"]["source"] = json!("t");
    main["status"]["ok"] = json!(true);
    let (_, after_main) = call(&server, Method::Put, path, Some(main));
    assert_eq!(after_main["metadata"]["generation"], json!(2));
    assert_eq!(
        after_main["status"]["ok"],
        json!(false),
        "main-resource writes keep status"
    );
    let patch = json!({"status": {"ok": true}, "spec": {"source": "ignored"}});
    let (status, after_status) = call(
        &server,
        Method::Patch,
        &format!("{path}/status"),
        Some(patch),
    );
    assert_eq!(status, 200);
    assert_eq!(after_status["status"]["ok"], json!(true));
    assert_eq!(
        after_status["spec"]["source"],
        json!("t"),
        "status writes keep spec"
    );
    assert_eq!(after_status["metadata"]["generation"], json!(2));
}

#[test]
fn finalizer_delays_deletion_until_removed() {
    let server = FakeServer::start();
    let mut object = configmap("a", "x", json!({}));
    object["metadata"]["finalizers"] = json!(["skiff.dev/cleanup"]);
    let stored = server.insert(object);
    let path = "/api/v1/namespaces/a/configmaps/x";
    let stale = json!({"preconditions": {"resourceVersion": "999"}});
    let (status, _) = call(&server, Method::Delete, path, Some(stale));
    assert_eq!(status, 409);
    let (status, deleting) = call(&server, Method::Delete, path, None);
    assert_eq!(status, 200);
    assert!(deleting["metadata"]["deletionTimestamp"].is_string());
    assert!(
        server.get(path).is_some(),
        "kept while a finalizer is pending"
    );
    let patch = json!({"metadata": {"finalizers": null}});
    let (status, _) = call(&server, Method::Patch, path, Some(patch));
    assert_eq!(status, 200);
    assert_eq!(server.get(path), None);
    assert_ne!(
        stored["metadata"]["resourceVersion"],
        deleting["metadata"]["resourceVersion"]
    );
}

#[test]
fn label_and_field_selectors_filter_lists() {
    let server = FakeServer::start();
    server.insert(configmap("a", "one", json!({"app": "x", "tier": "web"})));
    server.insert(configmap("a", "two", json!({"app": "y"})));
    server.insert(configmap("b", "three", json!({"app": "x"})));
    let list = |query: &str| {
        names(
            &call(
                &server,
                Method::Get,
                &format!("/api/v1/configmaps?{query}"),
                None,
            )
            .1,
        )
    };
    assert_eq!(list("labelSelector=app%3Dx"), ["one", "three"]);
    assert_eq!(list("labelSelector=app!%3Dx"), ["two"]);
    assert_eq!(list("labelSelector=app+in+(y,z)"), ["two"]);
    assert_eq!(list("labelSelector=app+notin+(y),tier"), ["one"]);
    assert_eq!(list("labelSelector=!tier"), ["two", "three"]);
    assert_eq!(list("fieldSelector=metadata.name%3Dtwo"), ["two"]);
    assert_eq!(list("fieldSelector=metadata.namespace!%3Da"), ["three"]);
    let namespaced = call(
        &server,
        Method::Get,
        "/api/v1/namespaces/b/configmaps",
        None,
    )
    .1;
    assert_eq!(names(&namespaced), ["three"]);
    assert_eq!(namespaced["kind"], json!("ConfigMapList"));
    assert_eq!(
        namespaced["metadata"]["resourceVersion"],
        json!(server.current_resource_version().to_string())
    );
}

#[test]
fn limit_and_continue_page_through_sorted_items() {
    let server = FakeServer::start();
    for (ns, name) in [("b", "1"), ("a", "2"), ("a", "1"), ("c", "0"), ("b", "0")] {
        server.insert(configmap(ns, name, json!({})));
    }
    let mut seen = Vec::new();
    let mut query = "limit=2".to_string();
    for _ in 0..5 {
        let (_, page) = call(
            &server,
            Method::Get,
            &format!("/api/v1/configmaps?{query}"),
            None,
        );
        for item in page["items"].as_array().expect("items") {
            seen.push(format!(
                "{}/{}",
                item["metadata"]["namespace"].as_str().unwrap_or(""),
                item["metadata"]["name"].as_str().unwrap_or("")
            ));
        }
        match page["metadata"]["continue"].as_str() {
            Some(token) => query = format!("limit=2&continue={token}"),
            None => break,
        }
    }
    assert_eq!(seen, ["a/1", "a/2", "b/0", "b/1", "c/0"]);
}
