//! The world of the large-scale run: namespaces labelled over several keys, 1,000 Mirrors with
//! varied selectors (ten select 1,000 namespaces each, the rest a few or none), the peer's
//! identity and source, and what the run reads back (synced counts, copies, object versions).

use super::super::cgroup::MemoryCgroup;
use super::super::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE};
use super::super::support::peer;
use serde_json::{Value, json};
use skiff::kube::api::Namespace;
use skiff::kube::{Client, ListParams, load_kubeconfig_files};
use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Instant;

pub const MIRRORS: usize = 1_000;
pub const SOURCE: &str = "app-ca";
/// Mirrors selecting 1,000 namespaces each (`team=tN`), and the namespaces they select.
const TEAMS: usize = 10;
const PER_TEAM: usize = 1_000;
/// Each `app=aN` Mirror selects this many namespaces.
const PER_APP: usize = 2;
/// Namespaces (from the first) whose `churn` label the relabel burst flips.
const CHURN: std::ops::Range<usize> = 10_000..20_000;
/// Namespaces per `kubectl create` call, and the calls running at once.
const BATCH: usize = 1_000;
const CLIENTS: usize = 4;
/// The peer copies one source into the namespaces of one team.
pub const PEER_COPIES: usize = PER_TEAM;
/// The peer's source: its own name, so its copies never meet skiff's.
const PEER_SOURCE: &str = "peer-ca";
const PEER_LABEL: &str = "scale.skiff.dev/source";

pub fn namespace_name(i: usize) -> String {
    format!("scale-{i:06}")
}

/// The Mirrors `m-NNNN` with an `app=aN` selector: every fourth past the teams.
fn app_mirrors() -> impl Iterator<Item = usize> {
    (TEAMS..MIRRORS).filter(|i| i % 4 == 0)
}

fn labels(i: usize) -> Value {
    let mut labels = json!({"env": format!("e{}", i % 4)});
    if i < TEAMS * PER_TEAM {
        labels["team"] = json!(format!("t{}", i / PER_TEAM));
    }
    let apps: Vec<usize> = app_mirrors().collect();
    let app = i.checked_sub(TEAMS * PER_TEAM).map(|k| k / PER_APP);
    if let Some(&mirror) = app.and_then(|k| apps.get(k)) {
        labels["app"] = json!(format!("a{mirror}"));
    }
    if CHURN.contains(&i) {
        labels["churn"] = json!("0");
    }
    labels
}

/// The namespaces, in batches from [`CLIENTS`] kubectl processes at once; seconds taken.
pub fn create(cp: &ControlPlane, namespaces: usize) -> f64 {
    let started = Instant::now();
    let batches: Vec<std::ops::Range<usize>> = (0..namespaces)
        .step_by(BATCH)
        .map(|from| from..(from + BATCH).min(namespaces))
        .collect();
    std::thread::scope(|scope| {
        for share in batches.chunks(batches.len().div_ceil(CLIENTS)) {
            scope.spawn(move || {
                for range in share {
                    let items: Vec<Value> = range
                        .clone()
                        .map(|i| {
                            json!({"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": namespace_name(i), "labels": labels(i)}})
                        })
                        .collect();
                    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
                    let out =
                        cp.kubectl_stdin(&["create", "-f", "-", "-o", "name"], &list.to_string());
                    assert!(
                        out.status.success(),
                        "creating namespaces: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            });
        }
    });
    cp.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": SOURCE, "namespace": OPERATOR_NAMESPACE},
            "data": {"ca.crt": "PEM"}})
        .to_string(),
    );
    started.elapsed().as_secs_f64()
}

/// Seconds a paged LIST of every namespace takes (1,000 a page, as skiff's relist), for a
/// client with no rate limit.
pub fn list_time(cp: &ControlPlane) -> f64 {
    let mut config =
        load_kubeconfig_files(&[cp.admin_kubeconfig()], None).expect("the admin kubeconfig");
    config.qps = 10_000.0;
    config.burst = 10_000;
    let client = Client::new(config).expect("a client");
    let params = ListParams {
        limit: Some(1_000),
        ..ListParams::default()
    };
    let started = Instant::now();
    let list = smol::block_on(client.list_all::<Namespace>(None, &params)).expect("list");
    let took = started.elapsed().as_secs_f64();
    assert!(!list.items.is_empty());
    took
}

fn selector(i: usize) -> Value {
    let expr = |key: &str, op: &str, values: &[String]| json!({"key": key, "operator": op, "values": values});
    if i < TEAMS {
        return json!({"matchLabels": {"team": format!("t{i}")}});
    }
    match i % 4 {
        0 => json!({"matchLabels": {"app": format!("a{i}")}}),
        1 => json!({"matchExpressions": [
            expr("team", "In", &[format!("t{}", i % TEAMS)]),
            expr("env", "In", &[format!("nowhere-{i}")])]}),
        2 => json!({"matchExpressions": [
            expr("app", "Exists", &[]),
            expr("env", "NotIn", &(0..4).map(|e| format!("e{e}")).collect::<Vec<_>>())]}),
        _ => json!({"matchLabels": {"region": format!("r{i}")},
                    "matchExpressions": [expr("retired", "DoesNotExist", &[])]}),
    }
}

/// The 1,000 Mirrors: the fan-out starts.
pub fn add_mirrors(cp: &ControlPlane) {
    let items: Vec<Value> = (0..MIRRORS)
        .map(|i| {
            json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
                "metadata": {"name": format!("m-{i:04}"), "namespace": OPERATOR_NAMESPACE},
                "spec": {"source": {"kind": "ConfigMap", "name": SOURCE},
                         "namespaceSelector": selector(i)}})
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    let out = cp.kubectl_stdin(&["create", "-f", "-", "-o", "name"], &list.to_string());
    assert!(
        out.status.success(),
        "creating Mirrors: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn expected_copies() -> usize {
    TEAMS * PER_TEAM + app_mirrors().count() * PER_APP
}

/// The copies the Mirrors report synced, summed.
pub fn synced(cp: &ControlPlane) -> usize {
    let template = "jsonpath={range .items[*]}{.status.synced}{\"\\n\"}{end}";
    let out = cp.kubectl(&["get", "mirrors", "-n", OPERATOR_NAMESPACE, "-o", template]);
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|l| l.trim().parse::<usize>().ok())
        .sum()
}

pub fn count_copies(cp: &ControlPlane) -> usize {
    let selector = "app.kubernetes.io/managed-by=skiff";
    let out = cp.kubectl(&["get", "configmaps", "-A", "-l", selector, "-o", "name"]);
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// The resourceVersion of every copy and Mirror, by kind/namespace/name.
pub fn versions(cp: &ControlPlane) -> HashMap<String, String> {
    let template = "jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name} {.metadata.resourceVersion}{\"\\n\"}{end}";
    let copies = [
        "configmaps",
        "-A",
        "-l",
        "app.kubernetes.io/managed-by=skiff",
    ];
    let mirrors = ["mirrors", "-n", OPERATOR_NAMESPACE];
    let mut versions = HashMap::new();
    for what in [&copies[..], &mirrors[..]] {
        let mut args = vec!["get"];
        args.extend_from_slice(what);
        args.extend(["-o", template]);
        let out = cp.kubectl_ok(&args);
        for line in out.lines() {
            if let Some((key, rv)) = line.split_once(' ') {
                versions.insert(key.to_owned(), rv.to_owned());
            }
        }
    }
    versions
}

/// Objects created, changed or deleted between two [`versions`].
pub fn changed(before: &HashMap<String, String>, after: &HashMap<String, String>) -> usize {
    let differ = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .count();
    differ + before.keys().filter(|k| !after.contains_key(*k)).count()
}

/// The peer, leading with the source labelled for it; in `cgroup` if given.
pub fn start_peer(
    cp: &ControlPlane,
    binary: &Path,
    kubeconfig: &Path,
    name: &str,
    cgroup: Option<&MemoryCgroup>,
) -> Child {
    cp.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": PEER_SOURCE, "namespace": peer::NAMESPACE, "labels": {PEER_LABEL: "true"}},
            "data": {"ca.crt": "PEM"}})
        .to_string(),
    );
    let mut command = match cgroup {
        Some(cgroup) => cgroup.command(binary),
        None => std::process::Command::new(binary),
    };
    let log = std::fs::File::create(cp.dir().join(format!("{name}.log"))).expect("peer log");
    command
        .args([
            format!("--kubeconfig={}", kubeconfig.display()),
            "--leader-elect=true".into(),
            format!("--leader-election-namespace={}", peer::NAMESPACE),
            "--health-probe-bind-address=127.0.0.1:0".into(),
            "--kube-api-qps=20".into(),
            "--kube-api-burst=30".into(),
            format!("--source-namespace={}", peer::NAMESPACE),
            format!("--source-label={PEER_LABEL}"),
            "--namespace-selector=team=t1".into(),
            "--cache-all-namespaces".into(),
        ])
        .env("POD_NAME", name)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start the peer")
}

/// The label selector of the peer's copies.
fn peer_copies_selector() -> String {
    format!(
        "{PEER_LABEL},app.kubernetes.io/managed-by={}",
        peer::MANAGER
    )
}

/// The peer's copies.
pub fn peer_copies(cp: &ControlPlane) -> usize {
    let selector = peer_copies_selector();
    let out = cp.kubectl(&["get", "configmaps", "-A", "-l", &selector, "-o", "name"]);
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// Deletes the peer's copies and its Lease (a killed peer leaves it held), so its next run
/// leads at once and fans out again.
pub fn reset_peer(cp: &ControlPlane) {
    let selector = peer_copies_selector();
    let _ = cp.kubectl(&[
        "delete",
        "configmaps",
        "-A",
        "-l",
        &selector,
        "--wait=false",
    ]);
    let _ = cp.kubectl(&["delete", "lease", peer::LEASE, "-n", peer::NAMESPACE]);
}
