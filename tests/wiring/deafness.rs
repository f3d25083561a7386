//! The binary as launched, when its watches go deaf (fake API server over TLS, a fault proxy
//! as the link): a leader whose watches stay deaf steps down for a standby that hears and
//! writes nothing after; and `/healthz` says so when there is no standby to step down for.
//!
//! Real time, as the binary runs: the tests assert order and causes; each wait is a liveness
//! bound of 10× what it waits for, or more, and says so.

use std::time::{Duration, Instant};

use crate::support::fake::{FakeServer, RequestRecord};
use crate::support::fault_proxy::FaultProxy;
use crate::support::skiff::{
    Skiff, TempDir, eventually, fan_out_world, free_port, http_get, is_controller_write,
    is_lease_hold, is_lease_release, write_kubeconfig,
};
use serde_json::json;

/// How long a test waits for leading and the first copies (a second or two): a liveness bound.
const START: Duration = Duration::from_secs(20);

fn is_copy_create(r: &RequestRecord) -> bool {
    r.method == "POST" && r.path.ends_with("/configmaps") && r.status == 201
}

#[test]
fn a_leader_whose_watches_stay_deaf_steps_down_for_a_standby_that_hears() {
    deaf_leader(Duration::ZERO);
}

#[test]
fn a_deaf_leader_steps_down_on_a_10ms_link() {
    deaf_leader(Duration::from_millis(10));
}

/// Two replicas, each reaching the fake API server through a link with `latency` each way.
/// Over TLS: the replicas are told apart by their tokens, which go to https:// servers only.
fn deaf_leader(latency: Duration) {
    let server = FakeServer::start_tls();
    fan_out_world(&server, 3);
    let upstream = server.url().trim_start_matches("https://").to_owned();
    let link = FaultProxy::start(&upstream);
    link.set_latency(latency);
    let url = format!("https://{}", link.address());
    let ca = server.ca_pem();
    let dir = TempDir::new("deaf-leader");
    let flags = [
        "--leader-elect",
        // A renew deadline with room for a busy machine: the leader must step down because it
        // is deaf, never lose its lease by missing a renewal.
        "--leader-elect-lease-duration=4s",
        "--leader-elect-renew-deadline=3s",
        "--leader-elect-retry-period=1s",
        "--watch-idle-timeout=2s",
        "--deafness-timeout=4s",
        "--kube-api-qps=1000",
        "--kube-api-burst=1000",
    ];
    let replica = |name: &str, token: &str| {
        let kubeconfig = dir.0.join(format!("{name}.kubeconfig"));
        let written = write_kubeconfig(&dir, &url, ca.as_deref(), Some(token), "skiff-system");
        std::fs::rename(written, &kubeconfig).expect("name the kubeconfig");
        let log = dir.0.join(format!("{name}.log"));
        Skiff::start_with_env(&kubeconfig, log, &flags, &[("POD_NAME", name)])
    };
    let leader = replica("replica-a", "token-a");
    let holds = |who: &str| {
        let server = &server;
        let who = who.to_owned();
        move || {
            server
                .requests()
                .iter()
                .any(|r| is_lease_hold(r) && by(r, &who))
        }
    };
    assert!(
        eventually(START, holds("token-a")),
        "A never led; log:\n{}",
        leader.logs()
    );
    assert!(
        eventually(START, || server
            .requests()
            .iter()
            .filter(|r| is_copy_create(r))
            .count()
            >= 3),
        "A never wrote its copies; log:\n{}",
        leader.logs()
    );
    let mut standby = replica("replica-b", "token-b");
    // B stands by: its look at the lease, then its watch of it.
    let standing_by = eventually(START, || {
        (server.requests().iter())
            .any(|r| by(r, "token-b") && r.watch && r.path.contains("/leases") && r.status == 200)
    });
    assert!(
        standing_by,
        "B never watched the lease; log:\n{}",
        standby.logs()
    );
    assert!(!holds("token-b")(), "B led while A heard");

    let silenced = Instant::now();
    server.silence_watches_of("token-a");
    // A liveness bound, 10× the deafness timeout (4 s) + the retry period.
    let led = eventually(Duration::from_secs(60), holds("token-b"));
    let records = server.requests();
    assert!(led, "B never led; A's log:\n{}", leader.logs());
    let b_leads = records
        .iter()
        .filter(|r| is_lease_hold(r) && by(r, "token-b"))
        .map(|r| r.received)
        .min()
        .expect("B's first hold");
    eprintln!(
        "A's watches silenced (latency {latency:?}); B led {:?} later (deafness timeout 4 s + \
         retry 1 s)",
        b_leads - silenced
    );
    let release = records
        .iter()
        .find(|r| is_lease_release(r) && by(r, "token-a") && r.received > silenced)
        .unwrap_or_else(|| panic!("A never released; log:\n{}", leader.logs()));
    assert!(
        release.received < b_leads,
        "B led before A stepped down and released"
    );
    let late: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| by(r, "token-a") && is_controller_write(r) && r.received > release.received)
        .collect();
    assert!(late.is_empty(), "A wrote after stepping down: {late:?}");

    let name = "after-step-down";
    server.insert(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": {"fanout": "yes"}}}));
    let path = format!("/api/v1/namespaces/{name}/configmaps/app-ca");
    assert!(
        eventually(START, || server.get(&path).is_some()),
        "the new leader did not copy; B's log:\n{}",
        standby.logs()
    );
    let writer = server
        .requests()
        .into_iter()
        .find(|r| is_copy_create(r) && r.path.contains(name))
        .expect("the copy's create");
    assert!(by(&writer, "token-b"), "the copy came from A");
    let log = leader.logs();
    assert!(log.contains("stepping down"), "log:\n{log}");
    let mut leader = leader;
    assert!(
        leader.is_running(),
        "A exited instead of standing by; log:\n{log}"
    );
    assert!(standby.is_running());
}

#[test]
fn without_leader_election_healthz_fails_while_the_controllers_are_deaf() {
    let server = FakeServer::start_tls();
    server.set_bookmark_interval(Duration::from_millis(300));
    fan_out_world(&server, 1);
    let dir = TempDir::new("deaf-healthz");
    let ca = server.ca_pem();
    let kubeconfig = write_kubeconfig(
        &dir,
        &server.url(),
        ca.as_deref(),
        Some("token-a"),
        "skiff-system",
    );
    let port = free_port();
    let probes = format!("--health-probe-bind-address=127.0.0.1:{port}");
    let flags = [
        probes.as_str(),
        "--watch-idle-timeout=2s",
        "--deafness-timeout=3s",
    ];
    let skiff = Skiff::start(&kubeconfig, dir.0.join("skiff.log"), &flags);
    let healthy = || http_get(port, "/healthz").is_some_and(|(status, _)| status == 200);
    assert!(
        eventually(START, healthy),
        "never healthy; log:\n{}",
        skiff.logs()
    );
    // Past the deafness timeout, with bookmarks every 300 ms: a replica that counted a quiet
    // stretch as deafness would fail here.
    std::thread::sleep(Duration::from_secs(3));
    assert!(healthy(), "unhealthy while hearing bookmarks every 300 ms");
    server.silence_watches_of("token-a");
    let mut why = String::new();
    // A liveness bound, 10× the idle timeout (2 s) + the deafness timeout (3 s).
    let failed = eventually(Duration::from_secs(50), || {
        match http_get(port, "/healthz") {
            Some((500, body)) => {
                why = body;
                true
            }
            _ => false,
        }
    });
    assert!(failed, "/healthz stayed 200; log:\n{}", skiff.logs());
    assert!(
        why.starts_with("controllers-hearing: the watch of"),
        "{why}"
    );
}

/// Whether `r` was sent with bearer token `token`.
fn by(r: &RequestRecord, token: &str) -> bool {
    r.token.as_deref() == Some(token)
}
