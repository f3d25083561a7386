//! A fan-out to an API server 10 ms away: every copy of a source into the 2,000 wide
//! namespaces, each operator at QPS 500 / burst 1,000 behind a fault proxy that delays every
//! byte by 10 ms each way. The client-side bucket is no longer what bounds the time; how many
//! writes an operator keeps in flight is.

use std::time::{Duration, Instant};

use crate::lease_watch::LeaseWatch;
use crate::lifecycle::wait_leading;
use crate::operator::{Launch, Operator};
use crate::support::control_plane::ControlPlane;
use crate::world::{self, Identity, WIDE};

/// One-way latency of the link.
pub const LATENCY: Duration = Duration::from_millis(10);
pub const QPS: &str = "500";
pub const BURST: &str = "1000";
/// Longest fan-out waited for.
const LIMIT: Duration = Duration::from_secs(300);

#[derive(Debug, Clone, Default)]
pub struct FarFanout {
    /// Source created → every copy exists; `None`: not within 300 s.
    pub took: Option<Duration>,
    /// CPU time (user + system) the operator spent from start to the end of the fan-out.
    pub cpu: Duration,
    /// Connections the operator opened.
    pub connections: usize,
}

pub fn run(
    cp: &ControlPlane,
    operator: &Operator,
    identity: &Identity,
    copies: usize,
) -> FarFanout {
    let (proxy, proxied) = crate::faults::behind_proxy(cp, operator, identity, "far");
    proxy.set_latency(LATENCY);
    let mut launch = Launch::new(cp, operator, &proxied, WIDE, "far");
    launch.qps = (QPS, BURST);
    world::free_lease(cp, operator);
    let (namespace, name) = operator.lease();
    let watch = LeaseWatch::start(cp, namespace, name);
    let mut leader = launch.start("far");
    wait_leading(&watch, &mut leader, operator);
    let created = Instant::now();
    world::create_source(cp, &launch);
    let mut took = None;
    while created.elapsed() < LIMIT {
        if world::count_copies(cp, &launch) >= copies {
            took = Some(created.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    FarFanout {
        took,
        cpu: cpu_time(leader.pid()),
        connections: proxy.stats().opened,
    }
}

/// User + system CPU time of a process so far, from `/proc/<pid>/stat` (clock ticks of 10 ms).
pub fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse().ok())
        .collect();
    Duration::from_millis(fields.iter().sum::<u64>() * 10)
}
