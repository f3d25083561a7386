//! The dedicated lease client against the fake API server: its config leaves the base one
//! untouched, it never rides on the main client's connections, an elector over it keeps
//! renewing while the main client's token bucket is saturated (the shared control does not),
//! and the lock over it reads and writes the Lease as it should.
//!
//! The electors run on a manual clock the tests move one retry period at a time
//! (`support::renewals`): the requests are real, the verdicts never depend on how fast the
//! machine is.

use crate::support::fake::{FakeServer, RequestClass, RequestRecord};
use crate::support::renewals::Renewals;
use serde_json::json;
use skiff::clock::{Clock, ManualClock};
use skiff::kube::api::ConfigMap;
use skiff::kube::{Client, Config};
use skiff::leader::{ClientLeaseApi, Elector, LeaseLock, Timing};
use std::collections::BTreeSet;
use std::time::Duration;

pub const NS: &str = "skiff-system";
pub const LEASE: &str = "skiff-leader";
pub const LEASE_UA: &str = "skiff/leader-election";
/// Requests queued on the main client's bucket (qps 1): about 50 minutes of work.
const QUEUED: usize = 3000;

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub fn start_server() -> FakeServer {
    let server = FakeServer::start();
    server.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}));
    server.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "busy", "namespace": NS}, "data": {}}));
    server
}

fn conn_ids<'a>(records: impl Iterator<Item = &'a RequestRecord>) -> BTreeSet<u64> {
    records.map(|r| r.conn_id).collect()
}

/// lease 2 s, renew deadline 1.5 s, retry period 500 ms.
pub fn timing() -> Timing {
    Timing::new(ms(2000), ms(1500), ms(500)).expect("valid timing")
}

/// An elector on `time`'s clock over `lease_client`, leading: it acquired the lease.
pub fn leading_elector(
    lease_client: Client,
    time: &ManualClock,
) -> Elector<skiff::leader::ClientLeaseApi> {
    let api = ClientLeaseApi::new(lease_client, NS, LEASE, time.clock());
    let mut elector = Elector::new(api, "me_abc".into(), timing(), time.clock()).expect("elector");
    smol::block_on(elector.acquire());
    elector
}

/// The lease client derived from a main client to `server`, as `Replica::wire` derives it.
pub fn lease_client(server: &FakeServer) -> Client {
    let main = Client::new(server.config()).expect("main client");
    Client::new(main.config().for_leader_election(5.0, 10)).expect("lease client")
}

#[test]
fn for_leader_election_leaves_the_base_config_untouched_and_shares_no_connection() {
    let server = start_server();
    let mut base: Config = server.config();
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

/// A main client whose bucket lets one request through a second (qps 1, burst 1).
fn slow_main_client(server: &FakeServer) -> Client {
    let mut config = server.config();
    config.qps = 1.0;
    config.burst = 1;
    Client::new(config).expect("main client")
}

/// Queues [`QUEUED`] GETs on `main`'s bucket: each is polled once here, which reserves its
/// token in turn, before it is left to smol's executor. Whatever asks the bucket next waits
/// behind all of them.
fn queue_gets(main: &Client) -> Vec<smol::Task<()>> {
    (0..QUEUED)
        .map(|_| {
            let main = main.clone();
            let mut get = Box::pin(async move {
                let _ = main.get::<ConfigMap>(Some(NS), "busy").await;
            });
            let _ = smol::block_on(smol::future::poll_once(&mut get));
            smol::spawn(get)
        })
        .collect()
}

/// Successful Lease PUTs the server answered.
fn renewals(server: &FakeServer) -> usize {
    let records = server.requests();
    (records.iter())
        .filter(|r| r.class == RequestClass::Lease && r.method == "PUT" && r.status == 200)
        .count()
}

#[test]
fn renews_every_retry_period_while_the_main_bucket_is_saturated() {
    let server = start_server();
    let time = ManualClock::new();
    let main = slow_main_client(&server);
    let _queued = queue_gets(&main);
    let lease = Client::new(main.config().for_leader_election(5.0, 10)).expect("lease client");
    let elector = leading_elector(lease, &time);
    let start = time.now();
    let renewing = Renewals::start(elector, &time);
    for round in 1..=8u32 {
        let at = renewing.next().expect("lost the lease");
        assert_eq!(at, start + timing().retry_period * round);
        renewing.idle().expect("lost the lease");
        assert_eq!(renewals(&server), round as usize, "renewal {round} failed");
    }
    let main_sent = server
        .requests()
        .iter()
        .filter(|r| r.class == RequestClass::Other && r.user_agent.as_deref() != Some(LEASE_UA))
        .count();
    assert!(
        main_sent < QUEUED / 10,
        "the main bucket let {main_sent} through: not saturated"
    );
}

/// The control: the same elector over the *main* client loses its lease at the renew
/// deadline, its requests refused by the saturated bucket.
#[test]
fn an_elector_sharing_the_main_client_loses_the_lease_when_its_bucket_is_saturated() {
    let server = start_server();
    let time = ManualClock::new();
    // Leads over the main client before the bucket fills.
    let main = slow_main_client(&server);
    let elector = leading_elector(main.clone(), &time);
    let acquired = time.now();
    let _queued = queue_gets(&main);
    let renewing = Renewals::start(elector, &time);
    let lost = loop {
        if let Err(lost) = renewing.next() {
            break lost;
        }
    };
    assert!(lost.reason.contains("renew deadline"), "{lost}");
    assert_eq!(time.now() - acquired, timing().renew_deadline);
    assert_eq!(
        renewals(&server),
        0,
        "a renewal got through the saturated bucket"
    );
}

/// The bucket in virtual time: qps 10, burst 1, four requests in a row take three refills,
/// 300 ms, however long the machine takes to run them.
#[test]
fn the_token_bucket_paces_requests_at_its_qps() {
    let time = ManualClock::new();
    let bucket = skiff::kube::TokenBucket::with_clock(10.0, 1, time.clock());
    let mut granted = Vec::new();
    time.run(async {
        for _ in 0..4 {
            bucket.acquire().await;
            granted.push(time.elapsed());
        }
    });
    assert_eq!(granted, [ms(0), ms(100), ms(200), ms(300)]);
}

fn lock_over_lease_client(server: &FakeServer) -> LeaseLock<ClientLeaseApi> {
    let api = ClientLeaseApi::new(lease_client(server), NS, LEASE, Clock::real());
    LeaseLock::new(api, "me_abc".into(), 2, Clock::real())
}

/// The lease requests from `mark` on, as "METHOD status".
pub fn lease_requests_since(server: &FakeServer, mark: usize) -> Vec<String> {
    server.requests()[mark..]
        .iter()
        .filter(|r| r.class == RequestClass::Lease)
        .map(|r| format!("{} {}", r.method, r.status))
        .collect()
}

pub fn lease_path() -> String {
    format!("/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{LEASE}")
}

/// A deadline no loopback request misses: a liveness bound, not a speed goal.
fn generous() -> std::time::Instant {
    std::time::Instant::now() + Duration::from_secs(30)
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
    let attempt = smol::block_on(lock.try_acquire_or_renew(generous()));
    assert!(attempt.is_err(), "{attempt:?}");
    assert_eq!(lease_requests_since(&server, 0), ["GET 500"]);
}

#[test]
fn release_reports_a_failed_get_and_stamps_fresh_times() {
    let server = start_server();
    let mut lock = lock_over_lease_client(&server);
    assert!(smol::block_on(lock.try_acquire_or_renew(generous())).is_ok());
    let held = server.get(&lease_path()).expect("lease");

    server.set_fault_times(
        RequestClass::Lease,
        crate::support::fake::Fault::ServerError,
        1,
    );
    let mark = server.requests().len();
    let failed = smol::block_on(lock.release(generous()));
    assert!(
        failed.is_err(),
        "a failed GET is not 'nothing to release': {failed:?}"
    );
    assert_eq!(lease_requests_since(&server, mark), ["GET 500"]);

    // The stamps are wall-clock microseconds for the wire: let the wall clock move.
    std::thread::sleep(ms(2));
    assert_eq!(smol::block_on(lock.release(generous())).ok(), Some(true));
    let lease = server.get(&lease_path()).expect("lease");
    assert_eq!(lease["spec"]["holderIdentity"], "");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 1);
    assert_ne!(lease["spec"]["renewTime"], held["spec"]["renewTime"]);
    assert_ne!(lease["spec"]["acquireTime"], held["spec"]["acquireTime"]);
}
