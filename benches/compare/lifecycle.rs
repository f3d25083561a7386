//! One operator's life on the 1,000 target namespaces: idle as leader, a fan-out to every
//! namespace, converged, then restarted with nothing changed. Yields the footprint (idle and
//! converged), the time to all copies, and the writes of the restart.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::lease_watch::LeaseWatch;
use crate::operator::{Footprint, Launch, Operator, Replica};
use crate::support::control_plane::ControlPlane;
use crate::world::{self, Identity, TARGET};

/// Time after leading (or converging) before memory is sampled.
const SETTLE: Duration = Duration::from_secs(5);
const SAMPLES: usize = 5;
const SAMPLE_EVERY: Duration = Duration::from_millis(200);
/// How long the restarted replica is watched for writes after it leads: its caches fill and
/// every source is reconciled well within this.
const RESTART_WATCH: Duration = Duration::from_secs(10);
const STEP_TIMEOUT: Duration = Duration::from_secs(60);
/// Time a fan-out may take: the bucket's pace (20/s) with a wide margin.
const FANOUT_LIMIT_PER_COPY: Duration = Duration::from_millis(200);

#[derive(Debug, Clone, Default)]
pub struct Lifecycle {
    pub idle: Footprint,
    pub converged: Footprint,
    /// Source created → the last copy exists (observed at the API, 100 ms polls).
    pub fanout: Duration,
    /// Copies created or updated by a restart with nothing changed.
    pub restart_writes: usize,
}

/// Runs the life; leaves a converged leader running and returns it (for the handover rounds).
pub fn run(
    cp: &ControlPlane,
    operator: &Operator,
    identity: &Identity,
    namespaces: usize,
) -> (Lifecycle, Replica, LeaseWatch) {
    let launch = Launch::new(cp, operator, identity, TARGET, "cmp");
    let (namespace, name) = operator.lease();
    let watch = LeaseWatch::start(cp, namespace, name);
    let mut first = launch.start("first");
    wait_leading(&watch, &mut first, operator);
    std::thread::sleep(SETTLE);
    let idle = sample(&first);

    let created = Instant::now();
    world::create_source(cp, &launch);
    let limit = FANOUT_LIMIT_PER_COPY * namespaces as u32 + STEP_TIMEOUT;
    let fanout = wait_copies(cp, &launch, namespaces, created, limit).unwrap_or_else(|| {
        panic!(
            "{}: copies incomplete; log:\n{}",
            operator.label,
            first.logs()
        )
    });
    std::thread::sleep(SETTLE);
    let converged = sample(&first);

    let (second, restart_writes) = restart(cp, &launch, &watch, first);
    let lifecycle = Lifecycle {
        idle,
        converged,
        fanout,
        restart_writes,
    };
    (lifecycle, second, watch)
}

/// Waits until the Lease is held, failing at once (with the log) if the replica exits.
pub fn wait_leading(watch: &LeaseWatch, replica: &mut Replica, operator: &Operator) {
    let deadline = Instant::now() + STEP_TIMEOUT;
    while watch.holder().is_empty() {
        let exited = replica.exited();
        assert!(
            exited.is_none() && Instant::now() < deadline,
            "{} never led (exit {exited:?}); log:\n{}",
            operator.label,
            replica.logs()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Median of each figure over a few samples.
pub fn sample(replica: &Replica) -> Footprint {
    let mut samples: Vec<Footprint> = Vec::new();
    for _ in 0..SAMPLES {
        samples.push(replica.footprint());
        std::thread::sleep(SAMPLE_EVERY);
    }
    let median = |f: fn(&Footprint) -> u64| {
        let mut values: Vec<u64> = samples.iter().map(f).collect();
        values.sort_unstable();
        values[values.len() / 2]
    };
    Footprint {
        vm_rss: median(|f| f.vm_rss),
        rss_anon: median(|f| f.rss_anon),
        rss_file: median(|f| f.rss_file),
        threads: median(|f| f.threads),
    }
}

fn wait_copies(
    cp: &ControlPlane,
    launch: &Launch,
    count: usize,
    from: Instant,
    limit: Duration,
) -> Option<Duration> {
    while from.elapsed() < limit {
        if world::count_copies(cp, launch) >= count {
            return Some(from.elapsed());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// SIGTERM to the converged leader, a new replica started, and the copies it writes.
fn restart(
    cp: &ControlPlane,
    launch: &Launch,
    watch: &LeaseWatch,
    first: Replica,
) -> (Replica, usize) {
    let before: BTreeMap<String, String> = world::copies(cp, launch).into_iter().collect();
    let (second, _) = replace_leader(launch, watch, first);
    std::thread::sleep(RESTART_WATCH);
    let after = world::copies(cp, launch);
    let writes = after
        .iter()
        .filter(|(ns, rv)| before.get(ns) != Some(rv))
        .count();
    (second, writes)
}

/// SIGTERM to the leader, then a new replica; returns it once it leads, and when it was
/// started (the old leader had exited by then).
pub fn replace_leader(
    launch: &Launch,
    watch: &LeaseWatch,
    mut first: Replica,
) -> (Replica, std::time::SystemTime) {
    let old_holder = watch.holder();
    let _ = first.terminate(Duration::from_secs(40));
    let (restarted, since) = (Instant::now(), std::time::SystemTime::now());
    let second = launch.start("second");
    let led = watch.wait_for(restarted, STEP_TIMEOUT, |s| {
        !s.holder.is_empty() && s.holder != old_holder
    });
    assert!(
        led.is_some(),
        "the restarted replica never led; log:\n{}",
        second.logs()
    );
    (second, since)
}
