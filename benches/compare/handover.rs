//! Handover: SIGTERM to the leader, and how soon the standby holds the Lease, observed at the
//! API with a watch; also how soon the old leader's process exits.

use std::time::{Duration, Instant};

use crate::lease_watch::LeaseWatch;
use crate::operator::{Launch, Operator, RETRY_PERIOD, Replica};
use crate::support::control_plane::ControlPlane;
use crate::world::{Identity, TARGET};

/// A standby runs this long before the leader is stopped: it has tried the Lease at least once
/// and, for skiff, is watching it.
const STANDBY_READY: Duration = Duration::from_secs(3);
/// The longest a handover may take before the round counts as failed: lease expiry plus a
/// retry period.
const HANDOVER_LIMIT: Duration = Duration::from_secs(20);
const EXIT_LIMIT: Duration = Duration::from_secs(40);

#[derive(Debug, Clone, Default)]
pub struct Handovers {
    /// SIGTERM → the standby holds the Lease, per round.
    pub takeovers: Vec<Duration>,
    /// SIGTERM → the old leader's process exited, per round.
    pub exits: Vec<Duration>,
    /// Rounds where the standby did not lead within [`HANDOVER_LIMIT`].
    pub failed: usize,
}

pub fn run(
    cp: &ControlPlane,
    operator: &Operator,
    identity: &Identity,
    mut leader: Replica,
    watch: &LeaseWatch,
    rounds: usize,
) -> Handovers {
    let launch = Launch::new(cp, operator, identity, TARGET, "cmp");
    let mut result = Handovers::default();
    for round in 0..rounds {
        let standby = launch.start(&format!("standby-{round}"));
        std::thread::sleep(STANDBY_READY.max(RETRY_PERIOD));
        let old = watch.holder();
        let signalled = Instant::now();
        let exit = leader.terminate(EXIT_LIMIT);
        let took = watch.wait_for(signalled, HANDOVER_LIMIT, |s| {
            !s.holder.is_empty() && s.holder != old
        });
        match took {
            Some(seen) => result.takeovers.push(seen.at - signalled),
            None => result.failed += 1,
        }
        if let Some((_, after)) = exit {
            result.exits.push(after);
        }
        leader = standby;
    }
    let _ = leader.terminate(EXIT_LIMIT);
    result
}
