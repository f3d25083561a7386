//! A fleet Mirror's reconcile on its hub: its Placements written through the [`Placer`], and
//! its status counting clusters: how many hold the current version, and which are failing or
//! silent, named (up to ten) in the `Ready` condition.

use super::announce::Announcer;
use super::desired::DesiredCopy;
use super::mirror_writer::MirrorWriter;
use super::placer::{Placed, Placer};
use super::status::{Observed, Reason};
use super::types::Mirror;
use crate::kube::Error;
use crate::runtime::Action;
use std::collections::BTreeSet;

/// Clusters a message names at most.
const NAMED: usize = 10;

/// Places what the fleet Mirror `mirror` wants in the member namespaces `serves`, and reports.
pub async fn place(
    (placer, announce): (&Placer, &Announcer),
    writer: &MirrorWriter,
    mirror: &Mirror,
    (desired, serves): (&DesiredCopy, &BTreeSet<String>),
) -> Result<Action, Error> {
    let hash = desired.hash.hex();
    let mut observed = Observed {
        source_hash: Some(hash),
        selected: serves.len() as u32,
        ..Observed::default()
    };
    let placed = match placer.place(mirror, desired, serves).await {
        Ok(placed) => placed,
        Err(e) => {
            writer
                .write_status(mirror, &observed, Reason::Error, &e.to_string())
                .await?;
            return Err(e);
        }
    };
    observed.synced = placed.synced;
    observed.conflicts = placed.conflicts.clone();
    observed.clusters = Some(placed.clusters);
    announce
        .clusters(mirror, &placer.news(mirror, &placed))
        .await;
    let (reason, message) = verdict(&placed, serves.len());
    writer
        .write_status(mirror, &observed, reason, &message)
        .await?;
    Ok(placed.next.map_or(Action::Done, Action::RequeueAfter))
}

/// The `Ready` reason and message of a fleet Mirror that `placed`, of `selected` clusters.
fn verdict(placed: &Placed, selected: usize) -> (Reason, String) {
    let clusters = placed.clusters;
    let current = format!(
        "{} of {selected} clusters hold the current version",
        clusters.current
    );
    if clusters.silent > 0 {
        let named = some(placed.silent.iter().cloned());
        let message = format!(
            "{current}; {} silent (no heartbeat lately): {named}",
            clusters.silent
        );
        return (Reason::ClustersSilent, message);
    }
    if clusters.failing > 0 {
        let failing = (placed.failing.iter()).map(|(ns, reason)| format!("{ns} ({reason})"));
        let message = format!("{current}; {} failing: {}", clusters.failing, some(failing));
        return (Reason::ClustersFailing, message);
    }
    if !placed.conflicts.is_empty() {
        let named = some(placed.conflicts.iter().cloned());
        let message = format!(
            "{current}; in {named} another fleet Mirror's Placement or carrier holds the name: \
             nothing is placed there. Give one of them another spec.targetName"
        );
        return (Reason::Conflict, message);
    }
    if clusters.pending > 0 {
        return (
            Reason::ClustersPending,
            format!("{current}; {} pending", clusters.pending),
        );
    }
    (Reason::Synced, current)
}

/// The first [`NAMED`] of `items`, and how many more.
fn some(items: impl ExactSizeIterator<Item = String>) -> String {
    let more = items.len().saturating_sub(NAMED);
    let named: Vec<String> = items.take(NAMED).collect();
    match more {
        0 => named.join(", "),
        n => format!("{} and {n} more", named.join(", ")),
    }
}
