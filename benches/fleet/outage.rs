//! The hub unreachable: every member's fault proxy partitioned (nothing passes either way,
//! new connections are held) while the hub's source is edited, then healed.
//!
//! Counted: the writes the members' skiffs sent meanwhile (their metrics, `client="main"`)
//! and the writes their API servers received from them other than their own leader Lease
//! (audit logs); how long after the heal each member's copy was written with the edit; and the
//! LISTs the members' identities made on the hub from the partition until after convergence
//! (the hub's audit log), per watch (two a member: Placements and carrier Secrets).

use crate::real::{Member, first_audited, is_copy_write, verdict};
use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, OPERATOR_USER};
use crate::world::{Editor, SOURCE};
use std::time::{Duration, SystemTime};

/// Watches each member keeps on the hub.
pub const WATCHES_PER_MEMBER: usize = 2;
/// After convergence, how long LISTs are still counted: a relist delayed by its jitter comes
/// within 10 s.
const RELIST_GRACE: Duration = Duration::from_secs(15);

pub struct Outage {
    /// The members' skiffs' writes during it, by their metrics.
    pub main_writes: f64,
    /// The writes their API servers received from them during it, their leader Lease aside.
    pub audited_writes: usize,
    /// Per member: from the heal to its copy written with the edit made during it.
    pub converged: Vec<(String, Duration)>,
    /// LISTs on the hub by the members' identities from the partition on.
    pub relists: usize,
    pub watches: usize,
    /// Clusters the hub's Mirror counted silent when it ended.
    pub silent: u64,
    /// Per member: the gaps between its attempts to watch its Placements again during the
    /// outage, from its log (each waits out the watcher's backoff and a connect timeout).
    pub retries: Vec<(String, Vec<Duration>)>,
}

pub fn measure(
    hub: &ControlPlane,
    editor: &Editor,
    members: &[Member],
    lasting: Duration,
) -> Outage {
    let before = main_writes(members);
    let partitioned = SystemTime::now();
    for member in members {
        member.proxy.partition();
    }
    editor.edit("during-the-outage");
    std::thread::sleep(lasting);
    let main_writes = main_writes(members) - before;
    let silent = silent_clusters(hub);
    let healed = SystemTime::now();
    for member in members {
        member.proxy.heal();
    }
    let retries = members
        .iter()
        .map(|m| {
            (
                m.admission.cluster.clone(),
                retry_gaps(m, partitioned, healed),
            )
        })
        .collect();
    let converged = members
        .iter()
        .map(|m| {
            let copied = first_audited(m.cluster, healed, is_copy_write);
            let took = copied.duration_since(healed).unwrap_or_default();
            (m.admission.cluster.clone(), took)
        })
        .collect();
    std::thread::sleep(RELIST_GRACE);
    let audited_writes = members
        .iter()
        .map(|m| {
            let audit = m.cluster.audit();
            (audit.iter())
                .filter(|e| e.user == OPERATOR_USER && e.is_write() && !e.is_lease())
                .filter(|e| e.received >= partitioned && e.received < healed)
                .count()
        })
        .sum();
    let identities: Vec<String> = members
        .iter()
        .map(|m| identity(&m.admission.cluster))
        .collect();
    let relists = (hub.audit().iter())
        .filter(|e| identities.contains(&e.user) && e.is_relist())
        .filter(|e| e.stage == "ResponseComplete" && e.received >= partitioned)
        .count();
    Outage {
        main_writes,
        audited_writes,
        converged,
        relists,
        watches: WATCHES_PER_MEMBER * members.len(),
        silent,
        retries,
    }
}

/// The gaps between the member's failed attempts to watch its Placements in `[from, to)`.
fn retry_gaps(member: &Member, from: SystemTime, to: SystemTime) -> Vec<Duration> {
    let logs = member
        .skiff
        .as_ref()
        .map(|r| r.skiff.logs())
        .unwrap_or_default();
    let failed: Vec<SystemTime> = (logs.lines())
        .filter(|line| line.contains("watching Placement failed"))
        .filter_map(|line| skiff::time::parse_rfc3339(line.split_whitespace().next()?))
        .filter(|at| *at >= from && *at < to)
        .collect();
    let gaps = failed.windows(2).map(|w| w[1].duration_since(w[0]));
    gaps.filter_map(Result::ok).collect()
}

/// A member's identity on the hub, as its audit log names it.
pub fn identity(cluster: &str) -> String {
    format!("system:serviceaccount:{cluster}:skiff-member")
}

fn main_writes(members: &[Member]) -> f64 {
    let replicas = members.iter().filter_map(|m| m.skiff.as_ref());
    replicas
        .flat_map(|r| r.writes())
        .map(|(_, count)| count)
        .sum()
}

/// `status.clusters.silent` of the hub's fleet Mirror.
fn silent_clusters(hub: &ControlPlane) -> u64 {
    let mirror = hub.object("mirror", OPERATOR_NAMESPACE, SOURCE);
    let silent = mirror.as_ref().map(|m| &m["status"]["clusters"]["silent"]);
    silent.and_then(|s| s.as_u64()).unwrap_or(0)
}

pub fn print(outage: &Outage, lasting: Duration) {
    let lasting = match lasting.as_secs() {
        s if s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    };
    println!(
        "| hub unreachable {lasting}: the members' writes meanwhile (metrics, client=\"main\") | {} | 0: {} |",
        outage.main_writes,
        verdict(outage.main_writes == 0.0)
    );
    println!(
        "| the same, as their API servers' audit logs saw them (their leader Lease aside) | {} | 0: {} |",
        outage.audited_writes,
        verdict(outage.audited_writes == 0)
    );
    let slowest = outage.converged.iter().map(|(_, d)| *d).max();
    let slowest = slowest.unwrap_or_default();
    let each: Vec<String> = (outage.converged.iter())
        .map(|(cluster, took)| format!("{cluster} {} ms", took.as_millis()))
        .collect();
    println!(
        "| healed → both members converged (the edit made during the outage) | {} | ≤ 5 s: {} |",
        each.join(", "),
        verdict(slowest <= Duration::from_secs(5))
    );
    let per_watch = outage.relists as f64 / outage.watches as f64;
    println!(
        "| relists (LISTs by the members' identities on the hub) per watch, partition → converged + {} s | {} LISTs, {} watches: {per_watch:.2} | ≤ 1: {} |",
        RELIST_GRACE.as_secs(),
        outage.relists,
        outage.watches,
        verdict(per_watch <= 1.0)
    );
    for (cluster, gaps) in &outage.retries {
        let seconds: Vec<String> = (gaps.iter().rev().take(6).rev())
            .map(|g| format!("{:.0}", g.as_secs_f64()))
            .collect();
        println!(
            "| {cluster}: gaps between its last attempts to watch its Placements during the outage (its log) | {} s | |",
            seconds.join(", ")
        );
    }
    println!(
        "| clusters the hub counted silent as the outage ended (`--member-silence-after` 3 min) | {} | |",
        outage.silent
    );
}
