//! A cert-manager-shaped `kubernetes.io/tls` Secret's `ca.crt` and `tls.crt` published as a
//! ConfigMap into 1,000 namespaces, beside a ConfigMap source holding the same text, on a real
//! control plane (the e2e harness's etcd and kube-apiserver) with skiff as leader under the
//! RBAC of `deploy/secret-targets`.
//!
//! One Mirror after another into the same namespaces: a small ConfigMap first (not counted: it
//! pays for the first Mirror's selection), then the ConfigMap source, the projection, the
//! projection again and the ConfigMap source again (A B B A: a drift of the heap over the run
//! weighs on both alike). For each: the time from `kubectl apply` of the Mirror to its status counting every copy, and
//! skiff's RssAnon growth (median of 10 readings) divided by the copies it added. Goal: the
//! projection within ±10 % of the ConfigMap source, in time and in RssAnon per copy.
//!
//! `cargo bench --bench projection` prints the table (`SKIFF_BENCH_NAMESPACES` changes the
//! 1,000 namespaces); `cargo test --all-targets` runs it with 20 namespaces and checks only
//! that each Mirror converges.

// Built with cfg(test) but no test harness, the support files' test modules import unused items.
#[path = "../tests/support/mod.rs"]
#[cfg_attr(test, allow(unused_imports))]
mod support;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::time::Instant;
use support::bench::{STEP_LIMIT, bench_mode, leading, settle};
use support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, e2e_enabled};
use support::pem::issued;
use support::skiff::{eventually, rss_anon_median};

const SELECT_LABEL: &str = "projection-bench";
const CONFIGMAP: &str = "ConfigMap source";
const PROJECTION: &str = "Secret published as a ConfigMap";
const FLAGS: [&str; 6] = [
    "--leader-elect",
    "--leader-election-namespace=skiff-system",
    "--source-namespaces=skiff-system",
    "--kube-api-qps=100",
    "--kube-api-burst=100",
    "--secret-target-names=app-tls",
];

/// The sources: a small ConfigMap (the warm-up), a ConfigMap holding a CA and a chain, and the
/// cert-manager Secret holding the same beside its key.
fn sources(cp: &ControlPlane) {
    let pem = issued();
    let b64 = |text: &str| STANDARD.encode(text);
    for source in [
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "warm-up", "namespace": OPERATOR_NAMESPACE},
            "data": {"k": "v"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "ca-configmap", "namespace": OPERATOR_NAMESPACE},
            "data": {"ca.crt": pem.ca, "tls.crt": pem.chain}}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": "ca-secret", "namespace": OPERATOR_NAMESPACE},
            "data": {"ca.crt": b64(&pem.ca), "tls.crt": b64(&pem.chain), "tls.key": b64(&pem.key)}}),
    ] {
        cp.apply(&source.to_string());
    }
}

/// The Mirror `name` of `source` (spec.source members), with `extra` spec members.
fn mirror(cp: &ControlPlane, name: &str, source: Value, extra: Value) {
    let mut spec = json!({"source": source,
        "namespaceSelector": {"matchLabels": {SELECT_LABEL: "yes"}}});
    for (field, value) in extra.as_object().into_iter().flatten() {
        spec[field] = value.clone();
    }
    cp.apply(
        &json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE}, "spec": spec})
        .to_string(),
    );
}

fn synced(cp: &ControlPlane, name: &str) -> Option<u64> {
    let mirror = cp.object("mirror", OPERATOR_NAMESPACE, name)?;
    mirror["status"]["synced"].as_u64()
}

/// One measured Mirror: its name, the seconds to every copy, and RssAnon per added copy.
struct Step {
    name: &'static str,
    seconds: f64,
    per_copy: f64,
}

fn main() {
    if !e2e_enabled() {
        println!("projection: skipped (no control plane binaries; make testbin)");
        return;
    }
    let namespaces = support::bench::namespaces();
    let cp = support::bench::control_plane("secret-targets");
    cp.create_namespaces("projection", &[(SELECT_LABEL, "yes")], namespaces);
    sources(&cp);
    let (skiff, _dir) = leading(&cp, "projection-bench", &FLAGS);
    let pid = skiff.child.id();
    // The two sources in the order A B B A, so that a drift of the heap over the run (reuse
    // of what an earlier fan-out freed) weighs on both alike.
    let configmap = || {
        let source = json!({"kind": "ConfigMap", "name": "ca-configmap"});
        (CONFIGMAP, source, json!({}))
    };
    let projection = || {
        let source = json!({"kind": "Secret", "name": "ca-secret", "keys": ["ca.crt", "tls.crt"]});
        (PROJECTION, source, json!({"target": {"kind": "ConfigMap"}}))
    };
    let warm_up = (
        "warm-up",
        json!({"kind": "ConfigMap", "name": "warm-up"}),
        json!({}),
    );
    let runs = [
        warm_up,
        configmap(),
        projection(),
        projection(),
        configmap(),
    ];
    settle();
    let mut before = rss_anon_median(pid);
    let mut steps = Vec::new();
    for (i, (name, source, mut extra)) in runs.into_iter().enumerate() {
        let mirror_name = format!("bench-{i}");
        extra["targetName"] = json!(mirror_name);
        let started = Instant::now();
        mirror(&cp, &mirror_name, source, extra);
        let done = eventually(STEP_LIMIT, || {
            synced(&cp, &mirror_name) == Some(namespaces as u64)
        });
        let seconds = started.elapsed().as_secs_f64();
        assert!(done, "{name} did not converge; log:\n{}", skiff.logs());
        settle();
        let now = rss_anon_median(pid);
        let per_copy = (now as f64 - before as f64) * 1024.0 / namespaces as f64;
        before = now;
        steps.push(Step {
            name,
            seconds,
            per_copy,
        });
    }
    let copies = cp.kubectl_ok(&[
        "get",
        "configmap",
        "-A",
        "-l",
        "app.kubernetes.io/managed-by=skiff",
        "--no-headers",
    ]);
    assert_eq!(
        copies.lines().count(),
        steps.len() * namespaces,
        "every copy a ConfigMap"
    );
    support::bench::finish(skiff, &cp);
    if !bench_mode() {
        return;
    }
    report(namespaces, &steps);
}

fn report(namespaces: usize, steps: &[Step]) {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().next().unwrap_or("?").to_owned();
    println!(
        "\nskiff (release) as leader on a real control plane, {namespaces} namespaces, \
         --kube-api-qps=100, one Mirror after another; load average {load} at the end\n"
    );
    println!("| Mirror | to every copy | per copy | RssAnon per added copy |");
    println!("|---|---|---|---|");
    for step in steps {
        println!(
            "| {} | {:.2} s | {:.2} ms | {:.0} B |",
            step.name,
            step.seconds,
            step.seconds * 1000.0 / namespaces as f64,
            step.per_copy
        );
    }
    let mean = |name: &str, of: fn(&Step) -> f64| {
        let of_name: Vec<f64> = steps.iter().filter(|s| s.name == name).map(of).collect();
        of_name.iter().sum::<f64>() / of_name.len().max(1) as f64
    };
    let time = mean(PROJECTION, |s| s.seconds) / mean(CONFIGMAP, |s| s.seconds);
    let memory = mean(PROJECTION, |s| s.per_copy) / mean(CONFIGMAP, |s| s.per_copy);
    let verdict = |r: f64| {
        if (0.9..=1.1).contains(&r) {
            "met"
        } else {
            "missed"
        }
    };
    println!(
        "\n- Time, projection ÷ ConfigMap source (means of two each): {time:.2}× (±10 %: {}).\n- \
         RssAnon per copy, projection ÷ ConfigMap source (means of two each): {memory:.2}× \
         (±10 %: {}).",
        verdict(time),
        verdict(memory)
    );
}
