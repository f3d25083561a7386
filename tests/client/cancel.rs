//! A client told to cancel (shutdown): waits end at once and nothing more is sent, but a
//! request already on the wire runs to its reply, so no write lands after the caller stopped.

use crate::support::fake::{FakeServer, Fault, RequestClass};
use crate::support::skiff::eventually;
use serde_json::json;
use skiff::kube::api::ConfigMap;
use skiff::kube::{Client, Error};
use skiff::signal::signal;
use std::time::{Duration, Instant};

/// How long "at once" may take: a liveness bound for what takes milliseconds, and far below
/// the waits the tests make the client face (100 s for a token, 60 s of Retry-After).
const AT_ONCE: Duration = Duration::from_secs(10);

fn client(server: &FakeServer, qps: f32, burst: u32) -> Client {
    let mut config = server.config();
    config.qps = qps;
    config.burst = burst;
    Client::new(config).expect("client")
}

fn seed(server: &FakeServer) {
    server.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "app", "namespace": "a"}, "data": {"k": "v"}}));
}

fn gets(server: &FakeServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/configmaps/app"))
        .count()
}

#[test]
fn a_request_waiting_for_the_rate_limiter_is_refused_at_once_and_never_sent() {
    let server = FakeServer::start();
    seed(&server);
    let (trigger, cancel) = signal();
    // A token every 100 s.
    let client = client(&server, 0.01, 1).with_cancel(cancel);
    smol::block_on(async {
        client
            .get::<ConfigMap>(Some("a"), "app")
            .await
            .expect("the burst token");
        let waiting = smol::spawn({
            let client = client.clone();
            async move { client.get::<ConfigMap>(Some("a"), "app").await }
        });
        // Whether the request is already waiting or not yet: refused either way.
        smol::Timer::after(Duration::from_millis(100)).await;
        let fired = Instant::now();
        trigger.fire();
        let result = waiting.await;
        assert!(
            matches!(result, Err(Error::Refused(ref m)) if m.contains("shutting down")),
            "{result:?}"
        );
        assert!(
            fired.elapsed() < AT_ONCE,
            "waited for the token: {:?}",
            fired.elapsed()
        );
    });
    assert_eq!(gets(&server), 1, "the cancelled request reached the server");
}

#[test]
fn a_429_back_off_ends_at_the_cancel_with_the_429() {
    let server = FakeServer::start();
    seed(&server);
    server.set_fault(
        RequestClass::Other,
        Fault::TooManyRequests {
            retry_after_secs: 60,
        },
    );
    let (trigger, cancel) = signal();
    let client = client(&server, 100.0, 100).with_cancel(cancel);
    let request = smol::spawn({
        let client = client.clone();
        async move { client.get::<ConfigMap>(Some("a"), "app").await }
    });
    let answered = eventually(AT_ONCE, || {
        server.requests().iter().any(|r| r.status == 429)
    });
    assert!(answered, "no 429");
    let fired = Instant::now();
    trigger.fire();
    let result = smol::block_on(request);
    assert_eq!(
        result.as_ref().err().and_then(Error::code),
        Some(429),
        "{result:?}"
    );
    assert!(
        fired.elapsed() < AT_ONCE,
        "waited out Retry-After: {:?}",
        fired.elapsed()
    );
    assert_eq!(gets(&server), 1, "retried after the cancel");
}

#[test]
fn a_request_already_sent_runs_to_its_reply() {
    let server = FakeServer::start();
    seed(&server);
    let (release, held) = smol::channel::bounded::<()>(1);
    server.set_fault(RequestClass::Other, Fault::Hold(held));
    let (trigger, cancel) = signal();
    let client = client(&server, 100.0, 100).with_cancel(cancel);
    let request = smol::spawn({
        let client = client.clone();
        async move { client.get::<ConfigMap>(Some("a"), "app").await }
    });
    let on_the_wire = eventually(AT_ONCE, || gets(&server) == 1);
    assert!(on_the_wire, "the request never reached the server");
    trigger.fire();
    drop(release);
    let result = smol::block_on(request);
    assert_eq!(
        result.expect("the reply").data.get("k").map(String::as_str),
        Some("v")
    );
}
