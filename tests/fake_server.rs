//! Self-tests of the fake API server, through a minimal HTTP client written here (async-h1 over
//! a plain or TLS TCP stream).

mod support;

use http_types::{Method, Request, Response, Url};
use serde_json::{Value, json};
use smol::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use smol::net::TcpStream;
use smol::{Timer, future::FutureExt};
use std::time::Duration;
use support::fake::{FakeServer, Fault, RequestClass};

/// Longest a test waits for one answer or event before failing.
const PATIENCE: Duration = Duration::from_secs(5);

fn address(server: &FakeServer) -> String {
    let url = server.url();
    url.split("://").nth(1).unwrap_or_default().to_string()
}

fn request(server: &FakeServer, method: Method, path: &str, body: Option<&Value>) -> Request {
    let url = Url::parse(&format!("{}{path}", server.url())).expect("test URL");
    let mut request = Request::new(method, url);
    if let Some(body) = body {
        request.set_body(body.to_string());
        let content_type = if method == Method::Patch {
            "application/merge-patch+json"
        } else {
            "application/json"
        };
        request.insert_header("Content-Type", content_type);
    }
    request
}

async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    future
        .or(async {
            Timer::after(PATIENCE).await;
            panic!("no answer within {PATIENCE:?}")
        })
        .await
}

/// Sends one request on `stream` and reads the whole answer: (status, JSON body, response).
async fn exchange<S>(stream: S, request: Request) -> (u16, Value, Response)
where
    S: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static,
{
    within(async {
        let mut response = async_h1::connect(stream, request)
            .await
            .expect("HTTP exchange");
        let text = response.body_string().await.expect("response body");
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        (u16::from(response.status()), body, response)
    })
    .await
}

/// One request on a fresh connection.
fn call(server: &FakeServer, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    smol::block_on(async {
        let stream = TcpStream::connect(address(server)).await.expect("connect");
        let (status, body, _) =
            exchange(stream, request(server, method, path, body.as_ref())).await;
        (status, body)
    })
}

fn configmap(namespace: &str, name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": namespace, "labels": labels},
           "data": {"k": "v"}})
}

fn names(items: &Value) -> Vec<String> {
    items["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| {
                    i["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A watch stream opened with a raw request; events are read line by line.
struct WatchStream(BufReader<Response>);

impl WatchStream {
    fn open(server: &FakeServer, path_and_query: &str) -> WatchStream {
        smol::block_on(async {
            let stream = TcpStream::connect(address(server)).await.expect("connect");
            let response = within(async_h1::connect(
                stream,
                request(server, Method::Get, path_and_query, None),
            ))
            .await
            .expect("watch request");
            assert_eq!(u16::from(response.status()), 200);
            WatchStream(BufReader::new(response))
        })
    }

    /// The next event, or `None` when the stream ended.
    fn next(&mut self) -> Option<Value> {
        smol::block_on(within(async {
            let mut line = String::new();
            match self.0.read_line(&mut line).await {
                Ok(0) | Err(_) => None,
                Ok(_) => Some(serde_json::from_str(&line).expect("watch line is JSON")),
            }
        }))
    }
}

fn event_summary(event: &Value) -> (String, String) {
    (
        event["type"].as_str().unwrap_or_default().to_string(),
        event["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

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
fn faults_apply_by_class_and_count_down() {
    let server = FakeServer::start();
    let lease = "/apis/coordination.k8s.io/v1/namespaces/a/leases/l";
    server.set_fault_times(RequestClass::Lease, Fault::ServerError, 2);
    assert_eq!(
        call(
            &server,
            Method::Get,
            "/api/v1/namespaces/a/configmaps/x",
            None
        )
        .0,
        404
    );
    assert_eq!(call(&server, Method::Get, lease, None).0, 500);
    assert_eq!(call(&server, Method::Get, lease, None).0, 500);
    assert_eq!(call(&server, Method::Get, lease, None).0, 404);
    server.set_fault(
        RequestClass::Other,
        Fault::TooManyRequests {
            retry_after_secs: 7,
        },
    );
    let retry_after = smol::block_on(async {
        let stream = TcpStream::connect(address(&server)).await.expect("connect");
        let (status, _, response) = exchange(
            stream,
            request(&server, Method::Get, "/api/v1/configmaps", None),
        )
        .await;
        assert_eq!(status, 429);
        response
            .header("Retry-After")
            .map(|value| value.as_str().to_string())
    });
    assert_eq!(retry_after.as_deref(), Some("7"));
    assert_eq!(
        call(&server, Method::Get, "/api/v1/configmaps", None).0,
        429,
        "still on"
    );
    assert_eq!(
        call(&server, Method::Get, lease, None).0,
        404,
        "leases unaffected"
    );
    server.clear_faults();
    assert_eq!(
        call(&server, Method::Get, "/api/v1/configmaps", None).0,
        200
    );
    let classes: Vec<RequestClass> = server.requests().iter().map(|r| r.class).collect();
    assert_eq!(classes[..2], [RequestClass::Other, RequestClass::Lease]);
}

/// Sends raw bytes and reads until the server closes.
fn raw(server: &FakeServer, text: &str) -> Vec<u8> {
    smol::block_on(within(async {
        let mut stream = TcpStream::connect(address(server)).await.expect("connect");
        stream.write_all(text.as_bytes()).await.expect("send");
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        answer
    }))
}

#[test]
fn broken_answers_are_broken_as_asked() {
    let server = FakeServer::start();
    server.insert(configmap("a", "x", json!({})));
    let get = "GET /api/v1/namespaces/a/configmaps/x HTTP/1.1\r\nHost: x\r\n\r\n";
    server.set_fault_times(RequestClass::All, Fault::Reset, 1);
    assert!(raw(&server, get).is_empty());
    server.set_fault_times(RequestClass::All, Fault::ResetMidBody, 1);
    let text = String::from_utf8_lossy(&raw(&server, get)).to_string();
    let (head, body) = text.split_once("\r\n\r\n").expect("a head was sent");
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .and_then(|l| l.parse().ok())
        .expect("length");
    assert!(body.len() < length && !body.is_empty());
    server.set_fault_times(RequestClass::All, Fault::TruncatedChunk, 1);
    let text = String::from_utf8_lossy(&raw(&server, get)).to_string();
    assert!(text.contains("Transfer-Encoding: chunked") && !text.ends_with("0\r\n\r\n"));
    assert!(
        serde_json::from_str::<Value>(
            text.lines()
                .find(|l| l.starts_with('{'))
                .expect("half a line")
        )
        .is_err()
    );
    server.set_fault_times(RequestClass::All, Fault::Garbage, 1);
    let text = String::from_utf8_lossy(&raw(
        &server,
        &get.replace("x\r\n\r\n", "x\r\nConnection: close\r\n\r\n"),
    ))
    .to_string();
    assert!(text.starts_with("HTTP/1.1 200") && text.contains("application/json"));
    assert!(
        serde_json::from_str::<Value>(text.split_once("\r\n\r\n").map(|p| p.1).unwrap_or(""))
            .is_err()
    );
    let statuses: Vec<u16> = server.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [0, 200, 200, 200]);
}

#[test]
fn stalled_request_is_never_answered() {
    let server = FakeServer::start();
    server.set_fault_times(RequestClass::Other, Fault::Stall, 1);
    let answered = smol::block_on(async {
        let mut stream = TcpStream::connect(address(&server)).await.expect("connect");
        stream
            .write_all(b"GET /api/v1/configmaps HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("send");
        let mut byte = [0u8; 1];
        let read = async { Some(stream.read(&mut byte).await) };
        read.or(async {
            Timer::after(Duration::from_millis(300)).await;
            None
        })
        .await
    });
    assert!(answered.is_none(), "stall must not answer");
    let record = &server.requests()[0];
    assert_eq!((record.status, record.answered), (0, None));
}

#[test]
fn connection_ids_follow_tcp_connections() {
    let server = FakeServer::start();
    smol::block_on(async {
        let stream = TcpStream::connect(address(&server)).await.expect("connect");
        exchange(
            stream.clone(),
            request(&server, Method::Get, "/api/v1/configmaps", None),
        )
        .await;
        exchange(
            stream,
            request(&server, Method::Get, "/api/v1/namespaces", None),
        )
        .await;
    });
    call(&server, Method::Get, "/api/v1/configmaps", None);
    let ids: Vec<u64> = server.requests().iter().map(|r| r.conn_id).collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[0], ids[1], "keep-alive requests share a connection id");
    assert_ne!(ids[1], ids[2], "a new connection gets a new id");
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.status == 200 && r.answered.is_some())
    );
}

#[test]
fn tokens_are_required_once_asked_for() {
    let server = FakeServer::start();
    server.require_token("secret");
    let (status, error) = call(&server, Method::Get, "/api/v1/configmaps", None);
    assert_eq!(
        (status, error["reason"].as_str()),
        (401, Some("Unauthorized"))
    );
    let status = smol::block_on(async {
        let stream = TcpStream::connect(address(&server)).await.expect("connect");
        let mut authorized = request(&server, Method::Get, "/api/v1/configmaps", None);
        authorized.insert_header("Authorization", "Bearer secret");
        exchange(stream, authorized).await.0
    });
    assert_eq!(status, 200);
}

#[test]
fn tls_server_is_trusted_through_its_ca() {
    let server = FakeServer::start_tls();
    assert!(server.url().starts_with("https://127.0.0.1:"));
    server.insert(configmap("a", "x", json!({})));
    let ca = server.ca_pem().expect("a CA for TLS servers");
    let (status, body) = smol::block_on(async {
        let tcp = TcpStream::connect(address(&server)).await.expect("connect");
        let connector = async_native_tls::TlsConnector::new()
            .add_root_certificate(async_native_tls::Certificate::from_pem(&ca).expect("CA PEM"));
        let tls = connector
            .connect("127.0.0.1", tcp)
            .await
            .expect("TLS handshake with the generated CA");
        let (status, body, _) = exchange(
            tls,
            request(
                &server,
                Method::Get,
                "/api/v1/namespaces/a/configmaps/x",
                None,
            ),
        )
        .await;
        (status, body)
    });
    assert_eq!(
        (status, body["metadata"]["name"].as_str()),
        (200, Some("x"))
    );
    let untrusted = smol::block_on(async {
        let tcp = TcpStream::connect(address(&server)).await.expect("connect");
        async_native_tls::TlsConnector::new()
            .connect("127.0.0.1", tcp)
            .await
            .is_ok()
    });
    assert!(
        !untrusted,
        "the server certificate is not trusted without the CA"
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
