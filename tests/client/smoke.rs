//! Client smoke tests against a tiny scripted HTTP/1.1 responder on loopback.

use skiff::kube::api::{ConfigMap, ObjectMeta};
use skiff::kube::{Client, Config, Error, ListParams, WatchEvent, WatchParams, WriteGuard};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

mod responder;
use responder::{Responder, Seen, chunked, json};

const CONFIG_MAP: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-ca","namespace":"a","resourceVersion":"7"},"data":{"ca.crt":"x"}}"#;

#[test]
fn get_decodes_and_keep_alive_reuses_one_connection() {
    let server = Responder::start(|_, _| Some(json(200, "OK", CONFIG_MAP)));
    let client = server.client();
    smol::block_on(async {
        for _ in 0..3 {
            let cm: ConfigMap = client.get(Some("a"), "app-ca").await.unwrap();
            assert_eq!(cm.metadata.resource_version(), "7");
        }
    });
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
    let seen = server.seen();
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(|s| s.connection == 0));
    assert_eq!(
        seen[0].request_line,
        "GET /api/v1/namespaces/a/configmaps/app-ca HTTP/1.1"
    );
    assert!(
        seen[0]
            .headers
            .iter()
            .any(|h| h.eq_ignore_ascii_case("accept: application/json"))
    );
}

#[test]
fn conflict_status_becomes_an_api_error() {
    let status = r#"{"kind":"Status","status":"Failure","reason":"Conflict","message":"the object has been modified","code":409}"#;
    let server = Responder::start(move |_, _| Some(json(409, "Conflict", status)));
    let mut cm = ConfigMap {
        metadata: ObjectMeta::named(Some("a"), "app-ca"),
        ..ConfigMap::default()
    };
    cm.metadata.resource_version = Some("3".into());
    let err = smol::block_on(server.client().replace(&cm)).unwrap_err();
    assert!(err.is_conflict(), "{err}");
    let seen = server.seen();
    assert!(
        seen[0]
            .request_line
            .starts_with("PUT /api/v1/namespaces/a/configmaps/app-ca")
    );
    assert!(
        seen[0].body.contains(r#""resourceVersion":"3""#),
        "{}",
        seen[0].body
    );
}

#[test]
fn too_many_requests_is_retried_after_retry_after() {
    let server = Responder::start(|index, _| {
        Some(if index == 0 {
            "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n".into()
        } else {
            json(200, "OK", CONFIG_MAP)
        })
    });
    let started = Instant::now();
    let cm: ConfigMap = smol::block_on(server.client().get(Some("a"), "app-ca")).unwrap();
    assert_eq!(cm.metadata.name(), "app-ca");
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(server.seen().len(), 2);
}

#[test]
fn lease_client_gives_up_on_429_at_once() {
    let server = Responder::start(|_, _| {
        Some("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 5\r\nContent-Length: 0\r\n\r\n".into())
    });
    let url = format!("http://127.0.0.1:{}", server.port).parse().unwrap();
    let lease = Client::new(Config::new(url).for_leader_election(5.0, 10)).unwrap();
    let err = smol::block_on(lease.get::<ConfigMap>(Some("a"), "x")).unwrap_err();
    assert!(
        matches!(err, Error::Api { code: 429, retry_after: Some(d), .. } if d == Duration::from_secs(5))
    );
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn stalled_request_times_out_at_the_deadline_and_its_connection_is_not_reused() {
    let server = Responder::start(|index, _| (index > 0).then(|| json(200, "OK", CONFIG_MAP)));
    let client = server.client();
    smol::block_on(async {
        let deadline = Instant::now() + Duration::from_millis(300);
        let err = client
            .with_deadline(deadline)
            .get::<ConfigMap>(Some("a"), "x")
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Timeout(_)), "{err}");
        // A liveness bound, 10× the deadline: a timer fires late on a slow machine, never early.
        assert!(Instant::now() < deadline + Duration::from_secs(3));
        client.get::<ConfigMap>(Some("a"), "x").await.unwrap();
    });
    let seen = server.seen();
    assert_ne!(seen[0].connection, seen[1].connection);
}

struct Closed;
impl WriteGuard for Closed {
    fn check(&self, method: &str, _path: &str) -> Result<(), Error> {
        Err(Error::Refused(format!("fence closed: {method} refused")))
    }
}

#[test]
fn refused_write_sends_nothing_but_reads_still_go() {
    let server = Responder::start(|_, _| Some(json(200, "OK", CONFIG_MAP)));
    let client = server.client().with_write_guard(Arc::new(Closed));
    smol::block_on(async {
        let err = client
            .delete::<ConfigMap>(Some("a"), "app-ca", Some("7"))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Refused(_)), "{err}");
        client.get::<ConfigMap>(Some("a"), "app-ca").await.unwrap();
    });
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].request_line.starts_with("GET "));
}

#[test]
fn list_all_follows_continue_tokens() {
    let server = Responder::start(|_, seen| {
        let body = if seen.request_line.contains("continue=p2") {
            format!(r#"{{"metadata":{{"resourceVersion":"99"}},"items":[{CONFIG_MAP}]}}"#)
        } else {
            format!(
                r#"{{"metadata":{{"resourceVersion":"42","continue":"p2"}},"items":[{CONFIG_MAP},{CONFIG_MAP}]}}"#
            )
        };
        Some(json(200, "OK", &body))
    });
    let params = ListParams {
        limit: Some(2),
        ..ListParams::default()
    };
    let list = smol::block_on(server.client().list_all::<ConfigMap>(None, &params)).unwrap();
    assert_eq!(list.items.len(), 3);
    assert_eq!(list.metadata.resource_version.as_deref(), Some("42"));
    assert!(server.seen()[0].request_line.contains("limit=2"));
}

#[test]
fn watch_streams_chunked_events_on_its_own_connection() {
    let server = Responder::start(|_, seen| {
        if !seen.request_line.contains("watch=true") {
            return Some(json(200, "OK", CONFIG_MAP));
        }
        let events = [
            format!(r#"{{"type":"ADDED","object":{CONFIG_MAP}}}"#),
            r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"8"}}}"#.to_owned(),
            r#"{"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old"}}"#
                .to_owned(),
        ];
        let mut reply = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_owned();
        for event in events {
            let line = event + "\n";
            reply += &format!("{:x}\r\n{line}\r\n", line.len());
        }
        Some(reply + "0\r\n\r\n")
    });
    let client = server.client();
    smol::block_on(async {
        client.get::<ConfigMap>(Some("a"), "x").await.unwrap();
        let params = WatchParams {
            resource_version: Some("7".into()),
            allow_bookmarks: true,
            ..WatchParams::default()
        };
        let mut stream = client.watch::<ConfigMap>(Some("a"), &params).await.unwrap();
        assert!(matches!(
            stream.next().await,
            Some(Ok(WatchEvent::Added(_)))
        ));
        assert_eq!(
            stream.next().await,
            Some(Ok(WatchEvent::Bookmark {
                resource_version: "8".into()
            }))
        );
        assert_eq!(
            stream.next().await,
            Some(Err(Error::Expired("too old".into())))
        );
        assert_eq!(stream.next().await, None);
    });
    let seen = server.seen();
    assert_ne!(seen[0].connection, seen[1].connection);
    assert!(seen[1].request_line.contains("allowWatchBookmarks=true"));
}

#[test]
fn lease_client_never_uses_a_main_client_connection() {
    let server = Responder::start(|_, _| Some(json(200, "OK", CONFIG_MAP)));
    let main = server.client();
    let lease = Client::new(main.config().for_leader_election(5.0, 10)).unwrap();
    smol::block_on(async {
        main.get::<ConfigMap>(Some("a"), "x").await.unwrap();
        lease.get::<ConfigMap>(Some("a"), "x").await.unwrap();
        main.get::<ConfigMap>(Some("a"), "x").await.unwrap();
        lease.get::<ConfigMap>(Some("a"), "x").await.unwrap();
    });
    let seen = server.seen();
    let agent = |s: &Seen| {
        s.headers
            .iter()
            .find(|h| h.to_ascii_lowercase().starts_with("user-agent:"))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(seen[0].connection, seen[2].connection);
    assert_eq!(seen[1].connection, seen[3].connection);
    assert_ne!(seen[0].connection, seen[1].connection);
    assert!(agent(&seen[1]).contains("skiff/leader-election"));
}

#[test]
fn chunked_replies_leave_the_connection_reusable() {
    let server = Responder::start(|index, _| {
        Some(if index % 2 == 0 {
            chunked(CONFIG_MAP)
        } else {
            json(200, "OK", CONFIG_MAP)
        })
    });
    let client = server.client();
    smol::block_on(async {
        for _ in 0..4 {
            let cm: ConfigMap = client.get(Some("a"), "app-ca").await.unwrap();
            assert_eq!(cm.data["ca.crt"], "x");
        }
    });
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
    assert_eq!(client.idle_connections(), 1);
}

#[test]
fn server_closing_an_idle_connection_is_survived_by_a_get() {
    // Every reply says the server will close; the next GET must dial again, not fail.
    let server = Responder::start(|_, _| {
        let body = CONFIG_MAP;
        Some(format!(
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ))
    });
    let client = server.client();
    smol::block_on(async {
        client.get::<ConfigMap>(Some("a"), "x").await.unwrap();
        client.get::<ConfigMap>(Some("a"), "x").await.unwrap();
    });
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
}

#[test]
fn client_futures_can_be_spawned() {
    fn assert_send<T: Send>(_: &T) {}
    let client = Client::new(Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap();
    assert_send(&client.get::<ConfigMap>(None, "x"));
    assert_send(&client.watch::<ConfigMap>(None, &WatchParams::default()));
    assert_send(&client.patch_merge::<ConfigMap>(None, "x", &serde_json::json!({})));
}

#[test]
fn get_on_a_pooled_connection_the_server_dropped_is_redialed() {
    let server = Responder::start(|_, _| {
        let body = CONFIG_MAP;
        Some(format!(
            "HTTP/1.1 200 OK\r\nX-Test-Hang-Up: yes\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ))
    });
    let client = server.client();
    smol::block_on(async {
        client.get::<ConfigMap>(Some("a"), "x").await.unwrap();
        // At once: the hang-up has not happened yet, so the request is sent on a socket the
        // server then closes without answering.
        client.get::<ConfigMap>(Some("a"), "x").await.unwrap();
        smol::Timer::after(Duration::from_millis(150)).await;
        // Later: the pool notices the closed socket before using it.
        client.get::<ConfigMap>(Some("a"), "x").await.unwrap();
    });
    assert_eq!(server.seen().len(), 3);
}

#[test]
fn rate_limit_wait_past_the_deadline_is_refused_and_nothing_is_sent() {
    let server = Responder::start(|_, _| Some(json(200, "OK", CONFIG_MAP)));
    let url = format!("http://127.0.0.1:{}", server.port).parse().unwrap();
    let mut config = Config::new(url);
    // A token every 100 s: the next one is always past a deadline 100 ms away.
    (config.qps, config.burst) = (0.01, 1);
    let client = Client::new(config).unwrap();
    smol::block_on(async {
        client.get::<ConfigMap>(Some("a"), "x").await.unwrap();
        let deadline = Instant::now() + Duration::from_millis(100);
        let err = client
            .with_deadline(deadline)
            .get::<ConfigMap>(Some("a"), "x")
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::Refused(m) if m.contains("rate limiter")),
            "{err}"
        );
    });
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn garbage_reply_is_a_decode_error() {
    let server = Responder::start(|_, _| Some(json(200, "OK", "{not json")));
    let err = smol::block_on(server.client().get::<ConfigMap>(Some("a"), "x")).unwrap_err();
    assert!(
        matches!(&err, Error::Decode(m) if m.contains("{not json")),
        "{err}"
    );
}

#[test]
fn stalled_watch_head_times_out() {
    let server = Responder::start(|_, _| None);
    let client = server
        .client()
        .with_deadline(Instant::now() + Duration::from_millis(200));
    let err = smol::block_on(client.watch::<ConfigMap>(None, &WatchParams::default()))
        .err()
        .unwrap();
    assert!(matches!(err, Error::Timeout(_)), "{err}");
}
