//! The conflicts this process knows of each Mirror between its reconciles, in one record: the
//! namespaces where an object skiff does not manage holds the copy's name, and the conflicts
//! already announced with an Event.
//!
//! The record is made when this process first syncs the Mirror. That moment matters: a
//! restarted skiff knows nothing, so on first sight it trusts what the Mirror's status says
//! an earlier run found (see `conflicts.rs`) instead of meeting refused creates or posting the
//! same Events again.

use super::copy::Owner;
use super::copy_names::CopyNames;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long an object that is not skiff's blocks a namespace before it is looked at again:
/// its removal makes no event skiff can see.
pub const UNMANAGED_RECHECK: Duration = Duration::from_secs(300);

#[derive(Debug, Default)]
struct Record {
    /// Namespaces found blocked by an object skiff does not manage, when, and its name.
    blocked: BTreeMap<String, (Instant, Box<str>)>,
    /// Conflicting namespaces already announced with an Event.
    announced: BTreeSet<String>,
}

#[derive(Default)]
pub struct KnownConflicts {
    mirrors: Mutex<HashMap<Owner, Record>>,
}

impl KnownConflicts {
    /// True the first time it is asked about `owner` (since it was last forgotten).
    pub fn first_sight(&self, owner: &Owner) -> bool {
        let mut mirrors = self.lock();
        if mirrors.contains_key(owner) {
            return false;
        }
        mirrors.insert(owner.clone(), Record::default());
        true
    }

    pub fn remember_blocked(&self, owner: &Owner, (namespace, name): (&str, &str), now: Instant) {
        self.lock()
            .entry(owner.clone())
            .or_default()
            .blocked
            .insert(namespace.to_owned(), (now, name.into()));
    }

    /// Forgets the blocks of names the copies no longer take (an acceptance's `targetName`
    /// changed): the new name is not known to be blocked.
    pub fn forget_renamed(&self, owner: &Owner, names: &CopyNames) {
        if let Some(record) = self.lock().get_mut(owner) {
            record
                .blocked
                .retain(|ns, (_, name)| **name == *names.of(ns));
        }
    }

    /// The namespaces still trusted as blocked at `now`.
    pub fn blocked(&self, owner: &Owner, now: Instant) -> BTreeSet<String> {
        self.lock().get(owner).map_or_else(BTreeSet::new, |r| {
            r.blocked
                .iter()
                .filter(|(_, (at, _))| now.duration_since(*at) < UNMANAGED_RECHECK)
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
        let mut mirrors = self.lock();
        let Some(record) = mirrors.get_mut(owner) else {
            return Vec::new();
        };
        let expired: Vec<String> = record
            .blocked
            .iter()
            .filter(|(_, (at, _))| now.duration_since(*at) >= UNMANAGED_RECHECK)
            .map(|(ns, _)| ns.clone())
            .collect();
        for ns in &expired {
            record.blocked.remove(ns);
        }
        expired
            .into_iter()
            .filter(|ns| selected.contains(ns))
            .collect()
    }

    /// Records `conflicts` as the Mirror's current ones and returns those not announced
    /// before. `known` counts them all as announced already (an earlier run did).
    pub fn announce(&self, owner: &Owner, conflicts: &[String], known: bool) -> Vec<String> {
        let mut mirrors = self.lock();
        let record = mirrors.entry(owner.clone()).or_default();
        let new = if known {
            Vec::new()
        } else {
            conflicts
                .iter()
                .filter(|ns| !record.announced.contains(*ns))
                .cloned()
                .collect()
        };
        record.announced = conflicts.iter().cloned().collect();
        new
    }

    /// Drops what is known of a Mirror that is gone.
    pub fn forget(&self, owner: &Owner) {
        self.lock().remove(owner);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Owner, Record>> {
        self.mirrors.lock().unwrap_or_else(|e| e.into_inner())
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

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_namespace_stays_blocked_until_its_recheck_is_due() {
        let m = KnownConflicts::default();
        let t0 = Instant::now();
        m.remember_blocked(&owner(), ("a", "ca"), t0);
        let later = t0 + UNMANAGED_RECHECK - Duration::from_secs(1);
        assert_eq!(m.blocked(&owner(), later), set(&["a"]));
        assert!(m.take_expired(&owner(), &set(&["a"]), later).is_empty());
        let due = t0 + UNMANAGED_RECHECK;
        assert!(m.blocked(&owner(), due).is_empty());
        assert_eq!(m.take_expired(&owner(), &set(&["a"]), due), vec!["a"]);
        assert!(
            m.take_expired(&owner(), &set(&["a"]), due).is_empty(),
            "taken once"
        );
    }

    #[test]
    fn expired_namespaces_no_longer_selected_are_dropped_unread() {
        let m = KnownConflicts::default();
        let t0 = Instant::now();
        m.remember_blocked(&owner(), ("a", "ca"), t0);
        m.remember_blocked(&owner(), ("b", "ca"), t0);
        let due = t0 + UNMANAGED_RECHECK;
        assert_eq!(m.take_expired(&owner(), &set(&["b"]), due), vec!["b"]);
        assert!(m.blocked(&owner(), due).is_empty());
    }

    #[test]
    fn a_block_goes_when_its_namespace_takes_another_name() {
        let m = KnownConflicts::default();
        let now = Instant::now();
        m.remember_blocked(&owner(), ("a", "ca"), now);
        m.remember_blocked(&owner(), ("b", "ca"), now);
        let mut names = CopyNames::new("ca");
        m.forget_renamed(&owner(), &names);
        assert_eq!(m.blocked(&owner(), now), set(&["a", "b"]));
        names.rename("a", "local-ca");
        m.forget_renamed(&owner(), &names);
        assert_eq!(m.blocked(&owner(), now), set(&["b"]));
    }

    #[test]
    fn first_sight_is_true_once_per_mirror_until_it_is_forgotten() {
        let m = KnownConflicts::default();
        assert!(m.first_sight(&owner()));
        assert!(!m.first_sight(&owner()));
        m.remember_blocked(&owner(), ("a", "ca"), Instant::now());
        m.announce(&owner(), &list(&["a"]), false);
        m.forget(&owner());
        assert!(m.first_sight(&owner()));
        assert!(m.blocked(&owner(), Instant::now()).is_empty());
        assert_eq!(m.announce(&owner(), &list(&["a"]), false), ["a"]);
    }

    #[test]
    fn each_conflict_is_announced_once_while_it_lasts() {
        let m = KnownConflicts::default();
        assert_eq!(m.announce(&owner(), &list(&["a", "b"]), false), ["a", "b"]);
        assert!(m.announce(&owner(), &list(&["a", "b"]), false).is_empty());
        assert!(m.announce(&owner(), &list(&["b"]), false).is_empty());
        assert_eq!(
            m.announce(&owner(), &list(&["a", "b"]), false),
            ["a"],
            "a conflict that went and came back is new again"
        );
    }

    #[test]
    fn conflicts_an_earlier_run_announced_are_not_announced_again() {
        let m = KnownConflicts::default();
        assert!(m.announce(&owner(), &list(&["a"]), true).is_empty());
        assert_eq!(m.announce(&owner(), &list(&["a", "c"]), false), ["c"]);
    }
}
