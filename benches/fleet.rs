//! Fleet benchmark (issue 41, across clusters): what one hub and its members cost and how fast
//! a hub's edit reaches them. It prints figures; it asserts no speed.
//!
//! Two parts, each on real kube-apiservers (the hub is always real):
//!
//! - **real** (`fleet/real.rs`): a hub and two members, each a real control plane with skiff
//!   leading in it, members admitted with `hack/hub-admit.sh` and reaching the hub through a
//!   fault proxy: a hub edit to the copies in both members (several edits: median, max), a newly
//!   admitted member's skiff leading to its first copy, the hub unreachable for 5 minutes
//!   (writes in the members meanwhile, time to converge after it heals, relists per watch), and
//!   a member's idle memory with and without `--hub-kubeconfig`.
//! - **scale** (`fleet/scale.rs`): one real hub and 100, 300 and 1,000 members, each a skiff
//!   process against a fake cluster of its own (`FakeFleet`): hub requests per member per
//!   minute while idle (named), the hub API server's watches and memory, its stored bytes per
//!   member, and a hub edit to the copy in the last member, with a straight line fitted per
//!   member; writes `benches/fleet.svg`.
//!
//! `make bench-fleet` runs both with the static binary (about 40 minutes; niced). Settings:
//! `FLEET_PARTS=real,scale`, `FLEET_MEMBERS=100,300,1000`, `FLEET_IDLE=180` (seconds of the idle
//! window), `FLEET_OUTAGE=300` (seconds), `FLEET_EDITS=10`, `FLEET_SETTLE=60` (seconds before each
//! sample), `SKIFF_BINARY` (the build
//! measured). `cargo test --all-targets` runs a smoke version (two edits, a 10 s outage, three
//! members) that checks that every step converges.

// Built with cfg(test) but no test harness, the support files' test modules import unused items.
#[path = "../tests/support/mod.rs"]
#[cfg_attr(test, allow(unused_imports))]
mod support;

#[path = "compare/children.rs"]
mod children;
mod common;
#[path = "real/footprint.rs"]
mod footprint;
#[path = "fleet/hub.rs"]
mod hub;
#[path = "fleet/members.rs"]
mod members;
#[path = "fleet/outage.rs"]
mod outage;
#[path = "fleet/plot.rs"]
mod plot;
#[path = "fleet/real.rs"]
mod real;
#[path = "fleet/scale.rs"]
mod scale;
#[path = "fleet/world.rs"]
mod world;

use common::bench_mode;
use std::time::Duration;
use support::control_plane::e2e_enabled;

/// How long and how much each part measures.
pub struct Settings {
    /// Hub edits timed in the real part.
    pub edits: usize,
    /// How long the hub is unreachable.
    pub outage: Duration,
    /// Settling before a memory or idle sample (start-up buffers returned or reused).
    pub settle: Duration,
    /// The member counts of the scale part, ascending.
    pub members: Vec<usize>,
    /// The idle window requests are counted over.
    pub idle: Duration,
    /// Whether to print figures (else a smoke run: only convergence matters).
    pub figures: bool,
}

impl Settings {
    fn bench() -> Settings {
        Settings {
            edits: number("FLEET_EDITS", 10),
            outage: Duration::from_secs(number("FLEET_OUTAGE", 300) as u64),
            settle: Duration::from_secs(number("FLEET_SETTLE", 60) as u64),
            members: members_from_env(),
            idle: Duration::from_secs(number("FLEET_IDLE", 180) as u64),
            figures: true,
        }
    }

    fn smoke() -> Settings {
        Settings {
            edits: 2,
            outage: Duration::from_secs(10),
            settle: Duration::ZERO,
            members: vec![3],
            idle: Duration::from_secs(10),
            figures: false,
        }
    }
}

fn number(variable: &str, default: usize) -> usize {
    match std::env::var(variable) {
        Ok(value) => value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{variable}={value}: give a whole number")),
        Err(_) => default,
    }
}

fn members_from_env() -> Vec<usize> {
    let text = std::env::var("FLEET_MEMBERS").unwrap_or_else(|_| "100,300,1000".to_owned());
    let mut counts: Vec<usize> = text
        .split(',')
        .map(|n| {
            n.trim().parse().unwrap_or_else(|_| {
                panic!("FLEET_MEMBERS={text}: give member counts separated by commas")
            })
        })
        .collect();
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// Which parts `FLEET_PARTS` names (both by default).
fn part(name: &str) -> bool {
    std::env::var("FLEET_PARTS").map_or(true, |parts| parts.split(',').any(|p| p.trim() == name))
}

fn main() {
    if !e2e_enabled() {
        return;
    }
    if let Err(e) = children::kill_on_signal() {
        eprintln!("fleet: {e}");
    }
    let settings = if bench_mode() {
        Settings::bench()
    } else {
        Settings::smoke()
    };
    if part("real") {
        let figures = real::measure(&settings);
        if settings.figures {
            real::print(&figures, &settings);
        }
    }
    if part("scale") {
        let points = scale::measure(&settings);
        if settings.figures {
            scale::print(&points);
            plot::write(&points);
        }
    }
    if !settings.figures {
        println!("fleet: smoke run ok (run `make bench-fleet` for figures)");
    }
}
