//! Renewals over the dedicated lease client, request by request, and the replica as the binary
//! wires it: a 409 is read and written again at once, a failed renewal is retried a retry
//! period later with a GET, the fence and the liveness probe follow the renew deadline, and
//! the "became leader" Event goes through the main client without holding up leadership.
//!
//! The electors run on a manual clock (`support::renewals`): each test moves it one retry
//! period at a time, or past a deadline, and reads what the server saw meanwhile. What happens
//! while the clock stands still happens "at once"; nothing depends on how fast the machine is.

use crate::lease_client::{
    LEASE, LEASE_UA, NS, lease_client, lease_path, lease_requests_since, ms, start_server, timing,
};
use crate::support::fake::{FakeServer, Fault, RequestClass, RequestRecord};
use crate::support::renewals::{LIVENESS, Renewals, within};
use serde_json::json;
use skiff::clock::{Clock, ManualClock};
use skiff::kube::Client;
use skiff::kube::api::ConfigMap;
use skiff::leader::{Announcer, ClientLeaseApi, Elector};
use skiff::replica::Replica;
use skiff::serve::Probes;
use std::time::{Duration, Instant};

/// A fake server, a manual clock, an elector leading on it over the real lease client, and
/// how many requests the server had seen by then.
fn leading() -> (FakeServer, ManualClock, Elector<ClientLeaseApi>, usize) {
    let server = start_server();
    let time = ManualClock::new();
    let elector = crate::lease_client::leading_elector(lease_client(&server), &time);
    let mark = server.requests().len();
    (server, time, elector, mark)
}

#[test]
fn a_renewal_that_meets_a_409_gets_and_puts_again_at_once() {
    let (server, time, elector, mark) = leading();
    let mut lease = server.get(&lease_path()).expect("lease");
    lease["metadata"]["labels"] = json!({"touched": "by-someone-else"});
    server.update(lease);
    let renewing = Renewals::start(elector, &time);
    let renewal = renewing.next().expect("lost the lease");
    let next = renewing.idle().expect("lost the lease");
    // The 409 is first checked against the Lease (was it our own write, landed unanswered?),
    // then the renewal reads and writes again: GETs between the two PUTs.
    let requests = lease_requests_since(&server, mark);
    let (first, rest) = requests.split_first().expect("no renewal");
    assert_eq!(
        first, "PUT 409",
        "the renewal did not use the cached resourceVersion"
    );
    let (last, between) = rest.split_last().expect("nothing after the 409");
    assert_eq!(last, "PUT 200", "not renewed after the 409: {requests:?}");
    assert!(
        !between.is_empty() && between.iter().all(|r| r == "GET 200"),
        "{requests:?}"
    );
    assert_eq!(
        time.now(),
        renewal,
        "the clock stood still from the 409 to the renewal"
    );
    assert_eq!(
        next,
        renewal + timing().retry_period,
        "renewed, so next in a retry period"
    );
}

#[test]
fn a_failed_renewal_is_retried_one_retry_period_later_with_a_get() {
    let (server, time, elector, mark) = leading();
    server.set_fault_times(RequestClass::Lease, Fault::ServerError, 1);
    let renewing = Renewals::start(elector, &time);
    let failed = renewing.next().expect("lost the lease");
    let retry = renewing.idle().expect("lost the lease");
    assert_eq!(lease_requests_since(&server, mark), ["PUT 500"]);
    assert_eq!(retry, failed + timing().retry_period);
    renewing.next().expect("lost the lease");
    renewing.idle().expect("lost the lease");
    assert_eq!(
        lease_requests_since(&server, mark),
        ["PUT 500", "GET 200", "PUT 200"],
        "the retry re-reads the lease first"
    );
}

/// The replica as the binary wires it (`Replica::wire`), with `timing()`'s durations, on
/// `clock`.
fn wired_replica(server: &FakeServer, leader_elect: bool, clock: Clock) -> Replica {
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
    Replica::wire(&settings, server.config(), "me_abc", clock).expect("wired")
}

/// `/healthz` as the binary builds it (`Replica::health_checks`): a leader whose renewals stop
/// fails liveness once the last renewal is older than the lease duration + 20 s; without
/// leader election only the controllers' hearing is checked. Fails if the wiring drops the check.
#[test]
fn a_leader_that_stops_renewing_fails_its_liveness_probe() {
    let server = start_server();
    let time = ManualClock::new();
    let replica = wired_replica(&server, true, time.clock());
    let probes = Probes::new(replica.health_checks());
    let mut elector = replica.elector.expect("leader election is on");
    smol::block_on(elector.acquire());
    let limit = timing().lease_duration + Duration::from_secs(20);
    assert_eq!(probes.health(time.now() + limit), Ok(()));
    let failed = probes
        .health(time.now() + limit + ms(1))
        .expect_err("stale renewal while leading");
    assert!(failed.starts_with("leader-election: "), "{failed}");

    let without = wired_replica(&server, false, Clock::real());
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
    let time = ManualClock::new();
    let replica = wired_replica(&server, true, time.clock());
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
    smol::block_on(elector.acquire());
    time.advance(timing().renew_deadline);
    assert!(write("at-the-deadline").is_ok());
    time.advance(ms(1));
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
    assert_eq!(posted, ["\"at-the-deadline\""]);
}

/// An elector on its own lease client that announces leadership through `main`, as
/// `Replica::wire` builds it, on `time`'s clock.
fn announcing_elector(
    server: &FakeServer,
    time: &ManualClock,
) -> (Elector<ClientLeaseApi>, Client) {
    let main = Client::new(server.config()).expect("main client");
    let lease = Client::new(main.config().for_leader_election(5.0, 10)).expect("lease client");
    let api = ClientLeaseApi::new(lease, NS, LEASE, time.clock());
    let mut elector = Elector::new(api, "me_abc".into(), timing(), time.clock()).expect("elector");
    let announcer = Announcer::lease_event(&main, NS, LEASE, "me_abc", time.clock());
    elector.announce_with(announcer);
    (elector, main)
}

/// The "became leader" Event POSTs the server has seen so far.
fn leader_events(server: &FakeServer) -> Vec<RequestRecord> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/events"))
        .collect()
}

/// Waits for the one "became leader" Event to be answered, at most [`LIVENESS`]: it is posted
/// in the background, and this bounds a loopback request that takes milliseconds.
fn wait_for_leader_event(server: &FakeServer) -> RequestRecord {
    let deadline = Instant::now() + LIVENESS;
    let answered = || leader_events(server).into_iter().find(|r| r.status != 0);
    while answered().is_none() && Instant::now() < deadline {
        std::thread::sleep(ms(20));
    }
    let events = leader_events(server);
    assert_eq!(events.len(), 1, "{events:?}");
    answered().expect("the Event was not answered")
}

#[test]
fn becoming_leader_records_an_event_on_the_lease_through_the_main_client() {
    let server = start_server();
    let time = ManualClock::new();
    let (mut elector, _main) = announcing_elector(&server, &time);
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
    let lease_conns: Vec<u64> = (records.iter())
        .filter(|r| r.class == RequestClass::Lease)
        .map(|r| r.conn_id)
        .collect();
    assert!(
        !lease_conns.contains(&event.conn_id),
        "on a lease connection"
    );
}

/// The Event's reply is held until the elector leads: an elector that waited for it would never
/// lead. Once released, the Event still lands.
#[test]
fn a_held_leader_event_does_not_delay_leading() {
    let server = start_server();
    let time = ManualClock::new();
    let (mut elector, _main) = announcing_elector(&server, &time);
    let (release, held) = smol::channel::bounded::<()>(1);
    server.set_fault(RequestClass::Other, Fault::Hold(held));
    let acquired = smol::block_on(within(LIVENESS, elector.acquire()));
    assert!(acquired.is_some(), "acquire waited for the Event");
    assert!(
        leader_events(&server).iter().all(|r| r.status == 0),
        "the Event was answered before the elector led"
    );
    drop(release);
    assert_eq!(wait_for_leader_event(&server).status, 201);
}
