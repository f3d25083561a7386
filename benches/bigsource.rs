//! Big sources on a real control plane: a 900 KB ConfigMap (a CA bundle with the public roots)
//! mirrored into 300 and into 1,000 namespaces, and a 1 MB Secret into 100, by skiff and by the
//! controller-runtime peer beside it. For each fan-out: its time (trigger → every copy written:
//! skiff's `status.synced`, the peer's copies counted) and the operator's memory idle before it,
//! at its peak (VmHWM, reset before each fan-out with `clear_refs`), and 10 s after it converged
//! (past the heap's trim interval, so timing alone cannot meet the figure). The first source is
//! then edited once: the time until every copy's resourceVersion is past the edit's, and the
//! peak meanwhile.
//!
//! `make bench-bigsource` runs it on the image's static binary (`SKIFF_BINARY`) and the peer
//! (`SKIFF_PEER`, `make peer`; `BIGSOURCE_PEER=0` leaves it out); `BIGSOURCE_BASELINE=<another
//! skiff>` runs that build too. Each operator gets a fresh control plane so etcd holds the same
//! history for each (a run writes about 1.3 GB of copies).

#[path = "../tests/support/mod.rs"]
#[cfg_attr(test, allow(unused_imports))]
mod support;

#[path = "real/footprint.rs"]
#[allow(dead_code)]
mod footprint;
#[path = "bigsource/operators.rs"]
mod operators;
#[path = "bigsource/report.rs"]
mod report;
#[path = "bigsource/world.rs"]
mod world;

use footprint::Footprint;
use operators::{Operator, PeerOperator, SkiffOperator};
use report::{Results, Row};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use support::control_plane::{ControlPlane, OPERATOR_NAMESPACE};
use support::skiff::{binary, eventually, proc_status_kib};
use world::{SCENARIOS, Scenario};

const AFTER: Duration = Duration::from_secs(10);
const STEP_LIMIT: Duration = Duration::from_secs(600);

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

fn clear_peak(pid: u32) {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("reset VmHWM (clear_refs)");
}

/// Whether `done` came to hold within `STEP_LIMIT`, looking a few times a second (each look
/// runs a request: not fifty a second, on a small machine); panics if the operator exits.
fn poll(operator: &mut dyn Operator, mut done: impl FnMut(&mut dyn Operator) -> bool) -> bool {
    eventually(STEP_LIMIT, || {
        operator.pid();
        std::thread::sleep(Duration::from_millis(250));
        done(&mut *operator)
    })
}

fn fan_out(cp: &ControlPlane, operator: &mut dyn Operator, scenario: &Scenario) -> Row {
    operator.ready(cp, scenario);
    std::thread::sleep(Duration::from_secs(3));
    let pid = operator.pid();
    let idle = Footprint::of(pid);
    clear_peak(pid);
    let started = Instant::now();
    operator.trigger(cp, scenario);
    let done = poll(operator, |operator| operator.converged(cp, scenario));
    let fan_out = started.elapsed();
    assert!(done, "{}: not converged", scenario.name);
    let peak = proc_status_kib(pid, "VmHWM").unwrap_or(0);
    std::thread::sleep(AFTER);
    let after = Footprint::of(pid);
    let edit = scenario.edited.then(|| edit(cp, operator, scenario));
    operator.clean_up(cp, scenario);
    Row {
        fan_out,
        idle,
        peak,
        after,
        edit,
    }
}

/// Edits the source once; how long until every copy was written after the edit, and the peak
/// meanwhile. A sample of the copies is then checked to hold the edit.
fn edit(cp: &ControlPlane, operator: &mut dyn Operator, scenario: &Scenario) -> (Duration, u64) {
    let pid = operator.pid();
    clear_peak(pid);
    let started = Instant::now();
    let edited_at = world::replace(cp, &operator.source(scenario, true));
    let manager = operator.manager();
    let done = poll(operator, |_| {
        let versions = world::copy_versions(cp, scenario, manager);
        versions.iter().filter(|&&v| v > edited_at).count() == scenario.count
    });
    let elapsed = started.elapsed();
    assert!(done, "the edit did not reach every copy");
    let missed: Vec<usize> = (0..scenario.count)
        .step_by(50)
        .filter(|&i| !world::holds_edit(cp, i))
        .collect();
    assert!(missed.is_empty(), "the edit did not reach big-{missed:?}");
    (elapsed, proc_status_kib(pid, "VmHWM").unwrap_or(0))
}

/// A control plane with skiff's manifests and the bench's namespaces.
fn control_plane() -> ControlPlane {
    let cp = ControlPlane::start();
    cp.install_manifests();
    grant_secret_copies(&cp);
    world::create_namespaces(&cp);
    cp
}

/// Every scenario `operator` copies, on `cp`.
fn scenarios(cp: &ControlPlane, label: &str, operator: &mut dyn Operator) -> Vec<Option<Row>> {
    std::thread::sleep(Duration::from_secs(5));
    let rows = SCENARIOS.iter().map(|s| {
        let row = operator.copies(s).then(|| fan_out(cp, operator, s));
        if let Some(row) = &row {
            eprintln!("bigsource: {label}: {} in {:.1?}", s.name, row.fan_out);
        }
        row
    });
    rows.collect()
}

fn run_skiff(label: &str, binary: &std::path::Path) -> Results {
    let cp = control_plane();
    let mut skiff = SkiffOperator::start(&cp, binary);
    let rows = scenarios(&cp, label, &mut skiff);
    skiff.stop();
    eprintln!("bigsource: skiff ({label}) was {}", binary.display());
    Results {
        label: format!("skiff ({label})"),
        rows,
    }
}

fn run_peer() -> Results {
    let cp = control_plane();
    let mut peer = PeerOperator::install(&cp);
    let rows = scenarios(&cp, "peer", &mut peer);
    Results {
        label: "controller-runtime peer".into(),
        rows,
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("bigsource: a benchmark only (`make bench-bigsource`)");
        return;
    }
    let mut results = vec![run_skiff("measured", &binary())];
    if let Some(baseline) = std::env::var_os("BIGSOURCE_BASELINE").map(PathBuf::from) {
        results.push(run_skiff("baseline", &baseline));
    }
    if std::env::var("BIGSOURCE_PEER").as_deref() != Ok("0") {
        results.push(run_peer());
    }
    results.iter().for_each(report::print_one);
    report::print_side_by_side(&results);
}
