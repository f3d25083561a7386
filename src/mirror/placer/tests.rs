//! The Placer against a hub that answers slowly: its Placement writes go out together, and one
//! member's refusal neither stops the others' writes nor hides the error.

use super::*;
use crate::kube::Config;
use crate::kube::api::ConfigMap;
use crate::mirror::fixtures::{self, map, mirror_of};
use crate::mirror::types::SourceKind;
use crate::testing::responder::{self, Request};
use serde_json::Value;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A hub API server that answers each request after a delay, counting the requests it holds at
/// once; a create in the namespace `refused` gets 403, any other its body back.
struct SlowHub {
    url: http_types::Url,
    /// The most requests held at once.
    peak: Arc<AtomicUsize>,
    /// The paths of the requests answered.
    paths: Arc<Mutex<Vec<String>>>,
}

struct Held {
    now: AtomicUsize,
    peak: Arc<AtomicUsize>,
    paths: Arc<Mutex<Vec<String>>>,
    delay: Duration,
    refused: String,
}

fn slow_hub(delay: Duration, refused: &str) -> SlowHub {
    let peak = Arc::new(AtomicUsize::new(0));
    let paths = Arc::new(Mutex::new(Vec::new()));
    let held = Held {
        now: AtomicUsize::new(0),
        peak: Arc::clone(&peak),
        paths: Arc::clone(&paths),
        delay,
        refused: refused.to_owned(),
    };
    let url = responder::serve(move |request| answer(request, &held));
    SlowHub {
        url: http_types::Url::parse(&url).expect("url"),
        peak,
        paths,
    }
}

/// Answers one request after the delay: 403 in the refused namespace, else its body back.
fn answer(request: Request, held: &Held) -> (u16, Value) {
    let now = held.now.fetch_add(1, Ordering::SeqCst) + 1;
    held.peak.fetch_max(now, Ordering::SeqCst);
    std::thread::sleep(held.delay);
    held.now.fetch_sub(1, Ordering::SeqCst);
    held.paths.lock().expect("paths").push(request.path.clone());
    if request
        .path
        .contains(&format!("/namespaces/{}/", held.refused))
    {
        let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "reason": "Forbidden", "code": 403, "message": "forbidden"});
        (403, status)
    } else {
        (201, request.body)
    }
}

fn placer(hub: &SlowHub) -> Placer {
    let mut config = Config::new(hub.url.clone());
    (config.qps, config.burst) = (1000.0, 1000);
    let client = Client::new(config).expect("client");
    let silence = Duration::from_secs(180);
    Placer::new(client, FleetStores::new(silence), silence)
}

fn members(n: usize) -> BTreeSet<String> {
    (0..n).map(|i| format!("member-{i}")).collect()
}

fn place(placer: &Placer, serves: &BTreeSet<String>) -> Result<Placed, Error> {
    let mirror = mirror_of("app", SourceKind::ConfigMap);
    let source = ConfigMap {
        metadata: ObjectMeta::named(Some("src"), "app"),
        data: map(&[("k", "v")]),
        ..ConfigMap::default()
    };
    let source = fixtures::source(SourceKind::ConfigMap, &source);
    let desired = DesiredCopy::of(&mirror, &source).expect("desired");
    smol::block_on(placer.place(&mirror, &desired, serves))
}

#[test]
fn placements_of_many_members_are_written_together() {
    let hub = slow_hub(Duration::from_millis(50), "none");
    let serves = members(8);
    let placed = place(&placer(&hub), &serves).expect("placed");
    let peak = hub.peak.load(Ordering::SeqCst);
    assert!(
        peak > 1,
        "the Placements were written one at a time (at most {peak} in flight)"
    );
    assert_eq!(hub.paths.lock().expect("paths").len(), serves.len());
    // Written now, not yet as wanted; no heartbeat heard from any member yet.
    assert_eq!((placed.synced, placed.clusters.silent), (0, 8));
    assert!(placed.conflicts.is_empty(), "{:?}", placed.conflicts);
}

#[test]
fn a_refused_placement_is_the_error_and_the_other_members_are_still_written() {
    let hub = slow_hub(Duration::from_millis(10), "member-2");
    let serves = members(6);
    let refused = place(&placer(&hub), &serves).expect_err("member-2 refused");
    assert_eq!(refused.code(), Some(403), "{refused}");
    let paths = hub.paths.lock().expect("paths").clone();
    for ns in &serves {
        assert!(
            paths
                .iter()
                .any(|p| p.contains(&format!("/namespaces/{ns}/"))),
            "no Placement written in {ns}: {paths:?}"
        );
    }
}

#[test]
fn the_writes_in_flight_stay_within_the_bound() {
    let hub = slow_hub(Duration::from_millis(20), "none");
    let serves = members(FLEET_IN_FLIGHT * 2);
    place(&placer(&hub), &serves).expect("placed");
    let peak = hub.peak.load(Ordering::SeqCst);
    assert!(
        (2..=FLEET_IN_FLIGHT).contains(&peak),
        "{peak} Placement writes in flight (bound {FLEET_IN_FLIGHT})"
    );
}

#[test]
fn placements_written_are_not_written_again_before_the_watch_shows_them() {
    let hub = slow_hub(Duration::from_millis(1), "none");
    let serves = members(4);
    // The stores are never fed: the watch has shown none of the writes.
    let placer = placer(&hub);
    place(&placer, &serves).expect("placed");
    assert_eq!(hub.paths.lock().expect("paths").len(), 4);
    let again = place(&placer, &serves).expect("placed again");
    let paths = hub.paths.lock().expect("paths").clone();
    assert_eq!(paths.len(), 4, "written again: {paths:?}");
    assert_eq!(again.synced, 0, "written, not yet seen as wanted");
}
