//! Objects holding a copy's name that skiff does not manage, remembered per Mirror.
//!
//! The copy cache holds only objects with skiff's label, so it cannot see these: a create
//! refused with AlreadyExists finds them. To keep a steady state and a restart free of
//! writes, a namespace found blocked is trusted for [`UNMANAGED_RECHECK`] and then looked at
//! again with a read, and a Mirror whose status already reports conflicts is probed with reads
//! the first time this process reconciles it, instead of meeting refused creates.

use super::copy::Owner;
use super::reconcile::Reconciler;
use super::types::Mirror;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long an object that is not skiff's blocks a namespace before it is looked at again:
/// its removal makes no event skiff can see.
pub const UNMANAGED_RECHECK: Duration = Duration::from_secs(300);

#[derive(Default)]
pub struct Unmanaged {
    /// Per Mirror: the namespaces found blocked, and when.
    seen: Mutex<HashMap<Owner, BTreeMap<String, Instant>>>,
    /// Mirrors this process has reconciled already; a restart starts with none.
    known: Mutex<HashSet<Owner>>,
}

impl Unmanaged {
    pub fn remember(&self, owner: &Owner, namespace: &str, now: Instant) {
        lock(&self.seen)
            .entry(owner.clone())
            .or_default()
            .insert(namespace.to_owned(), now);
    }

    /// The namespaces still trusted as blocked at `now`.
    pub fn blocked(&self, owner: &Owner, now: Instant) -> BTreeSet<String> {
        lock(&self.seen)
            .get(owner)
            .map_or_else(BTreeSet::new, |seen| {
                seen.iter()
                    .filter(|(_, at)| now.duration_since(**at) < UNMANAGED_RECHECK)
                    .map(|(ns, _)| ns.clone())
                    .collect()
            })
    }

    /// Forgets the namespaces whose block has expired at `now`, and returns those of them in
    /// `selected`: they are to be looked at again.
    pub fn take_expired(
        &self,
        owner: &Owner,
        selected: &BTreeSet<String>,
        now: Instant,
    ) -> Vec<String> {
        let mut all = lock(&self.seen);
        let Some(seen) = all.get_mut(owner) else {
            return Vec::new();
        };
        let expired: Vec<String> = seen
            .iter()
            .filter(|(_, at)| now.duration_since(**at) >= UNMANAGED_RECHECK)
            .map(|(ns, _)| ns.clone())
            .collect();
        for ns in &expired {
            seen.remove(ns);
        }
        expired
            .into_iter()
            .filter(|ns| selected.contains(ns))
            .collect()
    }

    /// Drops what is known of a Mirror that is gone.
    pub fn forget(&self, owner: &Owner) {
        lock(&self.seen).remove(owner);
        lock(&self.known).remove(owner);
    }

    /// True the first time it is asked about `owner`.
    pub fn first_sight(&self, owner: &Owner) -> bool {
        lock(&self.known).insert(owner.clone())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

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
    ) -> BTreeSet<String> {
        let now = Instant::now();
        let (kind, name) = (mirror.spec.source.kind, mirror.spec.target_name());
        let mut suspects: BTreeSet<String> = self
            .unmanaged
            .take_expired(owner, selected, now)
            .into_iter()
            .collect();
        let reported = mirror.status.as_ref().map_or(0, |s| s.conflicts as usize);
        if self.unmanaged.first_sight(owner) && reported > 0 {
            let uncached: Vec<&String> = selected
                .iter()
                .filter(|ns| self.caches.copy(kind, ns, name).is_none())
                .collect();
            if uncached.len() <= reported {
                suspects.extend(uncached.into_iter().cloned());
            }
        }
        for ns in suspects {
            if let Ok(found) = self.fetch_copy(kind, &ns, name).await
                && found.owner.is_none()
            {
                self.unmanaged.remember(owner, &ns, now);
            }
        }
        self.unmanaged.blocked(owner, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> Owner {
        Owner {
            namespace: "src".into(),
            name: "m".into(),
        }
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_namespace_stays_blocked_until_its_recheck_is_due() {
        let u = Unmanaged::default();
        let t0 = Instant::now();
        u.remember(&owner(), "a", t0);
        let later = t0 + UNMANAGED_RECHECK - Duration::from_secs(1);
        assert_eq!(u.blocked(&owner(), later), set(&["a"]));
        assert!(u.take_expired(&owner(), &set(&["a"]), later).is_empty());
        let due = t0 + UNMANAGED_RECHECK;
        assert!(u.blocked(&owner(), due).is_empty());
        assert_eq!(u.take_expired(&owner(), &set(&["a"]), due), vec!["a"]);
        assert!(
            u.take_expired(&owner(), &set(&["a"]), due).is_empty(),
            "taken once"
        );
    }

    #[test]
    fn expired_namespaces_no_longer_selected_are_dropped_unread() {
        let u = Unmanaged::default();
        let t0 = Instant::now();
        u.remember(&owner(), "a", t0);
        u.remember(&owner(), "b", t0);
        let due = t0 + UNMANAGED_RECHECK;
        assert_eq!(u.take_expired(&owner(), &set(&["b"]), due), vec!["b"]);
        assert!(u.blocked(&owner(), due).is_empty());
    }

    #[test]
    fn first_sight_is_true_once_per_mirror_until_it_is_forgotten() {
        let u = Unmanaged::default();
        assert!(u.first_sight(&owner()));
        assert!(!u.first_sight(&owner()));
        u.remember(&owner(), "a", Instant::now());
        u.forget(&owner());
        assert!(u.first_sight(&owner()));
        assert!(u.blocked(&owner(), Instant::now()).is_empty());
    }
}
