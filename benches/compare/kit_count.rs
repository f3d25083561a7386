//! What the kit part counts: when every kit object is present (a kubectl watch per kind), the
//! requests of a window (the operator's client metrics, and the API server's audit log), and
//! the machine's load. Why a watch and not polls: four full lists every 100 ms would take a
//! core of the two the operators and the API server share; a watch reports each object as the
//! server stores it.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead as _;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use crate::kit::OBJECTS;
use crate::operator::{Kind, Operator};
use crate::support::audit::AuditEvent;
use crate::support::control_plane::ControlPlane;
use crate::support::scrape::sum_samples;
use crate::world;

/// A watch per kind of the operator's copies; reports when each kind is in `count` of the
/// operator's kit namespaces.
pub struct Seen {
    done: mpsc::Receiver<Instant>,
    children: Vec<std::process::Child>,
}

/// The label selector of an operator's copies.
pub fn managed_by(operator: &Operator) -> &'static str {
    match operator.kind {
        Kind::Skiff => "app.kubernetes.io/managed-by=skiff",
        Kind::Peer(_) => "app.kubernetes.io/managed-by=skiff-peer",
    }
}

/// A watch per kind of the objects matching `managed_by` in the namespaces named `prefix…`.
pub fn watch_objects(cp: &ControlPlane, managed_by: &str, prefix: &str, count: usize) -> Seen {
    let (tx, done) = mpsc::channel();
    let mut children = Vec::new();
    for object in &OBJECTS {
        let template = "jsonpath={.metadata.namespace}{\"\\n\"}";
        let args = [
            "get",
            object.resource,
            "-A",
            "-l",
            managed_by,
            "--watch",
            "-o",
            template,
        ];
        let mut child = cp.admin().spawn(&args);
        let stdout = child.stdout.take().expect("stdout is piped");
        children.push(child);
        let (tx, prefix) = (tx.clone(), prefix.to_owned());
        std::thread::spawn(move || {
            let mut namespaces = BTreeSet::new();
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if line.starts_with(&prefix) && namespaces.insert(line) && namespaces.len() == count
                {
                    let _ = tx.send(Instant::now());
                }
            }
        });
    }
    Seen { done, children }
}

impl Seen {
    /// From `from` to the last kind complete, or `None` past `limit`.
    pub fn wait(self, from: Instant, limit: Duration) -> Option<Duration> {
        let mut last = from;
        for _ in &OBJECTS {
            let left = limit.checked_sub(from.elapsed())?;
            last = last.max(self.done.recv_timeout(left).ok()?);
        }
        Some(last - from)
    }
}

impl Drop for Seen {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The operator's requests the audit log holds, received in `[from, to]`: each once (a watch
/// when its response started, anything else when complete).
pub fn requests(
    cp: &ControlPlane,
    operator: &Operator,
    from: SystemTime,
    to: SystemTime,
) -> Vec<AuditEvent> {
    requests_of(cp, &[world::user(operator).to_owned()], from, to)
}

/// As [`requests`], of any of `users`.
pub fn requests_of(
    cp: &ControlPlane,
    users: &[String],
    from: SystemTime,
    to: SystemTime,
) -> Vec<AuditEvent> {
    cp.audit()
        .into_iter()
        .filter(|e| users.contains(&e.user) && e.received >= from && e.received <= to)
        .filter(|e| {
            let watch = e.verb == "watch";
            (watch && e.stage == "ResponseStarted") || (!watch && e.stage == "ResponseComplete")
        })
        .collect()
}

/// Requests between two scrapes: all, the Lease's, and skiff's main client's by method and code.
pub fn counted(
    operator: &Operator,
    before: &str,
    after: &str,
    audited: &[AuditEvent],
) -> (f64, f64, BTreeMap<String, f64>) {
    let delta = |labels: &[(&str, &str)]| {
        sum_samples(after, "rest_client_requests_total", labels)
            - sum_samples(before, "rest_client_requests_total", labels)
    };
    let all = delta(&[]);
    if !operator.is_skiff() {
        let lease = audited.iter().filter(|e| e.is_lease()).count() as f64;
        return (all, lease, BTreeMap::new());
    }
    let mut by_method = BTreeMap::new();
    for line in after
        .lines()
        .filter(|l| l.starts_with("rest_client_requests_total{"))
    {
        let label = |key: &str| line.split(&format!("{key}=\"")).nth(1)?.split('"').next();
        if let (Some("main"), Some(method), Some(code)) =
            (label("client"), label("method"), label("code"))
        {
            let n = delta(&[("client", "main"), ("method", method), ("code", code)]);
            if n > 0.0 {
                by_method.insert(format!("{method} {code}"), n);
            }
        }
    }
    (all, delta(&[("client", "leader-election")]), by_method)
}

/// Whether a request is about a kit kind's objects.
pub fn is_kit(event: &AuditEvent) -> bool {
    let path = event.uri.split('?').next().unwrap_or_default();
    path.split('/')
        .any(|segment| OBJECTS.iter().any(|o| o.resource == segment))
}

/// The 1-minute load average (`/proc/loadavg`); the machine is shared.
pub fn load_average() -> f64 {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let first = text.split_whitespace().next().unwrap_or_default();
    first.parse().unwrap_or(0.0)
}

/// The requests by verb and resource (`subresource` after a slash), e.g. `create
/// networkpolicies` or `update mirrors/status`.
pub fn by_resource(audited: &[AuditEvent]) -> BTreeMap<String, usize> {
    let mut all = BTreeMap::new();
    for event in audited {
        *all.entry(format!("{} {}", event.verb, resource(&event.uri)))
            .or_default() += 1;
    }
    all
}

/// The resource of a request's URI: `/api/v1/namespaces/ns/events` → `events`.
fn resource(uri: &str) -> String {
    let path = uri.split('?').next().unwrap_or_default();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let skip = if segments.first() == Some(&"api") {
        2
    } else {
        3
    };
    let rest = segments.get(skip..).unwrap_or_default();
    let rest = match rest {
        ["namespaces", _, tail @ ..] if !tail.is_empty() => tail,
        _ => rest,
    };
    match rest {
        [resource, _, sub, ..] => format!("{resource}/{sub}"),
        [resource, ..] => (*resource).to_owned(),
        [] => path.to_owned(),
    }
}

/// `what: n, …` (whole counts: an `f64` shows no fraction).
pub fn listed<N: std::fmt::Display>(counts: &BTreeMap<String, N>) -> String {
    let parts: Vec<String> = counts
        .iter()
        .map(|(what, n)| format!("{what}: {n}"))
        .collect();
    parts.join(", ")
}
