//! The dedicated lease client against the fake API server: its config leaves the base one
//! untouched, it never rides on the main client's connections, and an elector over it keeps
//! renewing while the main client's token bucket is saturated (the shared control does not).

use crate::support::fake::{FakeServer, RequestClass, RequestRecord};
use serde_json::json;
use skiff::kube::api::ConfigMap;
use skiff::kube::{Client, Config};
use skiff::leader::{Announcer, ClientLeaseApi, Elector, LeaderLost, LeaseLock, Timing};
use skiff::replica::Replica;
use skiff::serve::Probes;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const NS: &str = "skiff-system";
const LEASE: &str = "skiff-leader";
const LEASE_UA: &str = "skiff/leader-election";
/// Requests queued on the main client's bucket (qps 1): ~50 minutes of work.
const QUEUED: usize = 3000;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn base_config(server: &FakeServer) -> Config {
    server.config()
}

fn start_server() -> FakeServer {
    let server = FakeServer::start();
    server.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}));
    server.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "busy", "namespace": NS}, "data": {}}));
    server
}

fn conn_ids<'a>(records: impl Iterator<Item = &'a RequestRecord>) -> BTreeSet<u64> {
    records.map(|r| r.conn_id).collect()
}

#[test]
fn for_leader_election_leaves_the_base_config_untouched_and_shares_no_connection() {
    let server = start_server();
    let mut base = base_config(&server);
    base.qps = 20.0;
    base.burst = 30;
    let lease_config = base.for_leader_election(5.0, 10);
    assert_eq!((base.qps, base.burst), (20.0, 30));
    assert_eq!(base.name, "main");
    assert_ne!(base.user_agent, LEASE_UA);
    assert_eq!(base.retries_on_429, 3);
    assert_eq!((lease_config.qps, lease_config.burst), (5.0, 10));
    assert_eq!(lease_config.name, "leader-election");
    assert_eq!(lease_config.user_agent, LEASE_UA);
    assert_eq!(lease_config.server, base.server);

    let main = Client::new(base).expect("main client");
    let lease = Client::new(lease_config).expect("lease client");
    // Interleaved, concurrent traffic on both: a shared pool would hand one's idle
    // connection to the other.
    smol::block_on(async {
        for _ in 0..10 {
            let a = main.get::<ConfigMap>(Some(NS), "busy");
            let b = lease.get::<ConfigMap>(Some(NS), "busy");
            let c = main.get::<ConfigMap>(Some(NS), "busy");
            let (a, (b, c)) = smol::future::zip(a, smol::future::zip(b, c)).await;
            assert!(a.is_ok() && b.is_ok() && c.is_ok());
        }
    });
    let records = server.requests();
    let by_lease = conn_ids(
        records
            .iter()
            .filter(|r| r.user_agent.as_deref() == Some(LEASE_UA)),
    );
    let by_main = conn_ids(
        records
            .iter()
            .filter(|r| r.user_agent.as_deref() != Some(LEASE_UA)),
    );
    assert_eq!(records.len(), 30);
    assert!(!by_lease.is_empty() && !by_main.is_empty());
    assert!(
        by_lease.is_disjoint(&by_main),
        "shared connections: lease {by_lease:?}, main {by_main:?}"
    );
    assert!(main.idle_connections() >= 1 && lease.idle_connections() >= 1);
}

/// lease 2 s, renew deadline 1.5 s, retry period 500 ms.
fn timing() -> Timing {
    Timing::new(ms(2000), ms(1500), ms(500)).expect("valid timing")
}

/// lease 6 s, renew deadline 4 s, retry period 500 ms: a renew deadline well beyond the
/// retry period, so only a client that cannot renew at all loses it on a busy test machine.
fn saturation_timing() -> Timing {
    Timing::new(ms(6000), ms(4000), ms(500)).expect("valid timing")
}

/// Leads with an elector over `lease_client`, then queues [`QUEUED`] GETs on the main client
/// (qps 1, burst 1) and keeps renewing for `watch`. Returns the elector's verdict and the
/// successful renewals the server saw.
fn renew_under_saturated_main_bucket(
    server: &FakeServer,
    main: &Client,
    lease_client: Client,
    watch: Duration,
) -> (Option<LeaderLost>, Vec<RequestRecord>) {
    let api = ClientLeaseApi::new(lease_client, NS, LEASE);
    let mut elector = Elector::new(api, "me_abc".into(), saturation_timing()).expect("elector");
    smol::block_on(async {
        let acquired = smol::future::or(
            async {
                elector.acquire().await;
                true
            },
            async {
                smol::Timer::after(Duration::from_secs(5)).await;
                false
            },
        );
        assert!(acquired.await, "did not acquire the lease");
        let queued: Vec<_> = (0..QUEUED)
            .map(|_| {
                let main = main.clone();
                smol::spawn(async move { main.get::<ConfigMap>(Some(NS), "busy").await })
            })
            .collect();
        smol::Timer::after(ms(100)).await;
        let started = Instant::now();
        let lost = smol::future::or(async { Some(elector.keep_renewing().await) }, async {
            smol::Timer::after(watch).await;
            None
        })
        .await;
        let elapsed = started.elapsed();
        drop(queued);
        let renewals = server
            .requests()
            .into_iter()
            .filter(|r| r.class == RequestClass::Lease && r.method == "PUT" && r.status == 200)
            .collect();
        assert!(elapsed <= watch + ms(200), "took {elapsed:?}");
        (lost, renewals)
    })
}

fn main_client(server: &FakeServer) -> Client {
    let mut config = base_config(server);
    config.qps = 1.0;
    config.burst = 1;
    Client::new(config).expect("main client")
}

#[test]
fn renews_while_main_bucket_is_saturated() {
    let server = start_server();
    let main = main_client(&server);
    let lease = Client::new(main.config().for_leader_election(5.0, 10)).expect("lease client");
    let started = Instant::now();
    let (lost, renewals) =
        renew_under_saturated_main_bucket(&server, &main, lease, Duration::from_secs(5));
    assert_eq!(lost, None, "leadership lost while the main bucket was busy");
    let renewed_at: Vec<Instant> = renewals
        .iter()
        .filter_map(|r| r.answered)
        .filter(|at| *at > started)
        .collect();
    assert!(renewed_at.len() >= 8, "{} renewals", renewed_at.len());
    let worst = renewed_at
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default();
    eprintln!("{} renewals, worst gap {worst:?}", renewed_at.len());
    assert!(worst <= ms(1000), "a renewal gap of {worst:?}");
    let main_sent = server
        .requests()
        .iter()
        .filter(|r| r.class == RequestClass::Other && r.user_agent.as_deref() != Some(LEASE_UA))
        .count();
    assert!(
        main_sent <= 9,
        "the main bucket let {main_sent} through: not saturated"
    );
}

/// The control: the same elector over the *main* client misses its renew deadline.
#[test]
fn an_elector_sharing_the_main_client_loses_the_lease_when_its_bucket_is_saturated() {
    let server = start_server();
    let main = main_client(&server);
    let (lost, _) =
        renew_under_saturated_main_bucket(&server, &main, main.clone(), Duration::from_secs(5));
    let lost = lost.expect("a shared client kept the lease under a saturated bucket");
    assert!(lost.reason.contains("renew deadline"), "{lost}");
}

/// The replica as the binary wires it, with `timing()`'s durations.
fn wired_replica(server: &FakeServer, leader_elect: bool) -> Replica {
    let args: Vec<String> = [
        &format!("--leader-elect={leader_elect}"),
        "--leader-election-namespace",
        NS,
        "--leader-elect-lease-duration=2s",
        "--leader-elect-renew-deadline=1500ms",
        "--leader-elect-retry-period=500ms",
        "--source-namespaces",
        NS,
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    let settings = skiff::flags::parse(&args).expect("valid flags");
    Replica::wire(&settings, base_config(server), "me_abc").expect("wired")
}

/// `/healthz` as the binary builds it (`Replica::health_checks`): a leader whose renewals stop
/// fails liveness once the last renewal is older than the lease duration + 20 s; without
/// leader election only the controllers' hearing is checked. Fails if the wiring drops the check.
#[test]
fn a_leader_that_stops_renewing_fails_its_liveness_probe() {
    let server = start_server();
    let replica = wired_replica(&server, true);
    let probes = Probes::new(replica.health_checks());
    let mut elector = replica.elector.expect("leader election is on");
    let before_acquire = Instant::now();
    smol::block_on(elector.acquire());
    assert_eq!(probes.health(Instant::now()), Ok(()));
    let stale = before_acquire + timing().lease_duration + Duration::from_secs(20) + ms(100);
    let failed = probes
        .health(stale)
        .expect_err("stale renewal while leading");
    assert!(failed.starts_with("leader-election: "), "{failed}");

    let without = wired_replica(&server, false);
    let names: Vec<&str> = without
        .health_checks()
        .iter()
        .map(|(name, _)| *name)
        .collect();
    assert_eq!(names, ["controllers-hearing"]);
}

/// The replica as the binary wires it (`Replica::wire`): the elector acquires and then is never
/// polled again (a stuck task); the main client's writes pass until last renewal + renew
/// deadline, then are refused before they leave. Fails if the wiring drops the fence.
#[test]
fn a_fenced_main_client_refuses_writes_past_the_renew_deadline_while_the_elector_is_stuck() {
    let server = start_server();
    let replica = wired_replica(&server, true);
    let mut elector = replica.elector.expect("leader election is on");
    let fenced = replica.main;
    assert_eq!(elector.timing().renew_deadline, timing().renew_deadline);
    let write = |name: &str| {
        let cm: ConfigMap = serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NS}}))
        .expect("a ConfigMap");
        smol::block_on(fenced.create(&cm))
    };
    assert!(write("before-leading").is_err(), "a write before leading");
    let acquired_at = Instant::now();
    smol::block_on(elector.acquire());
    assert!(write("while-leading").is_ok());
    std::thread::sleep(
        timing()
            .renew_deadline
            .saturating_sub(acquired_at.elapsed())
            + ms(50),
    );
    let refused = write("past-the-deadline").expect_err("a write past the renew deadline");
    assert!(
        refused.to_string().contains("leader election lost"),
        "{refused}"
    );
    let posted: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/configmaps"))
        .map(|r| {
            r.body
                .as_ref()
                .map_or(String::new(), |b| b["metadata"]["name"].to_string())
        })
        .collect();
    assert_eq!(posted, ["\"while-leading\""]);
}

/// Leads with an elector over a dedicated lease client, runs `act` on the server, then keeps
/// renewing for `watch`; returns the lease requests from `act` on.
fn renew_after(
    server: &FakeServer,
    act: impl FnOnce(&FakeServer),
    watch: Duration,
) -> Vec<RequestRecord> {
    let main = Client::new(base_config(server)).expect("main client");
    let lease = Client::new(main.config().for_leader_election(5.0, 10)).expect("lease client");
    let api = ClientLeaseApi::new(lease, NS, LEASE);
    let mut elector = Elector::new(api, "me_abc".into(), timing()).expect("elector");
    smol::block_on(elector.acquire());
    let mark = server.requests().len();
    act(server);
    let lost = smol::block_on(smol::future::or(
        async { Some(elector.keep_renewing().await) },
        async {
            smol::Timer::after(watch).await;
            None
        },
    ));
    assert_eq!(lost, None);
    server.requests()[mark..]
        .iter()
        .filter(|r| r.class == RequestClass::Lease)
        .cloned()
        .collect()
}

fn lease_path() -> String {
    format!("/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{LEASE}")
}

#[test]
fn a_renewal_that_meets_a_409_gets_and_puts_again_at_once() {
    let server = start_server();
    let bump = |server: &FakeServer| {
        let mut lease = server.get(&lease_path()).expect("lease");
        lease["metadata"]["labels"] = json!({"touched": "by-someone-else"});
        server.update(lease);
    };
    let records = renew_after(&server, bump, ms(900));
    let conflict = records
        .iter()
        .position(|r| r.method == "PUT" && r.status == 409)
        .expect("no 409: the renewal did not use the cached resourceVersion");
    let next = &records[conflict + 1..];
    assert_eq!(next.first().map(|r| r.method.as_str()), Some("GET"));
    let renewed = next
        .iter()
        .find(|r| r.method == "PUT" && r.status == 200)
        .expect("renewed after the 409");
    let after = renewed.received - records[conflict].answered.expect("answered");
    assert!(after < ms(250), "renewed {after:?} after the 409");
}

#[test]
fn a_failed_renewal_is_retried_one_retry_period_later_with_a_get() {
    let server = start_server();
    let fail_once = |server: &FakeServer| {
        server.set_fault_times(
            RequestClass::Lease,
            crate::support::fake::Fault::ServerError,
            1,
        );
    };
    let records = renew_after(&server, fail_once, ms(1300));
    let failed = records
        .iter()
        .position(|r| r.status == 500)
        .expect("no failed renewal");
    let next = records.get(failed + 1).expect("no retry");
    assert_eq!(next.method, "GET", "the retry does not re-read the lease");
    let waited = next.received - records[failed].answered.expect("answered");
    assert!(
        waited >= ms(400) && waited <= ms(700),
        "retried {waited:?} after the failure (retry period 500 ms)"
    );
}

/// An elector on its own lease client that announces leadership through `main`, as
/// `Replica::wire` builds it.
fn announcing_elector(server: &FakeServer) -> (Elector<ClientLeaseApi>, Client) {
    let main = Client::new(base_config(server)).expect("main client");
    let lease = Client::new(main.config().for_leader_election(5.0, 10)).expect("lease client");
    let api = ClientLeaseApi::new(lease, NS, LEASE);
    let mut elector = Elector::new(api, "me_abc".into(), timing()).expect("elector");
    elector.announce_with(Announcer::lease_event(&main, NS, LEASE, "me_abc"));
    (elector, main)
}

/// The "became leader" Event POSTs the server has answered so far.
fn answered_leader_events(server: &FakeServer) -> Vec<RequestRecord> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/events") && r.status != 0)
        .collect()
}

fn wait_for_leader_event(server: &FakeServer) -> RequestRecord {
    let deadline = Instant::now() + Duration::from_secs(10);
    while answered_leader_events(server).is_empty() && Instant::now() < deadline {
        std::thread::sleep(ms(20));
    }
    let events = answered_leader_events(server);
    assert_eq!(events.len(), 1, "{events:?}");
    events[0].clone()
}

#[test]
fn becoming_leader_records_an_event_on_the_lease_through_the_main_client() {
    let server = start_server();
    let (mut elector, _main) = announcing_elector(&server);
    smol::block_on(elector.acquire());
    let event = wait_for_leader_event(&server);
    let body = event.body.clone().unwrap_or_default().to_string();
    assert!(body.contains("me_abc became leader"), "{body}");
    let regarding = &event.body.as_ref().expect("a body")["involvedObject"];
    let expected = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "namespace": NS, "name": LEASE});
    for field in ["apiVersion", "kind", "namespace", "name"] {
        assert_eq!(regarding[field], expected[field], "{field} of {regarding}");
    }
    assert_ne!(event.user_agent.as_deref(), Some(LEASE_UA));
    assert_eq!(event.status, 201);
    let records = server.requests();
    let lease_conns = conn_ids(records.iter().filter(|r| r.class == RequestClass::Lease));
    assert!(
        !lease_conns.contains(&event.conn_id),
        "on a lease connection"
    );
}

/// The Event's reply takes 2 s: the elector leads at once, and the Event still lands later.
#[test]
fn a_slow_leader_event_does_not_delay_leading() {
    let server = start_server();
    let (mut elector, _main) = announcing_elector(&server);
    server.set_fault(
        RequestClass::Other,
        crate::support::fake::Fault::Delay(ms(2000)),
    );
    let started = Instant::now();
    smol::block_on(elector.acquire());
    let took = started.elapsed();
    assert!(took < ms(1000), "acquire waited for the Event: {took:?}");
    assert_eq!(wait_for_leader_event(&server).status, 201);
}

fn lock_over_lease_client(server: &FakeServer) -> LeaseLock<ClientLeaseApi> {
    let main = Client::new(base_config(server)).expect("main client");
    let lease = Client::new(main.config().for_leader_election(5.0, 10)).expect("lease client");
    LeaseLock::new(ClientLeaseApi::new(lease, NS, LEASE), "me_abc".into(), 2)
}

fn lease_requests_since(server: &FakeServer, mark: usize) -> Vec<String> {
    server.requests()[mark..]
        .iter()
        .filter(|r| r.class == RequestClass::Lease)
        .map(|r| format!("{} {}", r.method, r.status))
        .collect()
}

#[test]
fn a_failed_get_of_a_held_lease_never_turns_into_a_create() {
    let server = start_server();
    server.insert(
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": LEASE, "namespace": NS},
        "spec": {"holderIdentity": "other_x", "leaseDurationSeconds": 15}}),
    );
    let mut lock = lock_over_lease_client(&server);
    server.set_fault_times(
        RequestClass::Lease,
        crate::support::fake::Fault::ServerError,
        1,
    );
    let attempt = smol::block_on(lock.try_acquire_or_renew(Instant::now() + ms(1000)));
    assert!(attempt.is_err(), "{attempt:?}");
    assert_eq!(lease_requests_since(&server, 0), ["GET 500"]);
}

#[test]
fn release_reports_a_failed_get_and_stamps_fresh_times() {
    let server = start_server();
    let mut lock = lock_over_lease_client(&server);
    let deadline = || Instant::now() + ms(1000);
    assert!(smol::block_on(lock.try_acquire_or_renew(deadline())).is_ok());
    let held = server.get(&lease_path()).expect("lease");

    server.set_fault_times(
        RequestClass::Lease,
        crate::support::fake::Fault::ServerError,
        1,
    );
    let mark = server.requests().len();
    let failed = smol::block_on(lock.release(deadline()));
    assert!(
        failed.is_err(),
        "a failed GET is not 'nothing to release': {failed:?}"
    );
    assert_eq!(lease_requests_since(&server, mark), ["GET 500"]);

    std::thread::sleep(ms(2));
    assert_eq!(smol::block_on(lock.release(deadline())).ok(), Some(true));
    let lease = server.get(&lease_path()).expect("lease");
    assert_eq!(lease["spec"]["holderIdentity"], "");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 1);
    assert_ne!(lease["spec"]["renewTime"], held["spec"]["renewTime"]);
    assert_ne!(lease["spec"]["acquireTime"], held["spec"]["acquireTime"]);
}

/// A token that was waited for and used stays used: qps 10, burst 1, four requests in a row
/// take three refills.
#[test]
fn the_token_bucket_paces_requests_at_its_qps() {
    let bucket = skiff::kube::TokenBucket::new(10.0, 1);
    let started = Instant::now();
    smol::block_on(async {
        for _ in 0..4 {
            bucket.acquire().await;
        }
    });
    let took = started.elapsed();
    assert!(took >= ms(290) && took < ms(600), "took {took:?}");
}
