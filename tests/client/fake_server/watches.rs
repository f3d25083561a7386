//! Self-tests of the fake server's watch streams: replay, 410, bookmarks, timeouts, drops.

use super::client::{WatchStream, configmap, event_summary};
use crate::support::fake::FakeServer;
use serde_json::json;
use std::time::Duration;

#[test]
fn watch_from_resource_version_replays_history_then_live() {
    let server = FakeServer::start();
    server.insert(configmap("a", "before", json!({})));
    let resume = server.current_resource_version();
    server.insert(configmap("a", "missed", json!({})));
    server.insert(configmap("b", "elsewhere", json!({})));
    let mut watch = WatchStream::open(
        &server,
        &format!("/api/v1/namespaces/a/configmaps?watch=true&resourceVersion={resume}"),
    );
    assert_eq!(
        event_summary(&watch.next().expect("replayed")),
        ("ADDED".into(), "missed".into())
    );
    server.remove("/api/v1/namespaces/a/configmaps/before");
    assert_eq!(
        event_summary(&watch.next().expect("live")),
        ("DELETED".into(), "before".into())
    );
    let mut from_now = WatchStream::open(&server, "/api/v1/namespaces/a/configmaps?watch=1");
    assert_eq!(
        event_summary(&from_now.next().expect("synthetic")),
        ("ADDED".into(), "missed".into())
    );
    server.close_watches();
    assert_eq!(watch.next(), None, "close_watches ends the stream");
}

#[test]
fn watch_after_compact_gets_expired_error() {
    let server = FakeServer::start();
    server.insert(configmap("a", "x", json!({})));
    let old = server.current_resource_version();
    server.insert(configmap("a", "y", json!({})));
    server.compact();
    let mut watch = WatchStream::open(
        &server,
        &format!("/api/v1/configmaps?watch=true&resourceVersion={old}"),
    );
    let event = watch.next().expect("an ERROR event");
    assert_eq!(event["type"], json!("ERROR"));
    assert_eq!(
        (
            event["object"]["code"].as_u64(),
            event["object"]["reason"].as_str()
        ),
        (Some(410), Some("Expired"))
    );
    assert_eq!(watch.next(), None);
}

#[test]
fn bookmarks_arrive_only_on_watches_that_ask_and_timeouts_end_cleanly() {
    let server = FakeServer::start();
    server.set_bookmark_interval(Duration::from_millis(100));
    server.insert(configmap("a", "x", json!({})));
    let rv = server.current_resource_version();
    let mut watch = WatchStream::open(
        &server,
        &format!("/api/v1/configmaps?watch=true&resourceVersion={rv}&allowWatchBookmarks=true"),
    );
    let bookmark = watch.next().expect("bookmark");
    assert_eq!(bookmark["type"], json!("BOOKMARK"));
    assert_eq!(
        bookmark["object"]["metadata"]["resourceVersion"],
        json!(rv.to_string())
    );
    let mut plain = WatchStream::open(
        &server,
        &format!("/api/v1/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=1"),
    );
    assert_eq!(
        plain.next(),
        None,
        "no bookmark, then a clean end at the timeout"
    );
}

#[test]
fn server_side_helpers_emit_watch_events() {
    let server = FakeServer::start();
    let mut watch = WatchStream::open(&server, "/api/v1/namespaces?watch=true");
    server.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "labels": {"team": "a"}}}));
    assert_eq!(
        event_summary(&watch.next().expect("added")),
        ("ADDED".into(), "n".into())
    );
    let mut changed = server.get("/api/v1/namespaces/n").expect("stored");
    changed["metadata"]["labels"]["team"] = json!("b");
    server.update(changed);
    assert_eq!(
        event_summary(&watch.next().expect("modified")),
        ("MODIFIED".into(), "n".into())
    );
    assert_eq!(server.list("/api/v1/namespaces").len(), 1);
    server.remove("/api/v1/namespaces/n");
    assert_eq!(
        event_summary(&watch.next().expect("deleted")),
        ("DELETED".into(), "n".into())
    );
    assert!(server.list("/api/v1/namespaces").is_empty());
}

#[test]
fn dropping_the_server_ends_open_watches_and_closes_the_listener() {
    let server = FakeServer::start();
    let address = server.url().replace("http://", "");
    let mut watch = WatchStream::open(&server, "/api/v1/configmaps?watch=true");
    drop(server);
    assert_eq!(watch.next(), None);
    assert!(std::net::TcpStream::connect(address).is_err());
}

#[test]
fn selector_watches_see_objects_enter_and_leave() {
    let server = FakeServer::start();
    let mut watch = WatchStream::open(
        &server,
        "/api/v1/configmaps?watch=true&labelSelector=app%3Dx",
    );
    server.insert(configmap("a", "other", json!({"app": "y"})));
    let mut object = server.insert(configmap("a", "x", json!({"app": "x"})));
    assert_eq!(
        event_summary(&watch.next().expect("added")),
        ("ADDED".into(), "x".into())
    );
    object["metadata"]["labels"]["app"] = json!("y");
    let object = server.update(object);
    assert_eq!(
        event_summary(&watch.next().expect("left")),
        ("DELETED".into(), "x".into())
    );
    let mut back = object.clone();
    back["metadata"]["labels"]["app"] = json!("x");
    server.update(back);
    assert_eq!(
        event_summary(&watch.next().expect("entered")),
        ("ADDED".into(), "x".into())
    );
    assert!(server.requests().iter().all(|r| r.watch && r.status == 200));
}
