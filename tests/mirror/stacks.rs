//! The built binary's stacks at idle: start-up and every request go tens of KiB deep, and what
//! they touched is handed back (`skiff::stack`), so the main thread, which renews the lease,
//! keeps only the frames it is in.

use crate::support::cluster::{Cluster, HOME};
use crate::support::skiff::{eventually, is_lease_hold};
use serde_json::json;
use std::time::Duration;

/// Measured on the debug build this test runs: 560 KiB without the release, 84 with it (the
/// release build: 288 and 24).
const MAIN_STACK_LIMIT_KIB: u64 = 192;

/// How long the test waits for the renewals and for the stack to be handed back: a liveness
/// bound, 10× the 5 s at most between two releases (`skiff::stack::RELEASE_EVERY`) and the
/// half-second renewals.
const LIVENESS: Duration = Duration::from_secs(60);

/// Resident KiB of the main thread's stack (`[stack]` in `/proc/PID/smaps`).
fn main_stack_kib(pid: u32) -> Option<u64> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).ok()?;
    let mut lines = smaps.lines().skip_while(|l| !l.ends_with("[stack]"));
    lines.find_map(|l| {
        l.strip_prefix("Rss:")?
            .trim()
            .strip_suffix("kB")?
            .trim()
            .parse()
            .ok()
    })
}

#[test]
fn the_lease_thread_keeps_only_the_frames_it_is_in() {
    let mut cluster = Cluster::new("stacks");
    cluster.namespaces("team", 3, json!({"team": "yes"}));
    cluster.team_ca_mirror();
    let lease = [
        "--leader-elect",
        "--leader-election-namespace=skiff-system",
        "--leader-elect-retry-period=500ms",
    ];
    let skiff = cluster.start(&lease);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    // A few renewals, each a request on the main thread.
    let renewals = || {
        (cluster.server.requests().iter())
            .filter(|r| is_lease_hold(r))
            .count()
    };
    let renewed = eventually(LIVENESS, || renewals() >= 5);
    assert!(renewed, "no renewals; log:\n{}", skiff.logs());
    let pid = skiff.child.id();
    // Then the pages they touched are handed back, by the next release at the latest. Without
    // the release they stay resident for good. (A reading may fall in the middle of a
    // renewal: the test waits for one at idle.)
    let mut resident = None;
    let released = eventually(LIVENESS, || {
        resident = main_stack_kib(pid);
        resident.is_some_and(|kib| kib <= MAIN_STACK_LIMIT_KIB)
    });
    assert!(
        released,
        "the main thread keeps {resident:?} KiB of stack resident at idle (limit {MAIN_STACK_LIMIT_KIB})"
    );
}
