//! Fan-out benchmark: one source ConfigMap copied into 1,000 namespaces by the built binary
//! (no leader election) against the fake API server; wall time and exact write count, at the
//! default `--kube-api-qps 20 --kube-api-burst 30`, and a control at `--kube-api-qps 1000`
//! showing the token bucket, not skiff, sets the pace.
//!
//! `cargo bench --bench fanout` prints the figures; `cargo test --all-targets` runs a smoke
//! version (20 namespaces, nothing printed but a line) that only checks the copies arrive.

// Built with cfg(test) but no test harness, the support files' test modules import unused items.
#[path = "../tests/support/mod.rs"]
#[cfg_attr(test, allow(unused_imports))]
mod support;

mod common;

use common::{Run, Writes, bench_mode, cluster, seconds, show_seconds, wait_converged};
use std::time::Duration;

/// Namespaces of the measured run: a fan-out to 1,000 namespaces.
const NAMESPACES: usize = 1_000;
/// skiff's default main-client bucket (`--kube-api-qps`, `--kube-api-burst`).
const DEFAULT_QPS: f64 = 20.0;
const DEFAULT_BURST: f64 = 30.0;
/// The control run's QPS: far above what the fake server and two cores deliver.
const CONTROL_QPS: &str = "1000";
/// Goal: wall ≤ 1.05 × count / qps.
const GOAL_FACTOR: f64 = 1.05;
/// Upper bound for one run to converge before the benchmark gives up.
const RUN_LIMIT: Duration = Duration::from_secs(300);

/// What one fan-out run measured.
struct Figures {
    count: usize,
    writes: Writes,
    /// Process start → Mirror status reports every copy synced.
    start_to_synced: Option<f64>,
    /// Process start → first copy write.
    start_to_first_write: Option<f64>,
    /// First copy write → last copy created.
    first_to_last_copy: Option<f64>,
    /// First copy write → Mirror status reports every copy synced.
    first_write_to_synced: Option<f64>,
}

fn fan_out(count: usize, tag: &str, args: &[&str]) -> Figures {
    let server = cluster(count, true);
    let mut run = Run::start(&server, tag, args);
    wait_converged(&server, &mut run, count, RUN_LIMIT);
    let writes = Writes::of(&server.requests(), count);
    Figures {
        count,
        start_to_synced: seconds(Some(run.started), writes.synced_reported),
        start_to_first_write: seconds(Some(run.started), writes.first_copy_write),
        first_to_last_copy: seconds(writes.first_copy_write, writes.last_copy_create),
        first_write_to_synced: seconds(writes.first_copy_write, writes.synced_reported),
        writes,
    }
}

fn print_run(title: &str, figures: &Figures) {
    let w = &figures.writes;
    println!("{title}");
    println!(
        "  start → first copy write        {}",
        show_seconds(figures.start_to_first_write)
    );
    println!(
        "  first copy write → last create  {}",
        show_seconds(figures.first_to_last_copy)
    );
    println!(
        "  first copy write → synced={}  {}",
        figures.count,
        show_seconds(figures.first_write_to_synced)
    );
    println!(
        "  start → synced={}             {}",
        figures.count,
        show_seconds(figures.start_to_synced)
    );
    println!(
        "  copy creates {} (goal {}), copy updates {}, failed writes {}",
        w.copy_creates, figures.count, w.copy_updates, w.failed_writes
    );
    println!(
        "  Mirror status writes {}, Mirror (finalizer) writes {}, Events {}, other writes {}, reads {}",
        w.status_writes, w.mirror_writes, w.events, w.other_writes, w.reads
    );
}

fn print_verdict(figures: &Figures) {
    let count = figures.count as f64;
    let goal = GOAL_FACTOR * count / DEFAULT_QPS;
    let ideal = (count - DEFAULT_BURST) / DEFAULT_QPS;
    println!(
        "  goal: ≤ {GOAL_FACTOR} × {count} / {DEFAULT_QPS} = {goal:.1} s from the first copy write"
    );
    println!(
        "  ideal with a full burst: ({count} − {DEFAULT_BURST}) / {DEFAULT_QPS} = {ideal:.1} s; \
         no-burst pace: {count} / {DEFAULT_QPS} = {:.1} s",
        count / DEFAULT_QPS
    );
    let before = figures.writes.before_first_copy as f64;
    let left = (DEFAULT_BURST - before).max(0.0);
    let ideal_here = (count - left) / DEFAULT_QPS;
    println!(
        "  {before} requests preceded the first copy write, leaving ≈ {left} burst tokens: \
         ideal for this run ≈ ({count} − {left}) / {DEFAULT_QPS} = {ideal_here:.2} s"
    );
    if let Some(wall) = figures.first_write_to_synced {
        let verdict = if wall <= goal { "met" } else { "MISSED" };
        println!(
            "  measured {wall:.2} s: {:.3} × the no-burst pace, {:.3} × the full-burst ideal, \
             {:.3} × this run's ideal; goal {verdict}",
            wall / (count / DEFAULT_QPS),
            wall / ideal,
            wall / ideal_here
        );
    }
    let exact = figures.writes.copy_creates == figures.count && figures.writes.copy_updates == 0;
    println!(
        "  writes: {} copy writes for {} copies; goal (exactly {}) {}",
        figures.writes.copy_creates + figures.writes.copy_updates,
        figures.count,
        figures.count,
        if exact { "met" } else { "MISSED" }
    );
}

fn smoke() {
    let figures = fan_out(common::SMOKE_NAMESPACES, "fanout-smoke", &[]);
    assert_eq!(
        figures.writes.copy_creates, figures.count,
        "every copy created exactly once"
    );
    println!("fanout: smoke run ok (run `cargo bench --bench fanout` for figures)");
}

fn main() {
    if !bench_mode() {
        smoke();
        return;
    }
    println!("fan-out of one ConfigMap to {NAMESPACES} namespaces (no leader election)\n");
    let default = fan_out(
        NAMESPACES,
        "fanout",
        &["--kube-api-qps=20", "--kube-api-burst=30"],
    );
    print_run(
        "--kube-api-qps 20 --kube-api-burst 30 (defaults):",
        &default,
    );
    print_verdict(&default);
    println!();
    let control = fan_out(
        NAMESPACES,
        "fanout-control",
        &["--kube-api-qps", CONTROL_QPS],
    );
    print_run(
        &format!("control, --kube-api-qps {CONTROL_QPS} --kube-api-burst 30:"),
        &control,
    );
    if let (Some(limited), Some(free)) =
        (default.first_write_to_synced, control.first_write_to_synced)
    {
        println!(
            "  the default run took {:.1}× as long as the control: the token bucket sets the pace",
            limited / free
        );
    }
}
