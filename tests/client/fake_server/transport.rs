//! Self-tests of the fake server's transport: fault injection, connection ids, tokens, TLS.

use super::client::{address, call, configmap, exchange, raw, request};
use crate::support::fake::{FakeServer, Fault, RequestClass};
use http_types::Method;
use serde_json::{Value, json};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::TcpStream;
use smol::{Timer, future::FutureExt};
use std::time::Duration;

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

/// Concurrent connections served at once (the fake must not need a thread per connection).
const CONCURRENT_CONNECTIONS: usize = 300;

#[test]
fn many_concurrent_connections_are_all_answered() {
    let server = FakeServer::start();
    server.set_fault(RequestClass::All, Fault::Delay(Duration::from_millis(200)));
    let statuses = smol::block_on(async {
        let calls: Vec<_> = (0..CONCURRENT_CONNECTIONS)
            .map(|_| {
                let address = address(&server);
                let request = request(&server, Method::Get, "/api/v1/configmaps", None);
                smol::spawn(async move {
                    let stream = TcpStream::connect(address).await.expect("connect");
                    exchange(stream, request).await.0
                })
            })
            .collect();
        let mut statuses = Vec::new();
        for call in calls {
            statuses.push(call.await);
        }
        statuses
    });
    assert_eq!(statuses, vec![200; CONCURRENT_CONNECTIONS]);
    let requests = server.requests();
    let first = requests.iter().map(|r| r.received).min().expect("requests");
    let last = requests
        .iter()
        .filter_map(|r| r.answered)
        .max()
        .expect("answers");
    // One after another, the delays would take 60 s; overlapping, 200 ms. 20 s is a liveness
    // bound between the two.
    assert!(
        last - first < Duration::from_secs(20),
        "delays did not overlap: {:?}",
        last - first
    );
}
