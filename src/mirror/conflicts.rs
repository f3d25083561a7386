//! Conflicts: objects holding a copy's name that skiff does not manage, found and announced.
//!
//! The copy cache holds only objects with skiff's label, so it cannot see these: a create
//! refused with AlreadyExists finds them. To keep a steady state and a restart free of
//! writes, a namespace found blocked is trusted for [`UNMANAGED_RECHECK`] and then looked at
//! again with a read, and a Mirror whose status already reports conflicts is probed with reads
//! the first time this process syncs it, instead of meeting refused creates. Each conflict is
//! announced with one Warning Event while it lasts, and not again after a restart.

use super::copy::Owner;
use super::copy_names::CopyNames;
use super::copy_requests::CopyRequests;
use super::existing::Claim;
use super::known_conflicts::{KnownConflicts, UNMANAGED_RECHECK};
use super::status;
use super::types::Mirror;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// What is known of each Mirror's conflicts, and the reads that find more.
pub struct Conflicts {
    known: KnownConflicts,
    requests: CopyRequests,
}

impl Conflicts {
    pub fn new(requests: CopyRequests) -> Conflicts {
        Conflicts {
            known: KnownConflicts::default(),
            requests,
        }
    }

    /// True the first time this process syncs `owner` (since it was last forgotten).
    pub fn first_sight(&self, owner: &Owner) -> bool {
        self.known.first_sight(owner)
    }

    /// The selected namespaces where an object skiff does not manage holds the target name,
    /// as far as is known without writing: remembered ones, re-read once their time is up,
    /// and on first sight of a Mirror whose status reports conflicts, a read of each selected
    /// namespace without a cached copy (when there are no more of those than conflicts
    /// reported, so a restart with many new namespaces does not read before every create).
    /// `cached(ns)` tells whether the copy cache holds an object with the name in `ns`.
    pub async fn find_unmanaged(
        &self,
        (mirror, owner, names): (&Mirror, &Owner, &CopyNames),
        selected: &BTreeSet<String>,
        first_sight: bool,
        cached: impl Fn(&str) -> bool,
    ) -> BTreeSet<String> {
        let now = Instant::now();
        let kind = mirror.spec.copy_kind();
        self.known.forget_renamed(owner, names);
        let mut suspects: BTreeSet<String> = self
            .known
            .take_expired(owner, selected, now)
            .into_iter()
            .collect();
        let reported = mirror.status.as_ref().map_or(0, |s| s.conflicts as usize);
        if first_sight && reported > 0 {
            let uncached: Vec<&String> = selected.iter().filter(|ns| !cached(ns)).collect();
            if uncached.len() <= reported {
                suspects.extend(uncached.into_iter().cloned());
            }
        }
        for ns in suspects {
            // An object handed to this Mirror is not a block: the create meets it and adopts it.
            if let Ok(found) = self.requests.existing(kind.row(), &ns, names.of(&ns)).await
                && found.info.owner.is_none()
                && found.claim(owner) == Claim::NotMine
            {
                self.known
                    .remember_blocked(owner, (&ns, names.of(&ns)), now);
            }
        }
        self.known.blocked(owner, now)
    }

    /// The namespaces where an object skiff does not manage is known to hold `owner`'s name.
    pub fn blocked(&self, owner: &Owner) -> BTreeSet<String> {
        self.known.blocked(owner, Instant::now())
    }

    /// Remembers the namespaces a create of the copies named `names` found blocked, each
    /// since when it found it.
    pub fn remember_blocked(
        &self,
        owner: &Owner,
        blocked: &[(String, Instant)],
        names: &CopyNames,
    ) {
        for (ns, at) in blocked {
            self.known.remember_blocked(owner, (ns, names.of(ns)), *at);
        }
    }

    /// Of `conflicts` (sorted), those to announce now: not announced yet. On first sight, what
    /// the status already shows was announced by an earlier run.
    pub fn unannounced(
        &self,
        mirror: &Mirror,
        owner: &Owner,
        conflicts: &[String],
        first_sight: bool,
    ) -> Vec<String> {
        let known = first_sight && status::already_reports(mirror, conflicts);
        self.known.announce(owner, conflicts, known)
    }

    /// When to sync `owner` again on its own: while a namespace is blocked, once its block is
    /// due for a re-read (an object's removal makes no event skiff can see).
    pub fn recheck(&self, owner: &Owner) -> Option<Duration> {
        let blocked = !self.known.blocked(owner, Instant::now()).is_empty();
        blocked.then_some(UNMANAGED_RECHECK)
    }

    /// Drops what is known of a Mirror that is gone.
    pub fn forget(&self, owner: &Owner) {
        self.known.forget(owner);
    }
}
