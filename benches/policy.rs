//! `cargo bench --bench policy`: what the admission policy `skiff-writes` costs the API server's
//! writes, and what the policies stop, on a real control plane of its own (the e2e harness's
//! etcd and kube-apiserver, `manifests/` installed).
//!
//! 1. Write latency. The policy matches every ConfigMap, Secret and kit-kind write in the
//!    cluster: another writer's (the admin's, here) meets its match condition on skiff's
//!    username and nothing more, skiff's own (its token patching its labelled copies) is
//!    evaluated whole. Each is timed at 1,000 merge patches with the policy and 1,000 without it
//!    (its binding deleted), one at a time on a kept-alive connection, in blocks of 250 in the
//!    order with, without, without, with, ... so that drift of a shared machine falls on both;
//!    one writer after the other.
//! 2. The thief's attempts (`tests/support/thief.rs`), sent as dry runs (RBAC and admission
//!    decide as for the write, nothing is stored), in each install mode: how many get through
//!    without the policies this change added (`skiff-writes` and `skiff-kit-namespaces`, their
//!    bindings deleted) and with them. The `policy` e2e suite sends the same attempts for real.
//!
//! `cargo test --all-targets` runs it with 20 writes a block and prints no figures.

// Built with cfg(test) but no test harness, the support files' test modules import unused items.
#[path = "../tests/support/mod.rs"]
#[cfg_attr(test, allow(unused_imports))]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skiff::kube::api::ConfigMap;
use skiff::kube::{Client, load_kubeconfig_files};
use support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, e2e_enabled};
use support::skiff::eventually;
use support::thief::{ATTEMPTS, Scene, Thief, each_install_mode, unlabelled_create_denied};

/// Writes per block; with [`ORDER`]'s 4 blocks of each setting, 1,000 with and 1,000 without.
const BLOCK: usize = 250;
/// With the policy (true) or without it, block after block.
const ORDER: [bool; 8] = [true, false, false, true, true, false, false, true];
/// Writes before the first block, not timed (connections, caches).
const WARM_UP: usize = 100;
/// Objects the writes go round.
const OBJECTS: usize = 10;
/// How long a policy change may take to be enforced.
const SETTLE: Duration = Duration::from_secs(30);

fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// Who writes: the admin (another writer) or skiff's token on its own copies.
struct Writer {
    name: &'static str,
    client: Client,
    namespace: String,
    object: &'static str,
}

impl Writer {
    fn new(name: &'static str, kubeconfig: &Path, namespace: &str, object: &'static str) -> Writer {
        let mut config =
            load_kubeconfig_files(&[kubeconfig.to_owned()], None).expect("a kubeconfig");
        config.qps = 1_000_000.0;
        config.burst = 1_000_000;
        Writer {
            name,
            client: Client::new(config).expect("a client"),
            namespace: namespace.to_owned(),
            object,
        }
    }

    /// `count` merge patches, one at a time; how long each took.
    fn write(&self, count: usize, round: usize) -> Vec<Duration> {
        (0..count)
            .map(|i| {
                let name = format!("{}-{}", self.object, i % OBJECTS);
                let patch = json!({"data": {"n": format!("{round}-{i}")}});
                let started = Instant::now();
                smol::block_on(self.client.patch_merge::<ConfigMap>(
                    Some(&self.namespace),
                    &name,
                    &patch,
                ))
                .unwrap_or_else(|e| panic!("{}: patch {name}: {e}", self.name));
                started.elapsed()
            })
            .collect()
    }
}

/// The objects both writers patch, the admin's own and copies labelled as skiff's, in a new
/// namespace; its name.
fn objects(cp: &ControlPlane) -> String {
    let namespace = cp.create_namespace("policy-bench", &[]);
    let skiff = json!({"app.kubernetes.io/managed-by": "skiff",
        "skiff.dev/mirror-namespace": OPERATOR_NAMESPACE, "skiff.dev/mirror-name": "bench"});
    let items: Vec<Value> = (0..OBJECTS)
        .flat_map(|i| {
            [
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("theirs-{i}"), "namespace": namespace}}),
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("copy-{i}"), "namespace": namespace, "labels": skiff}}),
            ]
        })
        .collect();
    cp.apply(&json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string());
    namespace
}

/// Deletes (`false`) or restores the bindings `saved`, and waits until `thief`'s unlabelled
/// create shows it.
fn set_bindings(cp: &ControlPlane, thief: &Thief, saved: &[Value], present: bool) {
    for binding in saved {
        let name = binding["metadata"]["name"]
            .as_str()
            .expect("a binding's name");
        if present {
            let mut object = binding.clone();
            for field in ["resourceVersion", "uid", "creationTimestamp", "generation"] {
                object["metadata"].as_object_mut().map(|m| m.remove(field));
            }
            cp.apply(&object.to_string());
        } else {
            let kind = "validatingadmissionpolicybinding";
            cp.kubectl_ok(&["delete", kind, name, "--ignore-not-found"]);
        }
    }
    let namespace = thief.mirrors;
    let settled = eventually(SETTLE, || {
        unlabelled_create_denied(cp, &thief.token, namespace) == present
    });
    assert!(
        settled,
        "{}: the policy not {}",
        thief.name,
        if present { "enforced" } else { "gone" }
    );
}

/// The bindings of the policies this change added in `thief`'s mode, as installed.
fn bindings(cp: &ControlPlane, thief: &Thief) -> Vec<Value> {
    (thief.new_bindings().iter())
        .filter_map(|name| cp.get_json(&["validatingadmissionpolicybinding", name]))
        .collect()
}

/// p50, p90, p99 and mean of `samples`, in ms.
fn summary(samples: &mut [Duration]) -> [f64; 4] {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    [at(0.5), at(0.9), at(0.99), mean].map(|d| d.as_secs_f64() * 1000.0)
}

/// Part 1: each writer's latencies with the policy and without, `per_block` writes a block.
fn latencies(cp: &ControlPlane, per_block: usize) -> Vec<(String, [f64; 4], [f64; 4])> {
    let namespace = objects(cp);
    let thief = Thief::of_manifests(cp, "default");
    let saved = bindings(cp, &thief);
    assert_eq!(saved.len(), 1, "manifests/ binds skiff-writes");
    let writers = [
        Writer::new(
            "another writer (the admin)",
            &cp.admin_kubeconfig(),
            &namespace,
            "theirs",
        ),
        Writer::new(
            "skiff's token, its own copies",
            &cp.operator_kubeconfig(),
            &namespace,
            "copy",
        ),
    ];
    // One writer after the other: skiff's writes, which the policy evaluates whole, leave the
    // API server garbage that may slow the other writer's next writes in the same block.
    let timed: Vec<_> = (writers.iter())
        .map(|writer| {
            set_bindings(cp, &thief, &saved, true);
            writer.write(WARM_UP.min(per_block), 0);
            let (mut with, mut without) = (Vec::new(), Vec::new());
            for (round, present) in ORDER.into_iter().enumerate() {
                set_bindings(cp, &thief, &saved, present);
                let times = writer.write(per_block, round + 1);
                if present { &mut with } else { &mut without }.extend(times);
            }
            (
                writer.name.to_owned(),
                summary(&mut with),
                summary(&mut without),
            )
        })
        .collect();
    set_bindings(cp, &thief, &saved, true);
    timed
}

/// One mode's counts: the issue's 11 allowed by RBAC; let through without and with the new
/// policies (the issue's 11, then every attempt).
struct Counted {
    mode: &'static str,
    allowed: usize,
    before: (usize, usize),
    after: (usize, usize),
}

/// The dry runs let through in `scene`: of the issue's 11, and of all attempts.
fn let_through(cp: &ControlPlane, thief: &Thief, scene: &Scene) -> (usize, usize) {
    let through: Vec<bool> = ATTEMPTS
        .iter()
        .map(|a| scene.try_with(cp, &thief.token, a, true).is_let_through())
        .collect();
    let issue = ATTEMPTS
        .iter()
        .zip(&through)
        .filter(|(a, t)| a.headline && **t);
    (issue.count(), through.iter().filter(|t| **t).count())
}

/// Part 2: in each install mode, the attempts let through without and with the new policies.
fn attempts(cp: &ControlPlane) -> Vec<Counted> {
    let mut counted = Vec::new();
    each_install_mode(cp, |thief| {
        let scene = Scene::set_up(
            cp,
            &format!("bench-{}", thief.name.replace(' ', "-")),
            thief.mirrors,
        );
        let saved = bindings(cp, thief);
        assert!(
            !saved.is_empty(),
            "{}: skiff-writes is not bound",
            thief.name
        );
        let allowed = (ATTEMPTS.iter())
            .filter(|a| a.headline && thief.may(cp, &scene, a))
            .count();
        set_bindings(cp, thief, &saved, false);
        let before = let_through(cp, thief, &scene);
        set_bindings(cp, thief, &saved, true);
        // A new binding takes a moment for every kind: until no dry run gets through.
        eventually(SETTLE, || let_through(cp, thief, &scene) == (0, 0));
        counted.push(Counted {
            mode: thief.name,
            allowed,
            before,
            after: let_through(cp, thief, &scene),
        });
    });
    counted
}

fn main() {
    if !e2e_enabled() {
        println!("policy: skipped (no control plane binaries; make testbin)");
        return;
    }
    let per_block = if bench_mode() { BLOCK } else { 20 };
    let cp = ControlPlane::start();
    cp.install_manifests();
    let rows = latencies(&cp, per_block);
    let counted = attempts(&cp);
    cp.stop();
    if !bench_mode() {
        return;
    }
    let total = per_block * ORDER.iter().filter(|with| **with).count();
    println!(
        "\nWrite latency, {total} merge patches of a ConfigMap each with the policy skiff-writes \
         and without it (its binding deleted), one at a time, blocks of {per_block} alternating\n"
    );
    println!("| writer | with: p50 / p90 / p99 / mean (ms) | without | p50 difference |");
    println!("|---|---|---|---|");
    for (writer, with, without) in rows {
        let cell = |s: [f64; 4]| format!("{:.2} / {:.2} / {:.2} / {:.2}", s[0], s[1], s[2], s[3]);
        println!(
            "| {writer} | {} | {} | {:+.2} ms |",
            cell(with),
            cell(without),
            with[0] - without[0]
        );
    }
    println!(
        "\nThe thief's attempts ({} in all, the issue's 11 among them) let through, as dry runs, \
         without the new policies (skiff-writes, skiff-kit-namespaces) and with them\n",
        ATTEMPTS.len()
    );
    println!(
        "| install mode | the issue's 11 allowed by RBAC | let through before → after | all attempts let through before → after |"
    );
    println!("|---|---|---|---|");
    for c in counted {
        println!(
            "| {} | {} | {} → {} | {} → {} |",
            c.mode, c.allowed, c.before.0, c.after.0, c.before.1, c.after.1
        );
    }
}
