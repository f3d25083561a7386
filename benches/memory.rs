//! Memory benchmark: resident set size (VmRSS) of the built binary against the fake API
//! server — idle, with 1,000 namespaces and copies converged, and the growth when the cluster
//! also holds 10,000 unrelated 10 KB Secrets (each scenario a fresh server and process) —
//! then on a real control plane (`real/`): VmRSS, RssAnon, RssFile and VmHWM apart, and the
//! memory per namespace (1,000 vs 5,000 namespaces).
//!
//! `cargo bench --bench memory` prints the tables (`SKIFF_BINARY` measures another build, e.g.
//! the static one; `SKIFF_BENCH_LARGE=1` adds 10,000 real namespaces); `cargo test
//! --all-targets` runs a smoke version (20 namespaces, 20 Secrets) that only checks each
//! scenario converges.

// Built with cfg(test) but no test harness, the support files' test modules import unused items.
#[path = "../tests/support/mod.rs"]
#[cfg_attr(test, allow(unused_imports))]
mod support;

mod common;
mod real;

use base64::Engine as _;
use common::{Run, bench_mode, cluster, target_namespace, wait_converged, wait_watching};
use serde_json::json;
use std::time::Duration;
use support::control_plane::e2e_enabled;
use support::fake::FakeServer;
use support::skiff::proc_status_kib;

/// Namespaces (and copies) of the loaded scenarios: 1,000 of each.
const NAMESPACES: usize = 1_000;
/// Unrelated Secrets and their decoded size: 10,000 of 10 KB.
const SECRETS: usize = 10_000;
const SECRET_BYTES: usize = 10 * 1024;
/// Namespaces of the idle scenario, besides skiff's own.
const IDLE_NAMESPACES: usize = 3;
/// Goals in KiB.
const LOADED_GOAL_KIB: u64 = 24 * 1024;
const GROWTH_GOAL_KIB: u64 = 4 * 1024;
/// Time after convergence before sampling, so start-up buffers are returned or reused.
const SETTLE: Duration = Duration::from_secs(5);
/// Samples taken after settling, and the pause between them.
const SAMPLES: usize = 10;
const SAMPLE_EVERY: Duration = Duration::from_millis(200);
/// Secret copies enabled for one name, as the secret-targets component installs skiff: the
/// unrelated Secrets' growth is then what the Secret watches (by namespace for sources, by
/// name and label for copies) cost. Without it skiff watches no Secret at all.
const SECRET_TARGETS: &str = "--secret-target-names=app-tls";
/// Watches skiff opens (Mirrors, Namespaces, source ConfigMaps and Secrets, copies of each).
const WATCHES: usize = 6;
const RUN_LIMIT: Duration = Duration::from_secs(300);

/// Memory of one process after settling, in KiB.
struct Sample {
    /// Median VmRSS over the samples.
    rss: u64,
    /// VmHWM: the peak RSS since the process started.
    peak: u64,
}

/// 10 KB of data that differs per Secret, base64-encoded as the API carries it.
fn secret_data(i: usize) -> String {
    let bytes: Vec<u8> = (0..SECRET_BYTES).map(|b| (b * 31 + i) as u8).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `count` Secrets that no Mirror reads, spread over the selected (non-source) namespaces.
fn add_unrelated_secrets(server: &FakeServer, namespaces: usize, count: usize) {
    for i in 0..count {
        server.insert(
            json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": format!("app-secret-{i:05}"),
                         "namespace": target_namespace(i % namespaces)},
            "data": {"blob": secret_data(i)}}),
        );
    }
}

fn measure(run: &mut Run) -> Sample {
    let samples = if bench_mode() {
        std::thread::sleep(SETTLE);
        SAMPLES
    } else {
        1
    };
    run.assert_running();
    let mut rss: Vec<u64> = (0..samples)
        .filter_map(|_| {
            std::thread::sleep(SAMPLE_EVERY);
            proc_status_kib(run.pid(), "VmRSS")
        })
        .collect();
    rss.sort_unstable();
    assert!(!rss.is_empty(), "no VmRSS readable for pid {}", run.pid());
    Sample {
        rss: rss[rss.len() / 2],
        peak: proc_status_kib(run.pid(), "VmHWM").unwrap_or(0),
    }
}

/// No Mirror: skiff only watches and caches.
fn idle(namespaces: usize, tag: &str) -> Sample {
    let server = cluster(namespaces, false);
    let mut run = Run::start(&server, tag, &[SECRET_TARGETS]);
    wait_watching(&server, &mut run, WATCHES, RUN_LIMIT);
    measure(&mut run)
}

/// A Mirror converging over `namespaces`; the process is killed when it is measured, and
/// the converged cluster returned.
fn loaded(namespaces: usize, secrets: usize, tag: &str) -> (Sample, FakeServer) {
    let server = cluster(namespaces, true);
    add_unrelated_secrets(&server, namespaces, secrets);
    let mut run = Run::start(&server, tag, &[SECRET_TARGETS]);
    wait_converged(&server, &mut run, namespaces, RUN_LIMIT);
    (measure(&mut run), server)
}

/// A fresh process on a converged cluster: it writes nothing, so its RSS is what the caches
/// need, without what the fan-out itself allocated.
fn restarted(server: &FakeServer, tag: &str) -> Sample {
    let mut run = Run::start(server, tag, &[SECRET_TARGETS]);
    wait_watching(server, &mut run, WATCHES, RUN_LIMIT);
    measure(&mut run)
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

fn row(scenario: &str, sample: &Sample, goal: &str) {
    println!(
        "| {scenario:<60} | {:>9} | {:>10} | {goal:<22} |",
        mib(sample.rss),
        mib(sample.peak)
    );
}

fn verdict(value: u64, goal: u64) -> &'static str {
    if value <= goal { "met" } else { "MISSED" }
}

fn smoke() {
    let n = common::SMOKE_NAMESPACES;
    idle(IDLE_NAMESPACES, "memory-smoke-idle");
    let (_, server) = loaded(n, 0, "memory-smoke");
    restarted(&server, "memory-smoke-restarted");
    loaded(n, n, "memory-smoke-secrets");
    if e2e_enabled() {
        on_real_objects(n, 2 * n, None);
    }
    println!("memory: smoke run ok (run `cargo bench --bench memory` for figures)");
}

/// Real namespaces of the per-namespace figure: `SMALL` then `LARGE`, and the
/// `SKIFF_BENCH_LARGE` scenario's total.
const REAL_SMALL: usize = 1_000;
const REAL_LARGE: usize = 5_000;
const REAL_HUGE: usize = 10_000;

/// Measures one leading process after it has settled.
fn settled(leader: &mut real::Leader) -> real::Footprint {
    if bench_mode() {
        std::thread::sleep(SETTLE);
    }
    leader.assert_running();
    real::Footprint::of(leader.pid())
}

/// The real-control-plane scenarios with `small` then `large` namespaces (and `huge` with a
/// Mirror, if given); prints the table in bench mode.
fn on_real_objects(small: usize, large: usize, huge: Option<usize>) {
    let mut cluster = real::Cluster::start();
    cluster.grow_to(small, small);
    let mut rows = Vec::new();
    let mut leader = cluster.leader("footprint-idle");
    let idle_small = settled(&mut leader);
    leader.stop();
    rows.push((format!("idle as leader, {small} namespaces"), idle_small));
    let mut leader = cluster.leader("footprint-copies");
    cluster.add_mirror();
    cluster.wait_synced(&mut leader, small);
    rows.push((
        format!("{small} namespaces, {small} copies converged"),
        settled(&mut leader),
    ));
    cluster.delete_mirror(&mut leader);
    leader.stop();
    let mut leader = cluster.leader("footprint-metadata");
    cluster.add_mirror_with_metadata();
    cluster.wait_synced(&mut leader, small);
    rows.push((
        format!("{small} copies with metadata and picked keys"),
        settled(&mut leader),
    ));
    cluster.delete_mirror(&mut leader);
    leader.stop();
    cluster.grow_to(large, small);
    let mut leader = cluster.leader("footprint-idle-large");
    let idle_large = settled(&mut leader);
    leader.stop();
    rows.push((format!("idle as leader, {large} namespaces"), idle_large));
    if let Some(huge) = huge {
        cluster.grow_to(huge, small);
        let mut leader = cluster.leader("footprint-huge");
        cluster.add_mirror();
        cluster.wait_synced(&mut leader, small);
        rows.push((
            format!("{huge} namespaces, {small} copies converged"),
            settled(&mut leader),
        ));
        leader.stop();
    }
    if !bench_mode() {
        return;
    }
    println!(
        "\nOn a real control plane (kube-apiserver + etcd), skiff as leader, median of {SAMPLES} samples\n"
    );
    real::footprint::header();
    for (scenario, footprint) in &rows {
        real::footprint::row(scenario, footprint);
    }
    let per_copy = |copies: &real::Footprint| {
        (copies.anon as f64 - idle_small.anon as f64) * 1024.0 / small as f64
    };
    println!(
        "\nRssAnon per copy (converged minus idle, {small} namespaces): {:.0} B plain, {:.0} B \
         with metadata and picked keys",
        per_copy(&rows[1].1),
        per_copy(&rows[2].1)
    );
    let per_namespace = |a: u64, b: u64| (b as f64 - a as f64) * 1024.0 / (large - small) as f64;
    println!(
        "\nper extra namespace ({small} → {large}): RssAnon {:+.0} B, VmRSS {:+.0} B",
        per_namespace(idle_small.anon, idle_large.anon),
        per_namespace(idle_small.rss, idle_large.rss)
    );
}

fn main() {
    if !bench_mode() {
        smoke();
        return;
    }
    if e2e_enabled() {
        let huge = std::env::var("SKIFF_BENCH_LARGE").is_ok_and(|v| v == "1");
        on_real_objects(REAL_SMALL, REAL_LARGE, huge.then_some(REAL_HUGE));
    }
    if std::env::var("SKIFF_BENCH_REAL_ONLY").is_ok_and(|v| v == "1") {
        return;
    }
    let idle_small = idle(IDLE_NAMESPACES, "memory-idle");
    let idle_large = idle(NAMESPACES, "memory-idle-large");
    let (plain, server) = loaded(NAMESPACES, 0, "memory");
    let restart = restarted(&server, "memory-restarted");
    drop(server);
    let (with_secrets, _) = loaded(NAMESPACES, SECRETS, "memory-secrets");
    let growth = with_secrets.rss as i64 - plain.rss as i64;
    println!(
        "RSS of the skiff process (MiB), median of {SAMPLES} samples after {SETTLE:?} settling\n"
    );
    println!(
        "| {:<60} | {:>9} | {:>10} | {:<22} |",
        "scenario", "RSS", "peak (HWM)", "goal"
    );
    println!("|{:-<62}|{:-<11}|{:-<12}|{:-<24}|", "", "", "", "");
    row(
        &format!("idle: {IDLE_NAMESPACES} namespaces, no Mirror"),
        &idle_small,
        "",
    );
    row(
        &format!("idle: {NAMESPACES} namespaces, no Mirror"),
        &idle_large,
        "",
    );
    row(
        &format!("{NAMESPACES} namespaces, {NAMESPACES} copies converged"),
        &plain,
        &format!("≤ 24 MiB: {}", verdict(plain.rss, LOADED_GOAL_KIB)),
    );
    row(
        &format!("restarted on those {NAMESPACES} converged copies (no writes)"),
        &restart,
        "",
    );
    row(
        &format!("{NAMESPACES} namespaces and copies + {SECRETS} unrelated 10 KB Secrets"),
        &with_secrets,
        "",
    );
    println!(
        "\ngrowth from the unrelated Secrets: {:+.1} MiB (goal ≤ 4 MiB: {})",
        growth as f64 / 1024.0,
        verdict(growth.max(0) as u64, GROWTH_GOAL_KIB)
    );
}
