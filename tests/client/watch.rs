//! Watching through the API client against the fake API server: resuming after a dropped
//! connection from the last resourceVersion, 410 as `Error::Expired`, bookmarks, and spoiled
//! replies that end the stream with an error.

use crate::support::fake::{FakeServer, Fault, RequestClass};
use skiff::kube::api::{ConfigMap, ObjectMeta};
use skiff::kube::{Client, Error, ListParams, WatchEvent, WatchParams, WatchStream};
use std::time::Duration;

/// How long a test waits for an event that should come: a liveness bound for what takes
/// milliseconds, not a speed goal.
const EVENT_WAIT: Duration = Duration::from_secs(10);
/// How long a faulty server is given to send bookmarks nobody asked for, before the marker
/// event that must come next. A slow machine only gives it longer.
const BOOKMARK_CHANCE: Duration = Duration::from_millis(300);

fn client_for(server: &FakeServer) -> Client {
    Client::new(server.config()).expect("client")
}

fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta::named(Some("w"), name),
        ..ConfigMap::default()
    }
}

fn watch_from(resource_version: &str) -> WatchParams {
    WatchParams {
        resource_version: Some(resource_version.to_owned()),
        ..WatchParams::default()
    }
}

/// The next item of `stream`, or `Err(())` when nothing came within `limit`.
async fn next_within(
    stream: &mut WatchStream<ConfigMap>,
    limit: Duration,
) -> Result<Option<Result<WatchEvent<ConfigMap>, Error>>, ()> {
    let next = async { Ok(stream.next().await) };
    let timer = async {
        smol::Timer::after(limit).await;
        Err(())
    };
    smol::future::or(next, timer).await
}

async fn next_event(stream: &mut WatchStream<ConfigMap>) -> WatchEvent<ConfigMap> {
    match next_within(stream, EVENT_WAIT).await {
        Ok(Some(Ok(event))) => event,
        other => panic!("expected an event, got {other:?}"),
    }
}

/// A short name and resourceVersion of an object event, e.g. ("ADDED cm-1", "12").
fn describe(event: &WatchEvent<ConfigMap>) -> (String, String) {
    let (kind, object) = match event {
        WatchEvent::Added(o) => ("ADDED", o),
        WatchEvent::Modified(o) => ("MODIFIED", o),
        WatchEvent::Deleted(o) => ("DELETED", o),
        WatchEvent::Bookmark { .. } => panic!("unexpected bookmark"),
    };
    (
        format!("{kind} {}", object.metadata.name()),
        object.metadata.resource_version().to_owned(),
    )
}

#[test]
fn watch_resumes_after_a_reset_without_losing_or_repeating_events() {
    resumes_after_a_reset(FakeServer::start());
}

#[test]
fn watch_over_tls_resumes_after_a_reset_without_losing_or_repeating_events() {
    resumes_after_a_reset(FakeServer::start_tls());
}

/// Two events, a dropped connection, three changes while no watch is open, a watch from the
/// last resourceVersion seen: exactly those five events, in order.
fn resumes_after_a_reset(server: FakeServer) {
    let client = client_for(&server);
    smol::block_on(async {
        client.create(&config_map("before")).await.unwrap();
        let list = client
            .list::<ConfigMap>(Some("w"), &ListParams::default())
            .await
            .unwrap();
        let listed_rv = list.metadata.resource_version.clone().unwrap();
        let mut stream = client
            .watch::<ConfigMap>(Some("w"), &watch_from(&listed_rv))
            .await
            .unwrap();
        client.create(&config_map("cm-1")).await.unwrap();
        client.create(&config_map("cm-2")).await.unwrap();
        let mut seen = Vec::new();
        let mut last_rv = listed_rv;
        for _ in 0..2 {
            let (event, rv) = describe(&next_event(&mut stream).await);
            seen.push(event);
            last_rv = rv;
        }

        server.close_watches();
        // The dropped stream ends: perhaps with a transport error, then for good.
        let mut ended = false;
        for _ in 0..2 {
            match next_within(&mut stream, EVENT_WAIT).await {
                Ok(None) => {
                    ended = true;
                    break;
                }
                Ok(Some(Err(e))) => assert!(matches!(e, Error::Transport(_)), "{e}"),
                other => panic!("a dropped watch must end, got {other:?}"),
            }
        }
        assert!(ended, "the stream ends after its connection is dropped");

        // Changes while no watch is open.
        client.create(&config_map("cm-3")).await.unwrap();
        let mut cm1: ConfigMap = client.get(Some("w"), "cm-1").await.unwrap();
        cm1.data.insert("k".into(), "v".into());
        client.replace(&cm1).await.unwrap();
        client
            .delete::<ConfigMap>(Some("w"), "cm-2", None)
            .await
            .unwrap();

        let mut resumed = client
            .watch::<ConfigMap>(Some("w"), &watch_from(&last_rv))
            .await
            .unwrap();
        // A marker after the changes: the next event after them must be its, nothing between.
        client.create(&config_map("marker")).await.unwrap();
        for _ in 0..4 {
            seen.push(describe(&next_event(&mut resumed).await).0);
        }
        assert_eq!(
            seen,
            [
                "ADDED cm-1",
                "ADDED cm-2",
                "ADDED cm-3",
                "MODIFIED cm-1",
                "DELETED cm-2",
                "ADDED marker"
            ]
        );
    });
    let watches = server.requests().iter().filter(|r| r.watch).count();
    assert_eq!(watches, 2);
}

#[test]
fn watch_from_a_compacted_version_is_reported_as_expired() {
    let server = FakeServer::start();
    let client = client_for(&server);
    smol::block_on(async {
        let old = client.create(&config_map("old")).await.unwrap();
        let old_rv = old.metadata.resource_version().to_owned();
        client.create(&config_map("newer")).await.unwrap();
        server.compact();
        let error = match client
            .watch::<ConfigMap>(Some("w"), &watch_from(&old_rv))
            .await
        {
            Err(e) => e,
            Ok(mut stream) => {
                let first = next_within(&mut stream, EVENT_WAIT).await;
                let Ok(Some(Err(e))) = first else {
                    panic!("expected an error event, got {first:?}");
                };
                let after = next_within(&mut stream, EVENT_WAIT).await;
                assert!(matches!(after, Ok(None)), "stream ends: {after:?}");
                e
            }
        };
        assert!(matches!(error, Error::Expired(_)), "{error:?}");
        assert_eq!(error.code(), Some(410));
        assert!(!error.is_retryable(), "410 means re-list, not retry");
    });
}

#[test]
fn bookmarks_arrive_as_bookmark_events_with_the_current_version() {
    let server = FakeServer::start();
    server.set_bookmark_interval(Duration::from_millis(50));
    let client = client_for(&server);
    smol::block_on(async {
        let created = client.create(&config_map("marked")).await.unwrap();
        let rv = created.metadata.resource_version().to_owned();
        let params = WatchParams {
            allow_bookmarks: true,
            ..watch_from(&rv)
        };
        let mut stream = client.watch::<ConfigMap>(Some("w"), &params).await.unwrap();
        match next_event(&mut stream).await {
            WatchEvent::Bookmark { resource_version } => assert_eq!(resource_version, rv),
            other => panic!("expected a bookmark, got {other:?}"),
        }
    });
    let watch = server
        .requests()
        .into_iter()
        .find(|r| r.watch)
        .expect("a watch request");
    assert!(
        watch.query.contains("allowWatchBookmarks=true"),
        "{watch:?}"
    );
}

#[test]
fn watch_without_bookmarks_asked_gets_none() {
    let server = FakeServer::start();
    server.set_bookmark_interval(Duration::from_millis(20));
    let client = client_for(&server);
    smol::block_on(async {
        let created = client.create(&config_map("plain")).await.unwrap();
        let rv = created.metadata.resource_version();
        let mut stream = client
            .watch::<ConfigMap>(Some("w"), &watch_from(rv))
            .await
            .unwrap();
        smol::Timer::after(BOOKMARK_CHANCE).await;
        client.create(&config_map("marker")).await.unwrap();
        let next = describe(&next_event(&mut stream).await).0;
        assert_eq!(next, "ADDED marker", "a bookmark came first");
    });
}

/// A watch whose reply `fault` spoils ends with an error at once, then for good.
fn spoiled_watch_ends_with_an_error(fault: Fault) -> Error {
    let server = FakeServer::start();
    server.set_fault_times(RequestClass::Other, fault, 1);
    let client = client_for(&server);
    smol::block_on(async {
        let mut stream = client
            .watch::<ConfigMap>(Some("w"), &WatchParams::default())
            .await
            .unwrap();
        let first = next_within(&mut stream, EVENT_WAIT).await;
        let Ok(Some(Err(error))) = first else {
            panic!("expected an error, got {first:?}");
        };
        let after = next_within(&mut stream, EVENT_WAIT).await;
        assert!(matches!(after, Ok(None)), "the stream ends: {after:?}");
        error
    })
}

#[test]
fn watch_reset_mid_body_is_a_transport_error() {
    let error = spoiled_watch_ends_with_an_error(Fault::ResetMidBody);
    assert!(matches!(error, Error::Transport(_)), "{error:?}");
}

#[test]
fn watch_truncated_chunk_is_a_transport_error() {
    let error = spoiled_watch_ends_with_an_error(Fault::TruncatedChunk);
    assert!(matches!(error, Error::Transport(_)), "{error:?}");
}

#[test]
fn watch_answered_with_garbage_is_an_error() {
    let error = spoiled_watch_ends_with_an_error(Fault::Garbage);
    assert!(
        matches!(error, Error::Decode(_) | Error::Transport(_)),
        "{error:?}"
    );
}
