//! The binary as launched sets up malloc for a long-lived process (`src/heap.rs`): one arena for
//! all its threads unless the environment chooses, and the garbage of a large start-up list
//! returned to the system afterwards.

mod support;

use serde_json::json;
use std::time::Duration;
use support::cluster::{Cluster, FAST, HOME};
use support::skiff::{Skiff, eventually};

/// Namespaces listed at start; each carries a large annotation, so the list responses are
/// megabytes of buffers that are garbage once the cache holds its projections.
const NAMESPACES: usize = 1_500;
const ANNOTATION_BYTES: usize = 2_048;
/// glibc's heap size for every arena but the main one (`HEAP_MAX_SIZE` on 64-bit systems).
const ARENA_HEAP: u64 = 64 * 1024 * 1024;

fn start(cluster: &Cluster, tag: &str, env: &[(&str, &str)]) -> Skiff {
    let log = cluster.dir.0.join(format!("{tag}.log"));
    let mut args = FAST.to_vec();
    args.push("--log-level=debug");
    Skiff::start_with_env(&cluster.kubeconfig, log, &args, env)
}

fn busy_cluster(tag: &str) -> Cluster {
    let cluster = Cluster::new(tag);
    let note = "x".repeat(ANNOTATION_BYTES);
    for i in 0..NAMESPACES {
        cluster
            .server
            .insert(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": format!("team-{i}"), "labels": {"team": "yes"},
                         "annotations": {"example.com/note": note}}}));
    }
    cluster.team_ca_mirror();
    cluster
}

/// Mappings of malloc arenas other than the main one: a read-write start at a 64 MiB
/// boundary, followed by the inaccessible rest of the 64 MiB reservation.
fn secondary_arenas(pid: u32) -> usize {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let ranges: Vec<(u64, u64, String)> = maps
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (start, end) = fields.next()?.split_once('-')?;
            let perms = fields.next()?.to_owned();
            Some((
                u64::from_str_radix(start, 16).ok()?,
                u64::from_str_radix(end, 16).ok()?,
                perms,
            ))
        })
        .collect();
    ranges
        .windows(2)
        .filter(|pair| {
            let (start, end, perms) = &pair[0];
            let (next_start, next_end, next_perms) = &pair[1];
            start % ARENA_HEAP == 0
                && perms.starts_with("rw")
                && next_perms.starts_with("---")
                && end == next_start
                && next_end - start == ARENA_HEAP
        })
        .count()
}

fn converged(cluster: &Cluster, skiff: &Skiff) {
    cluster.wait_ready(skiff, HOME, "ca", "True", "Synced");
}

#[test]
fn all_threads_share_one_arena_and_start_up_garbage_is_returned() {
    let cluster = busy_cluster("heap-default");
    let mut skiff = start(&cluster, "default", &[]);
    converged(&cluster, &skiff);
    let returned = eventually(Duration::from_secs(30), || {
        skiff
            .logs()
            .contains("returned free heap memory to the system")
    });
    assert!(
        returned,
        "no free heap memory was returned after the start-up lists; log:\n{}",
        skiff.logs()
    );
    assert!(skiff.is_running(), "skiff exited; log:\n{}", skiff.logs());
    let pid = skiff.child.id();
    assert_eq!(
        secondary_arenas(pid),
        0,
        "skiff's threads use malloc arenas of their own; /proc/{pid}/maps:\n{}",
        std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default()
    );
}

#[test]
fn an_arena_count_from_the_environment_wins() {
    let cluster = busy_cluster("heap-env");
    let mut skiff = start(&cluster, "env", &[("MALLOC_ARENA_MAX", "8")]);
    converged(&cluster, &skiff);
    assert!(skiff.is_running(), "skiff exited; log:\n{}", skiff.logs());
    // The executor thread reconciled and decoded, so with arenas allowed it made its own.
    assert!(
        secondary_arenas(skiff.child.id()) >= 1,
        "MALLOC_ARENA_MAX=8 was overridden: no arena besides the main one"
    );
}
