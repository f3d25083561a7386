//! The scale benchmark on the real control plane: 3,000 real namespaces, 1 and 201 Mirrors
//! (200 selecting nothing), 2,000 relabels that change no selection, then one that does.

use super::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE};
use super::support::skiff::{TempDir, eventually};
use super::{Cell, LIMIT, Process, cpu_us, print_table};
use serde_json::json;
use std::time::{Duration, Instant};

const NAMESPACES: usize = 3_000;
const RELABELS: usize = 2_000;
const MIRROR_COUNTS: [usize; 2] = [1, 201];
/// The one Mirror that selects anything selects these namespaces.
const SELECTED: usize = 8;

pub fn run() {
    let cp = ControlPlane::start();
    cp.install_manifests();
    cp.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "app-ca", "namespace": OPERATOR_NAMESPACE},
        "data": {"ca.crt": "PEM"}})
        .to_string(),
    );
    create_namespaces(&cp);
    let mut cells = Vec::new();
    let mut mirrors = 0;
    for m in MIRROR_COUNTS {
        add_mirrors(&cp, mirrors, m);
        mirrors = m;
        cells.push(cell(&cp, m, cells.len()));
    }
    print_table(&cells);
}

fn create_namespaces(cp: &ControlPlane) {
    let items: Vec<_> = (0..NAMESPACES)
        .map(|i| {
            let labels = if i < SELECTED {
                json!({"group": "g0"})
            } else if i < SELECTED + RELABELS {
                json!({"churn": "0"})
            } else {
                json!({"quiet": "yes"})
            };
            json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": format!("scale-{i:05}"), "labels": labels}})
        })
        .collect();
    let started = Instant::now();
    for chunk in items.chunks(500) {
        let list = json!({"apiVersion": "v1", "kind": "List", "items": chunk});
        cp.apply(&list.to_string());
    }
    println!(
        "{NAMESPACES} namespaces created in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

fn add_mirrors(cp: &ControlPlane, from: usize, to: usize) {
    let items: Vec<_> = (from..to)
        .map(|i| {
            let group = if i == 0 {
                "g0".to_owned()
            } else {
                format!("nobody-{i}")
            };
            json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
                "metadata": {"name": format!("m-{i:04}"), "namespace": OPERATOR_NAMESPACE},
                "spec": {"source": {"kind": "ConfigMap", "name": "app-ca"},
                         "namespaceSelector": {"matchLabels": {"group": group}}}})
        })
        .collect();
    cp.apply(&json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string());
}

/// One cell: skiff (as the operator) converges, then the relabels are timed.
fn cell(cp: &ControlPlane, m: usize, round: usize) -> Cell {
    let dir = TempDir::new(&format!("scale-real-{m}"));
    let flags = ["--leader-election-namespace=skiff-system"];
    let mut p = Process::with(&cp.operator_kubeconfig(), &dir, "run", &flags, None);
    let converged = p.wait_converged(m);
    let start_to_converged = (converged - p.started).as_secs_f64();
    let before = p.settle();
    let cpu_before = cpu_us(p.pid());
    // Each round flips the churn label of the same 2,000 namespaces.
    let (from, to) = if round.is_multiple_of(2) {
        ("0", "1")
    } else {
        ("1", "0")
    };
    let sentinel = format!("scale-{:05}", SELECTED + round);
    let last_event = relabel_burst(cp, &mut p, (from, to), &sentinel, "group=g0", "app-ca");
    let drain = last_event.elapsed().as_secs_f64();
    let after = p.settle();
    let cpu = cpu_us(p.pid()) - cpu_before;
    let events = (RELABELS + 1) as f64;
    let cell = Cell {
        namespaces: NAMESPACES + 1,
        mirrors: m,
        cpu_per_event_us: cpu / events,
        reconciles_per_event: (after.1 - before.1) / events,
        drain,
        rss_anon_kib: super::proc_status_kib(p.pid(), "RssAnon").unwrap_or(0),
        start_to_converged,
        restart_writes: 0,
    };
    println!(
        "M={m}: {events} namespace events, {:.1} µs CPU each",
        cell.cpu_per_event_us
    );
    p.skiff.terminate(Duration::from_secs(30));
    cell
}

/// Flips `churn` from `from` to `to` on every namespace that has it (no selector names it),
/// then labels `sentinel` with `select`, a label that selects it, and waits until its copy of
/// `source` exists and the work queue is empty; returns when the last event was sent.
pub fn relabel_burst(
    cp: &ControlPlane,
    p: &mut Process,
    (from, to): (&str, &str),
    sentinel: &str,
    select: &str,
    source: &str,
) -> Instant {
    let (selector, label) = (format!("churn={from}"), format!("churn={to}"));
    let relabel = cp.kubectl(&[
        "label",
        "namespaces",
        "-l",
        &selector,
        &label,
        "--overwrite",
    ]);
    assert!(relabel.status.success(), "kubectl label failed");
    cp.kubectl_ok(&["label", "namespace", sentinel, select, "--overwrite"]);
    let last_event = Instant::now();
    let seen = eventually(LIMIT, || {
        std::thread::sleep(Duration::from_millis(100));
        cp.object("configmap", sentinel, source).is_some() && p.work().is_some_and(|w| w.2 == 0.0)
    });
    assert!(
        seen,
        "the sentinel's copy never came; log:\n{}",
        p.skiff.logs()
    );
    last_event
}
