//! Fairness benchmark: how long a tenant's small Mirror takes to be served while another
//! tenant's fan-outs hold every worker, beside the same Mirror alone, in one process, against
//! the fake API server at skiff's default QPS (`--kube-api-qps 20`) with a burst of 1, so that
//! alone too the Mirror's requests are paced by the bucket rather than served from its burst.
//!
//! `cargo bench --bench fairness` prints the figures; `cargo test --all-targets` runs a smoke
//! version that only checks both tenants are served.

// Built with cfg(test) but no test harness, the support files' test modules import unused items.
#[path = "../tests/support/mod.rs"]
#[cfg_attr(test, allow(unused_imports))]
mod support;

use std::time::{Duration, Instant};
use support::cluster::Cluster;
use support::skiff::eventually;
use support::tenants::{SOURCE_NAMESPACES, creates, small_mirror, two_tenants};

/// More Mirrors than workers, so that in arrival order they would take them all.
const BIG_MIRRORS: usize = 6;
const SMALL_NAMESPACES: usize = 5;
const LIMIT: Duration = Duration::from_secs(300);

/// What one run measured.
struct Served {
    /// The small Mirror created → its last copy created.
    took: Duration,
    /// Copies of the big tenant created meanwhile.
    big_meanwhile: usize,
}

/// Starts skiff on `big_namespaces` × [`BIG_MIRRORS`] copies of tenant-a (none: alone), waits
/// for a tenth of them, then creates tenant-b's Mirror and times it.
fn run(tag: &str, big_namespaces: usize) -> Served {
    let mut cluster = Cluster::new(tag);
    let mirrors = BIG_MIRRORS.min(big_namespaces);
    two_tenants(&cluster, mirrors, big_namespaces, SMALL_NAMESPACES);
    let skiff = cluster.start(&[SOURCE_NAMESPACES, "--kube-api-qps=20", "--kube-api-burst=1"]);
    cluster.wait_watching(&skiff, 2);
    let under_way = big_namespaces * BIG_MIRRORS / 10;
    let started = eventually(LIMIT, || {
        creates(&cluster.requests_since(0), "a").len() >= under_way
    });
    assert!(
        started,
        "tenant-a's fan-out did not start; log:\n{}",
        skiff.logs()
    );
    let created = Instant::now();
    small_mirror(&cluster);
    let served = eventually(LIMIT, || {
        let records = cluster.requests_since(0);
        let answered = creates(&records, "b")
            .iter()
            .filter(|r| r.answered.is_some())
            .count();
        answered >= SMALL_NAMESPACES
    });
    assert!(served, "tenant-b was not served; log:\n{}", skiff.logs());
    let records = cluster.requests_since(0);
    let last = creates(&records, "b")
        .iter()
        .filter_map(|r| r.answered)
        .max()
        .unwrap_or(created);
    Served {
        took: last.saturating_duration_since(created),
        big_meanwhile: creates(&records, "a")
            .iter()
            .filter(|r| r.received >= created && r.received <= last)
            .count(),
    }
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let big_namespaces = if bench { 100 } else { 5 };
    let alone = run("fair-alone", 0);
    let beside = run("fair-beside", big_namespaces);
    if !bench {
        println!("fairness smoke: both tenants served");
        return;
    }
    let big = big_namespaces * BIG_MIRRORS;
    println!(
        "tenant-b's Mirror of {SMALL_NAMESPACES} copies, served (created → last copy created), \
         at --kube-api-qps 20 --kube-api-burst 1:"
    );
    println!(
        "  alone:                               {:.2} s",
        alone.took.as_secs_f64()
    );
    println!(
        "  beside tenant-a's {BIG_MIRRORS} Mirrors × {big_namespaces} copies: {:.2} s \
         ({} of tenant-a's {big} copies written meanwhile)",
        beside.took.as_secs_f64(),
        beside.big_meanwhile
    );
    println!(
        "  ratio: {:.1}×",
        beside.took.as_secs_f64() / alone.took.as_secs_f64().max(1e-3)
    );
}
