//! Conflicts: objects holding a copy's name that skiff does not manage, found and announced.
//!
//! The copy cache holds only objects with skiff's label, so it cannot see these: a create
//! refused with AlreadyExists finds them. To keep a steady state and a restart free of
//! writes, a namespace found blocked is trusted for [`UNMANAGED_RECHECK`](super::known_conflicts::UNMANAGED_RECHECK) and then looked at
//! again with a read, and a Mirror whose status already reports conflicts is probed with reads
//! the first time this process syncs it, instead of meeting refused creates. Each conflict is
//! announced with one Warning Event while it lasts, and not again after a restart.

use super::copy::Owner;
use super::existing::Claim;
use super::reconcile::Reconciler;
use super::status;
use super::types::Mirror;
use std::collections::BTreeSet;
use std::time::Instant;

impl Reconciler {
    /// The selected namespaces where an object skiff does not manage holds the target name,
    /// as far as is known without writing: remembered ones, re-read once their time is up,
    /// and on first sight of a Mirror whose status reports conflicts, a read of each selected
    /// namespace without a cached copy (when there are no more of those than conflicts
    /// reported, so a restart with many new namespaces does not read before every create).
    pub(super) async fn find_unmanaged(
        &self,
        mirror: &Mirror,
        owner: &Owner,
        selected: &BTreeSet<String>,
        first_sight: bool,
    ) -> BTreeSet<String> {
        let now = Instant::now();
        let (kind, name) = (mirror.spec.source.kind, mirror.spec.target_name());
        let mut suspects: BTreeSet<String> = self
            .known_conflicts
            .take_expired(owner, selected, now)
            .into_iter()
            .collect();
        let reported = mirror.status.as_ref().map_or(0, |s| s.conflicts as usize);
        if first_sight && reported > 0 {
            let uncached: Vec<&String> = selected
                .iter()
                .filter(|ns| self.caches.copy(kind, ns, name).is_none())
                .collect();
            if uncached.len() <= reported {
                suspects.extend(uncached.into_iter().cloned());
            }
        }
        for ns in suspects {
            // An object handed to this Mirror is not a block: the create meets it and adopts it.
            if let Ok(found) = self.requests.existing(kind, &ns, name).await
                && found.info.owner.is_none()
                && found.claim(owner) == Claim::NotMine
            {
                self.known_conflicts.remember_blocked(owner, &ns, now);
            }
        }
        self.known_conflicts.blocked(owner, now)
    }

    /// Posts one Warning Event naming the conflicts not announced yet. On first sight, what
    /// the status already shows was announced by an earlier run.
    pub(super) async fn report_conflicts(
        &self,
        mirror: &Mirror,
        owner: &Owner,
        conflicts: &[String],
        first_sight: bool,
    ) {
        let known = first_sight && status::already_reports(mirror, conflicts);
        let new = self.known_conflicts.announce(owner, conflicts, known);
        self.announce.conflicts(mirror, &new).await;
    }
}
