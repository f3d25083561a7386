//! The API client against a misbehaving fake API server: 429s and Retry-After, a wrong token,
//! an untrusted CA, garbage and reset replies, a stalled server: each ends in an error that
//! names the problem, quickly. And the lease client keeps renewing, on connections of its own,
//! while the main client is throttled or stalled.

use crate::support::fake::{FakeServer, Fault, RequestClass};
use serde_json::json;
use skiff::kube::api::{ConfigMap, Lease};
use skiff::kube::{Auth, Client, Error, WatchParams};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Lease client limits: the `--leader-elect-qps` / `--leader-elect-burst` defaults.
const LEASE_QPS: f32 = 5.0;
const LEASE_BURST: u32 = 10;
/// A short request timeout for the stall tests.
const SHORT_TIMEOUT: Duration = Duration::from_millis(300);
/// How late a timeout may fire and still count as the short one: 10× it, a liveness bound
/// (a slow machine delays a timer, never speeds it up), and far below the 30 s default a client
/// that ignored the short one would wait.
const TIMEOUT_LIVENESS: Duration = Duration::from_secs(3);
/// How long a lease request may take on its own connections: a liveness bound for a loopback
/// request that takes milliseconds. One queued behind the main client's bucket (1 QPS, about
/// 2,000 requests ahead) would need half an hour, so its deadline refuses it at once.
const LEASE_LIVENESS: Duration = Duration::from_secs(10);

fn client_for(server: &FakeServer) -> Client {
    Client::new(server.config()).expect("client")
}

fn insert_config_map(server: &FakeServer) {
    server.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "app", "namespace": "a"}, "data": {"k": "v"}}));
}

fn insert_lease(server: &FakeServer) {
    server.insert(
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "skiff-leader", "namespace": "a"},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}}),
    );
}

fn get_config_map(client: &Client) -> Result<ConfigMap, Error> {
    smol::block_on(client.get::<ConfigMap>(Some("a"), "app"))
}

#[test]
fn too_many_requests_is_retried_after_retry_after() {
    let server = FakeServer::start();
    insert_config_map(&server);
    server.set_fault_times(
        RequestClass::Other,
        Fault::TooManyRequests {
            retry_after_secs: 1,
        },
        1,
    );
    let cm = get_config_map(&client_for(&server)).unwrap();
    assert_eq!(cm.data["k"], "v");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!((requests[0].status, requests[1].status), (429, 200));
    let gap = requests[1].received - requests[0].received;
    assert!(gap >= Duration::from_secs(1), "retried after only {gap:?}");
}

#[test]
fn main_client_gives_up_after_a_bounded_number_of_429s() {
    let server = FakeServer::start();
    insert_config_map(&server);
    server.set_fault(
        RequestClass::Other,
        Fault::TooManyRequests {
            retry_after_secs: 0,
        },
    );
    let config = server.config();
    let retries = config.retries_on_429;
    let err = get_config_map(&Client::new(config).unwrap()).unwrap_err();
    assert_eq!(err.code(), Some(429), "{err}");
    assert_eq!(server.requests().len(), retries as usize + 1);
}

#[test]
fn lease_client_does_not_retry_429() {
    let server = FakeServer::start();
    insert_lease(&server);
    // A Retry-After of 30 s: a client that waited it out would take that long, one that did
    // not takes milliseconds; the bound between is a liveness bound.
    server.set_fault_times(
        RequestClass::Lease,
        Fault::TooManyRequests {
            retry_after_secs: 30,
        },
        1,
    );
    let lease_client =
        Client::new(server.config().for_leader_election(LEASE_QPS, LEASE_BURST)).unwrap();
    let started = Instant::now();
    let err = smol::block_on(lease_client.get::<Lease>(Some("a"), "skiff-leader")).unwrap_err();
    assert_eq!(err.code(), Some(429), "{err}");
    assert!(started.elapsed() < Duration::from_secs(30), "it waited");
    assert_eq!(server.requests().len(), 1);
    assert!(matches!(
        err,
        Error::Api {
            retry_after: Some(d),
            ..
        } if d == Duration::from_secs(30)
    ));
}

#[test]
fn server_error_is_an_api_error_with_its_code() {
    let server = FakeServer::start();
    insert_config_map(&server);
    server.set_fault_times(RequestClass::Other, Fault::ServerError, 1);
    let err = get_config_map(&client_for(&server)).unwrap_err();
    assert_eq!(err.code(), Some(500), "{err}");
    assert!(err.is_retryable());
}

#[test]
fn wrong_token_is_reported_as_wrong_or_expired() {
    let server = FakeServer::start();
    insert_config_map(&server);
    server.require_token("the-right-token");
    let mut config = server.config();
    config.auth = Auth::Token("an-expired-token".into());
    let err = get_config_map(&Client::new(config).unwrap()).unwrap_err();
    assert_eq!(err.code(), Some(401), "{err}");
    let message = err.to_string();
    assert!(message.contains("token"), "{message}");
    assert!(message.contains("wrong or expired"), "{message}");
    assert!(
        !message.contains("an-expired-token"),
        "the token leaked: {message}"
    );

    let mut config = server.config();
    config.auth = Auth::Token("the-right-token".into());
    assert!(get_config_map(&Client::new(config).unwrap()).is_ok());
}

#[test]
fn a_ca_that_did_not_sign_the_server_is_a_certificate_error() {
    let server = FakeServer::start_tls();
    let stranger = FakeServer::start_tls();
    let mut config = server.config();
    config.tls.ca_pem = stranger.ca_pem();
    let err = get_config_map(&Client::new(config).unwrap()).unwrap_err();
    let Error::Transport(message) = &err else {
        panic!("expected a transport error, got {err:?}");
    };
    assert!(message.contains("certificate"), "{message}");
    assert!(server.requests().is_empty(), "nothing was sent");
}

#[test]
fn garbage_json_is_a_decode_error() {
    let server = FakeServer::start();
    insert_config_map(&server);
    server.set_fault_times(RequestClass::Other, Fault::Garbage, 1);
    let client = client_for(&server);
    let err = get_config_map(&client).unwrap_err();
    assert!(matches!(err, Error::Decode(_)), "{err:?}");
    assert!(err.to_string().contains("decode"), "{err}");
    assert!(get_config_map(&client).is_ok(), "the client recovers");
}

#[test]
fn connection_reset_mid_body_is_a_transport_error() {
    let server = FakeServer::start();
    insert_config_map(&server);
    server.set_fault_times(RequestClass::Other, Fault::ResetMidBody, 1);
    let client = client_for(&server);
    let err = get_config_map(&client).unwrap_err();
    assert!(matches!(err, Error::Transport(_)), "{err:?}");
    assert!(get_config_map(&client).is_ok(), "the client redials");
}

#[test]
fn connection_reset_before_an_answer_is_a_transport_error() {
    let server = FakeServer::start();
    insert_config_map(&server);
    server.set_fault_times(RequestClass::Other, Fault::Reset, 1);
    let client = client_for(&server);
    let err = get_config_map(&client).unwrap_err();
    assert!(matches!(err, Error::Transport(_)), "{err:?}");
    assert!(get_config_map(&client).is_ok(), "the client redials");
}

#[test]
fn stalled_server_times_out_at_the_request_timeout() {
    let server = FakeServer::start();
    insert_config_map(&server);
    server.set_fault_times(RequestClass::Other, Fault::Stall, 1);
    let mut config = server.config();
    config.request_timeout = SHORT_TIMEOUT;
    let client = Client::new(config).unwrap();
    let started = Instant::now();
    let err = get_config_map(&client).unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, Error::Timeout(_)), "{err:?}");
    assert!(took >= SHORT_TIMEOUT && took < TIMEOUT_LIVENESS, "{took:?}");
    assert!(
        get_config_map(&client).is_ok(),
        "the stuck connection is dropped"
    );
    let conns: Vec<u64> = server.requests().iter().map(|r| r.conn_id).collect();
    assert_ne!(conns[0], conns[1], "a stalled connection is not reused");
}

#[test]
fn stalled_server_times_out_at_the_deadline() {
    let server = FakeServer::start();
    insert_config_map(&server);
    server.set_fault(RequestClass::Other, Fault::Stall);
    let client = client_for(&server);
    let started = Instant::now();
    let err = get_config_map(&client.with_deadline(started + SHORT_TIMEOUT)).unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, Error::Timeout(_)), "{err:?}");
    assert!(took < TIMEOUT_LIVENESS, "{took:?}");
}

#[test]
fn stalled_watch_head_times_out() {
    let server = FakeServer::start();
    server.set_fault_times(RequestClass::Other, Fault::Stall, 1);
    let mut config = server.config();
    config.request_timeout = SHORT_TIMEOUT;
    let client = Client::new(config).unwrap();
    let result =
        smol::block_on(client.watch::<ConfigMap>(Some("a"), &WatchParams::default())).map(drop);
    assert!(matches!(result, Err(Error::Timeout(_))), "{result:?}");
}

/// p50 and max of `samples`.
fn p50_and_max(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort_unstable();
    (samples[samples.len() / 2], samples[samples.len() - 1])
}

#[test]
fn lease_client_renews_on_its_own_connections_while_thousands_wait_on_the_main_bucket() {
    const WAITERS: usize = 2_000;
    const RENEWALS: usize = 15;
    /// Below the lease client's 5 QPS, so its own bucket never makes a renewal wait.
    const RENEW_EVERY: Duration = Duration::from_millis(200);

    let server = FakeServer::start();
    insert_config_map(&server);
    insert_lease(&server);
    let mut main_config = server.config();
    main_config.qps = 1.0;
    main_config.burst = 1;
    let lease_client =
        Client::new(main_config.for_leader_election(LEASE_QPS, LEASE_BURST)).unwrap();
    let main = Client::new(main_config).unwrap();
    // The main client's one token is spent and it holds a pooled connection.
    get_config_map(&main).unwrap();

    let started = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicUsize::new(0));
    let waiters: Vec<smol::Task<()>> = (0..WAITERS)
        .map(|_| {
            let (main, started, finished) = (main.clone(), started.clone(), finished.clone());
            smol::spawn(async move {
                started.fetch_add(1, Ordering::SeqCst);
                let _ = main.get::<ConfigMap>(Some("a"), "app").await;
                finished.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    // A liveness bound for tasks that start in milliseconds.
    let all_waiting = crate::support::skiff::eventually(Duration::from_secs(30), || {
        started.load(Ordering::SeqCst) == WAITERS
    });
    assert!(
        all_waiting,
        "only {} waiters started",
        started.load(Ordering::SeqCst)
    );

    let began = Instant::now();
    let latencies = smol::block_on(async {
        let mut lease: Lease = lease_client.get(Some("a"), "skiff-leader").await.unwrap();
        let mut latencies = Vec::new();
        for i in 0..RENEWALS {
            lease.spec.renew_time = Some(format!("2026-01-01T00:00:{i:02}.000000Z"));
            let sent = Instant::now();
            // With a deadline, as the elector renews: a renewal stuck behind the main
            // client's queue fails here instead of hanging the test.
            let renewing = lease_client.with_deadline(sent + LEASE_LIVENESS);
            lease = renewing.replace(&lease).await.unwrap();
            latencies.push(sent.elapsed());
            smol::Timer::after(RENEW_EVERY).await;
        }
        latencies
    });
    let elapsed = began.elapsed();
    let done = finished.load(Ordering::SeqCst);
    drop(waiters);

    let (p50, max) = p50_and_max(latencies);
    println!(
        "lease renewals with {WAITERS} requests queued on the main bucket: p50 {:.2} ms, max {:.2} ms; main requests finished meanwhile: {done}",
        p50.as_secs_f64() * 1000.0,
        max.as_secs_f64() * 1000.0
    );
    let main_allowance = elapsed.as_secs() as usize + 2;
    assert!(
        done <= main_allowance,
        "{done} main requests finished in {elapsed:?}: its bucket was not drained"
    );

    let requests = server.requests();
    let lease_agent = Some("skiff/leader-election");
    let lease_conns: BTreeSet<u64> = requests
        .iter()
        .filter(|r| r.user_agent.as_deref() == lease_agent)
        .map(|r| r.conn_id)
        .collect();
    let main_conns: BTreeSet<u64> = requests
        .iter()
        .filter(|r| r.user_agent.as_deref() != lease_agent)
        .map(|r| r.conn_id)
        .collect();
    assert!(!main_conns.is_empty() && !lease_conns.is_empty());
    assert!(
        lease_conns.is_disjoint(&main_conns),
        "shared connections: {:?}",
        lease_conns.intersection(&main_conns).collect::<Vec<_>>()
    );
    let renewals = requests
        .iter()
        .filter(|r| r.class == RequestClass::Lease && r.method == "PUT" && r.status == 200)
        .count();
    assert_eq!(renewals, RENEWALS);
    assert!(
        requests
            .iter()
            .filter(|r| r.class == RequestClass::Lease)
            .all(|r| r.user_agent.as_deref() == lease_agent),
        "every Lease request came from the lease client"
    );
}

#[test]
fn lease_client_renews_while_every_main_connection_is_stalled() {
    const STALLED: usize = 50;
    const RENEWALS: usize = 5;

    let server = FakeServer::start();
    insert_config_map(&server);
    insert_lease(&server);
    server.set_fault(RequestClass::Other, Fault::Stall);
    let config = server.config();
    let lease_client = Client::new(config.for_leader_election(LEASE_QPS, LEASE_BURST)).unwrap();
    let main = Client::new(config).unwrap();
    let stalled: Vec<smol::Task<()>> = (0..STALLED)
        .map(|_| {
            let main = main.clone();
            smol::spawn(async move {
                let _ = main.get::<ConfigMap>(Some("a"), "app").await;
            })
        })
        .collect();
    // A liveness bound for requests that arrive in milliseconds.
    let all_sent = crate::support::skiff::eventually(Duration::from_secs(30), || {
        server.requests().len() >= STALLED
    });
    assert!(
        all_sent,
        "only {} main requests arrived",
        server.requests().len()
    );

    let latencies = smol::block_on(async {
        let mut lease: Lease = lease_client.get(Some("a"), "skiff-leader").await.unwrap();
        let mut latencies = Vec::new();
        for i in 0..RENEWALS {
            lease.spec.renew_time = Some(format!("2026-01-01T00:01:{i:02}.000000Z"));
            let sent = Instant::now();
            let renewing = lease_client.with_deadline(sent + LEASE_LIVENESS);
            lease = renewing.replace(&lease).await.unwrap();
            latencies.push(sent.elapsed());
        }
        latencies
    });
    drop(stalled);
    let (p50, max) = p50_and_max(latencies);
    println!(
        "lease renewals with {STALLED} main requests stalled: p50 {:.2} ms, max {:.2} ms",
        p50.as_secs_f64() * 1000.0,
        max.as_secs_f64() * 1000.0
    );
    let requests = server.requests();
    let stalled_conns: BTreeSet<u64> = requests
        .iter()
        .filter(|r| r.class == RequestClass::Other)
        .map(|r| r.conn_id)
        .collect();
    assert_eq!(
        stalled_conns.len(),
        STALLED,
        "one connection per request in flight"
    );
    assert!(
        requests
            .iter()
            .filter(|r| r.class == RequestClass::Lease)
            .all(|r| r.status == 200 && !stalled_conns.contains(&r.conn_id))
    );
}
