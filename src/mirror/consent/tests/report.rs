//! `Consent::report` against a small API server that answers status writes and Events and
//! counts them, with the acceptance cache moved by hand: what a reconcile writes when its
//! cache has not shown the status this replica wrote yet.

use super::*;
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// The acceptance `team-b/from-a` of the offer `team-a/share`, at `version`, showing `status`.
fn acceptance(version: &str, status: Value) -> Value {
    json!({
        "apiVersion": "skiff.dev/v1alpha1",
        "kind": "MirrorAcceptance",
        "metadata": {
            "namespace": "team-b", "name": "from-a", "uid": "u-1",
            "resourceVersion": version, "generation": 1,
        },
        "spec": {"from": {"namespace": "team-a", "mirror": "share"}, "kind": "ConfigMap"},
        "status": status,
    })
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
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let seen = Arc::new(Mutex::new(Seen {
            version,
            ..Seen::default()
        }));
        let shared = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let seen = Arc::clone(&shared);
                std::thread::spawn(move || serve(&stream, &seen));
            }
        });
        Api { url, seen }
    }

    fn requests(&self) -> Vec<String> {
        self.seen.lock().expect("seen").requests.clone()
    }
}

/// Answers the requests of one connection until the client closes it.
fn serve(stream: &TcpStream, seen: &Mutex<Seen>) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut first = String::new();
        if reader.read_line(&mut first).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim_end().is_empty() {
                break;
            }
            if let Some((name, value)) = line.trim_end().split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let mut parts = first.split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let sent: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let (status, reply) = {
            let mut seen = seen.lock().expect("seen");
            seen.requests.push(format!("{method} {path}"));
            if method == "PATCH" {
                seen.version += 1;
                let version = seen.version.to_string();
                ("200 OK", acceptance(&version, sent["status"].clone()))
            } else {
                ("201 Created", sent)
            }
        };
        let reply = reply.to_string();
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            reply.len()
        );
        let mut out = stream;
        if out.write_all(head.as_bytes()).is_err() || out.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// The acceptance cache now holds `acceptance`.
fn cached(consent: &Consent, acceptance: Value) {
    cache(
        consent,
        serde_json::from_value(acceptance).expect("an acceptance"),
    );
}

/// An API server with the acceptance at version 5, and a consent writing to it whose cache
/// holds that acceptance showing `status`.
fn at_version_5(status: Value) -> (Api, Consent) {
    let api = Api::start(5);
    let consent = sharing_at(&api.url, settings(&[SourceKind::ConfigMap], 10), &[], &[]);
    cached(&consent, acceptance("5", status));
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

    cached(&consent, acceptance("6", served_as("Served")));
    report(&consent, Verdict::Served);
    assert_eq!(api.requests(), [STATUS, EVENT], "the cache caught up");
    assert!(
        consent.told.is_empty(),
        "what the cache shows is not kept twice"
    );

    cached(&consent, acceptance("7", json!({})));
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
