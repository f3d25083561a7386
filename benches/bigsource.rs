//! Big sources on a real control plane: a 900 KB ConfigMap (a CA bundle with the public roots)
//! mirrored into 300 and into 1,000 namespaces, and a 1 MB Secret into 100. For each fan-out:
//! its time (Mirror created → `status.synced` reaches the count) and skiff's memory idle
//! before it, at its peak (VmHWM, reset before each fan-out with `clear_refs`), and 10 s after
//! it converged (past the heap's trim interval, so timing alone cannot meet the figure).
//!
//! `make bench-bigsource` runs it on the image's static binary (`SKIFF_BINARY`);
//! `BIGSOURCE_BASELINE=<another skiff>` runs that build too, on a control plane of its own, for
//! before/after figures from one run. Each binary gets a fresh control plane so etcd holds the
//! same history for both (a run writes about 1.3 GB of copies).

#[path = "../tests/support/mod.rs"]
#[cfg_attr(test, allow(unused_imports))]
mod support;

#[path = "real/footprint.rs"]
#[allow(dead_code)]
mod footprint;

use base64::Engine as _;
use footprint::{Footprint, mib};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::control_plane::{ControlPlane, OPERATOR_NAMESPACE};
use support::lease::LeaseReader;
use support::skiff::{Skiff, TempDir, binary, eventually, proc_status_kib};

const NAMESPACES: usize = 1_000;
const BATCH: usize = 500;
const SOURCE: &str = "app-ca";
const MIRROR: &str = "big";
const CONFIGMAP_BYTES: usize = 900 * 1024;
/// Decoded; base64 makes it 1.33 MB on the wire, within the API's 1 MiB of decoded data.
const SECRET_BYTES: usize = 1_000_000;
const AFTER: Duration = Duration::from_secs(10);
const STEP_LIMIT: Duration = Duration::from_secs(600);
/// As the issue measured: the bucket is not what paces a big fan-out.
const FLAGS: [&str; 6] = [
    "--leader-elect",
    "--leader-election-namespace=skiff-system",
    "--source-namespaces=skiff-system",
    "--kube-api-qps=200",
    "--kube-api-burst=200",
    "--secret-target-names=app-ca",
];

/// One fan-out: the source's kind, how many namespaces it goes to (the first `count`).
struct Scenario {
    name: &'static str,
    kind: &'static str,
    count: usize,
}

const SCENARIOS: [Scenario; 3] = [
    Scenario {
        name: "900 KB ConfigMap → 300 namespaces",
        kind: "ConfigMap",
        count: 300,
    },
    Scenario {
        name: "900 KB ConfigMap → 1,000 namespaces",
        kind: "ConfigMap",
        count: 1_000,
    },
    Scenario {
        name: "1 MB Secret → 100 namespaces",
        kind: "Secret",
        count: 100,
    },
];

struct Row {
    fan_out: Duration,
    idle: Footprint,
    peak: u64,
    after: Footprint,
    /// The first scenario's source edited once: the time until every copy holds the edit,
    /// and the peak while they are updated.
    edit: Option<(Duration, u64)>,
}

fn selector_label(count: usize) -> String {
    format!("first-{count}")
}

/// Namespaces `big-0000` …, each labelled `first-N: yes` for every scenario count N it is
/// within.
fn create_namespaces(cp: &ControlPlane) {
    for start in (0..NAMESPACES).step_by(BATCH) {
        let items: Vec<Value> = (start..(start + BATCH).min(NAMESPACES))
            .map(|i| {
                let labels: serde_json::Map<String, Value> = SCENARIOS
                    .iter()
                    .filter(|s| i < s.count)
                    .map(|s| (selector_label(s.count), json!("yes")))
                    .collect();
                json!({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": format!("big-{i:04}"), "labels": labels}})
            })
            .collect();
        create(
            cp,
            &json!({"apiVersion": "v1", "kind": "List", "items": items}),
        );
    }
}

/// `kubectl create` (not apply: a 900 KB object has no room for a last-applied annotation).
fn create(cp: &ControlPlane, object: &Value) {
    let out = cp.kubectl_stdin(&["create", "-f", "-", "-o", "name"], &object.to_string());
    assert!(
        out.status.success(),
        "kubectl create: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The operator may write Secret copies named `app-ca` (as the secret-targets component grants).
fn grant_secret_copies(cp: &ControlPlane) {
    cp.apply(&format!(
        r#"{{"apiVersion": "v1", "kind": "List", "items": [
          {{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {{"name": "bigsource-secrets"}},
            "rules": [{{"apiGroups": [""], "resources": ["secrets"],
                       "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}}]}},
          {{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {{"name": "bigsource-secrets"}},
            "roleRef": {{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "bigsource-secrets"}},
            "subjects": [{{"kind": "ServiceAccount", "name": "skiff", "namespace": "{OPERATOR_NAMESPACE}"}}]}}]}}"#
    ));
}

/// The source of `kind`: one key of 900 KB of PEM-like text, or 1 MB of bytes; `edited`
/// changes its first line.
fn source(kind: &str, edited: bool) -> Value {
    let metadata = json!({"name": SOURCE, "namespace": OPERATOR_NAMESPACE});
    let line = "MIIFazCCA1OgAwIBAgIRAIIQz7DSQONZRGPgu2OCiwAwDQYJKoZIhvcNAQELBQAw\n";
    if kind == "Secret" {
        let bytes: Vec<u8> = (0..SECRET_BYTES).map(|i| (i * 7 % 251) as u8).collect();
        let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
        return json!({"apiVersion": "v1", "kind": "Secret", "metadata": metadata,
                      "data": {"bundle": encoded}});
    }
    let mut pem = line.repeat(CONFIGMAP_BYTES / line.len());
    if edited {
        pem.replace_range(..4, "EDIT");
    }
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata,
           "data": {"ca-bundle.crt": pem}})
}

fn mirror(scenario: &Scenario) -> Value {
    json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
        "metadata": {"name": MIRROR, "namespace": OPERATOR_NAMESPACE},
        "spec": {"source": {"kind": scenario.kind, "name": SOURCE},
                 "namespaceSelector": {"matchLabels": {selector_label(scenario.count): "yes"}}}})
}

fn synced(cp: &ControlPlane) -> Option<u64> {
    cp.object("mirror", OPERATOR_NAMESPACE, MIRROR)?["status"]["synced"].as_u64()
}

fn clear_peak(pid: u32) {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("reset VmHWM (clear_refs)");
}

/// skiff `binary` as leader on `cp`.
fn leader(cp: &ControlPlane, binary: &Path, dir: &TempDir) -> Skiff {
    let program = [binary.as_os_str().to_owned()];
    let log = dir.0.join("skiff.log");
    let env = [("POD_NAME", "bigsource")];
    let mut skiff = Skiff::start_program(&program, &cp.operator_kubeconfig(), log, &FLAGS, &env);
    let mut lease = LeaseReader::new(cp);
    let leading = eventually(STEP_LIMIT, || {
        assert!(skiff.is_running(), "skiff exited; log:\n{}", skiff.logs());
        lease
            .read()
            .is_some_and(|l| l.holder.starts_with("bigsource"))
    });
    assert!(leading, "skiff did not lead; log:\n{}", skiff.logs());
    skiff
}

fn fan_out(cp: &ControlPlane, skiff: &mut Skiff, scenario: &Scenario) -> Row {
    let pid = skiff.child.id();
    create(cp, &source(scenario.kind, false));
    std::thread::sleep(Duration::from_secs(3));
    let idle = Footprint::of(pid);
    clear_peak(pid);
    let started = Instant::now();
    create(cp, &mirror(scenario));
    let done = eventually(STEP_LIMIT, || {
        assert!(skiff.is_running(), "skiff exited; log:\n{}", skiff.logs());
        // Each look runs kubectl: a few a second, not fifty, on a small machine.
        std::thread::sleep(Duration::from_millis(250));
        synced(cp) == Some(scenario.count as u64)
    });
    let fan_out = started.elapsed();
    assert!(done, "{}: synced {:?}", scenario.name, synced(cp));
    let peak = proc_status_kib(pid, "VmHWM").unwrap_or(0);
    std::thread::sleep(AFTER);
    let after = Footprint::of(pid);
    let edit = (scenario.count == SCENARIOS[0].count).then(|| edit(cp, skiff, scenario));
    cp.kubectl_ok(&["delete", "mirror", MIRROR, "-n", OPERATOR_NAMESPACE]);
    let kind = scenario.kind.to_lowercase();
    cp.kubectl_ok(&["delete", &kind, SOURCE, "-n", OPERATOR_NAMESPACE]);
    Row {
        fan_out,
        idle,
        peak,
        after,
        edit,
    }
}

/// Edits the source once; how long until every copy holds the edit, and the peak meanwhile.
fn edit(cp: &ControlPlane, skiff: &mut Skiff, scenario: &Scenario) -> (Duration, u64) {
    let pid = skiff.child.id();
    clear_peak(pid);
    let started = Instant::now();
    let edited = source(scenario.kind, true).to_string();
    let out = cp.kubectl_stdin(&["replace", "-f", "-"], &edited);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = format!("big-{:04}", scenario.count - 1);
    let first_line = "jsonpath={.data.ca-bundle\\.crt}";
    let edited_in = |i: usize| {
        let ns = format!("big-{i:04}");
        let got = cp.kubectl_ok(&["get", "cm", SOURCE, "-n", &ns, "-o", first_line]);
        got.starts_with("EDIT")
    };
    // The copies are updated in the order of their namespaces: the last one tells, and a
    // sample of the others is checked once it does.
    let done = eventually(STEP_LIMIT, || {
        assert!(skiff.is_running(), "skiff exited; log:\n{}", skiff.logs());
        std::thread::sleep(Duration::from_millis(250));
        edited_in(scenario.count - 1)
    });
    let elapsed = started.elapsed();
    assert!(done, "the edit did not reach {last}");
    let sample = (0..scenario.count).step_by(50);
    let missed: Vec<usize> = sample.filter(|&i| !edited_in(i)).collect();
    assert!(missed.is_empty(), "the edit did not reach big-{missed:?}");
    (elapsed, proc_status_kib(pid, "VmHWM").unwrap_or(0))
}

/// Every scenario for `binary` on a control plane of its own.
fn run(label: &str, binary: &Path) -> Vec<Row> {
    let cp = ControlPlane::start();
    cp.install_manifests();
    grant_secret_copies(&cp);
    create_namespaces(&cp);
    let dir = TempDir::new("bigsource");
    let mut skiff = leader(&cp, binary, &dir);
    std::thread::sleep(Duration::from_secs(5));
    let rows = SCENARIOS
        .iter()
        .map(|s| {
            let row = fan_out(&cp, &mut skiff, s);
            eprintln!("bigsource: {label}: {} in {:.1?}", s.name, row.fan_out);
            row
        })
        .collect();
    skiff.terminate(Duration::from_secs(60));
    rows
}

fn print(label: &str, rows: &[Row]) {
    println!("\n{label}\n");
    println!(
        "| fan-out | time | idle VmRSS / RssAnon / RssFile / VmHWM | peak VmHWM | 10 s after VmRSS / RssAnon / RssFile / VmHWM |"
    );
    println!("|---|---|---|---|---|");
    let four = |f: &Footprint| {
        format!(
            "{} / {} / {} / {}",
            mib(f.rss),
            mib(f.anon),
            mib(f.file),
            mib(f.peak)
        )
    };
    for (s, r) in SCENARIOS.iter().zip(rows) {
        println!(
            "| {} | {:.1} s | {} | **{}** | {} |",
            s.name,
            r.fan_out.as_secs_f64(),
            four(&r.idle),
            mib(r.peak),
            four(&r.after),
        );
        if let Some((time, peak)) = r.edit {
            println!(
                "| {}, source edited once | {:.1} s | | **{}** | |",
                s.name,
                time.as_secs_f64(),
                mib(peak)
            );
        }
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("bigsource: a benchmark only (`make bench-bigsource`)");
        return;
    }
    let measured = binary();
    let baseline = std::env::var_os("BIGSOURCE_BASELINE").map(PathBuf::from);
    let mut results = vec![(measured.clone(), run("measured", &measured))];
    if let Some(baseline) = baseline {
        let rows = run("baseline", &baseline);
        results.push((baseline, rows));
    }
    for (binary, rows) in &results {
        print(&binary.display().to_string(), rows);
    }
}
