//! `Consent::report` against a small API server that answers status writes and Events and
//! counts them, with the acceptance cache moved by hand: what a reconcile writes when its
//! cache has not shown the status this replica wrote yet.

use super::*;
use crate::testing::responder::{self, Request};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// The acceptance `team-b/from-a` of the offer `team-a/share`, at `version`, showing `status`.
fn acceptance(version: &str, status: Value) -> MirrorAcceptance {
    let acceptance = json!({
        "apiVersion": "skiff.dev/v1alpha1",
        "kind": "MirrorAcceptance",
        "metadata": {
            "namespace": "team-b", "name": "from-a", "uid": "u-1",
            "resourceVersion": version, "generation": 1,
        },
        "spec": {"from": {"namespace": "team-a", "mirror": "share"}, "kind": "ConfigMap"},
        "status": status,
    });
    serde_json::from_value(acceptance).expect("an acceptance")
}

/// What the server has seen: each request as "METHOD path", and the acceptance's version.
#[derive(Default)]
struct Seen {
    requests: Vec<String>,
    version: u64,
}

/// An API server that applies a status patch to the acceptance (a new version each time)
/// and takes any Event.
struct Api {
    url: String,
    seen: Arc<Mutex<Seen>>,
}

impl Api {
    fn start(version: u64) -> Api {
        let seen = Arc::new(Mutex::new(Seen {
            version,
            ..Seen::default()
        }));
        let shared = Arc::clone(&seen);
        let url = responder::serve(move |request| answer(request, &shared));
        Api { url, seen }
    }

    fn requests(&self) -> Vec<String> {
        self.seen.lock().expect("seen").requests.clone()
    }
}

/// A status patch gets the acceptance at a new version showing the status sent; an Event is
/// taken as sent.
fn answer(request: Request, seen: &Mutex<Seen>) -> (u16, Value) {
    let mut seen = seen.lock().expect("seen");
    seen.requests
        .push(format!("{} {}", request.method, request.path));
    if request.method == "PATCH" {
        seen.version += 1;
        let version = seen.version.to_string();
        let patched = acceptance(&version, request.body["status"].clone());
        (200, serde_json::to_value(patched).unwrap_or(Value::Null))
    } else {
        (201, request.body)
    }
}

/// An API server with the acceptance at version 5, and a consent writing to it whose cache
/// holds that acceptance showing `status`.
fn at_version_5(status: Value) -> (Api, Consent) {
    let api = Api::start(5);
    let consent = sharing_at(&api.url, settings(&[SourceKind::ConfigMap], 10), &[], &[]);
    cache(&consent, acceptance("5", status));
    (api, consent)
}

/// One reconcile's report on the offer, with `verdict` for every acceptance.
fn report(consent: &Consent, verdict: Verdict) {
    let local = LocalNames::default();
    let reported = smol::block_on(consent.report(&offer(), |_, _| verdict, &local));
    reported.expect("the statuses written");
}

fn served_as(reason: &str) -> Value {
    json!({"conditions": [{
        "type": "Served", "status": "True", "reason": reason, "message": "m",
        "observedGeneration": 1, "lastTransitionTime": "2026-12-05T00:00:00Z",
    }]})
}

const STATUS: &str =
    "PATCH /apis/skiff.dev/v1alpha1/namespaces/team-b/mirroracceptances/from-a/status";
const EVENT: &str = "POST /api/v1/namespaces/team-b/events";

/// A reconcile that runs before the acceptance watch delivered this replica's status write
/// (the cache still at the version that write replaced) writes nothing and posts no Event:
/// without the record of what it told, it wrote the same status again and posted a second
/// `Served` Event (seen once in the e2e self-service suite). Once the cache shows the write,
/// the record goes, and a status someone else wrote since is corrected like any other.
#[test]
fn a_status_the_cache_has_not_shown_yet_is_neither_written_nor_announced_again() {
    let (api, consent) = at_version_5(json!({}));

    report(&consent, Verdict::Served);
    assert_eq!(api.requests(), [STATUS, EVENT], "the first report");

    report(&consent, Verdict::Served);
    assert_eq!(
        api.requests(),
        [STATUS, EVENT],
        "a cache behind this replica's write read as no status"
    );

    cache(&consent, acceptance("6", served_as("Served")));
    report(&consent, Verdict::Served);
    assert_eq!(api.requests(), [STATUS, EVENT], "the cache caught up");
    assert!(
        consent.told.is_empty(),
        "what the cache shows is not kept twice"
    );

    cache(&consent, acceptance("7", json!({})));
    report(&consent, Verdict::Served);
    let again = [STATUS, EVENT, STATUS, EVENT];
    assert_eq!(
        api.requests(),
        again,
        "a status cleared since is written again"
    );
}

/// A verdict that changes while the cache is still behind this replica's last write is
/// written, and announced, as a change from what this replica wrote.
#[test]
fn a_new_verdict_while_the_cache_is_behind_is_written_and_announced() {
    let (api, consent) = at_version_5(served_as("NotAvailable"));

    report(&consent, Verdict::Served);
    report(&consent, Verdict::NotAvailable);
    let both = [STATUS, EVENT, STATUS, EVENT];
    assert_eq!(
        api.requests(),
        both,
        "NotAvailable after Served, the cache at 5"
    );
}
