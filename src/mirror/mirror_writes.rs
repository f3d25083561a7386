//! What this replica wrote to Mirror objects that the Mirror cache may not have seen yet.
//!
//! A reconcile may patch the finalizer and then replace the status: two writes, two new
//! resourceVersions. Until the watch delivers them, the cache shows an older version, and a
//! reconcile reading it would write again (a 409 at best). So the reconciler reads Mirrors
//! through this overlay: while the cache shows a version this replica has superseded, the
//! object this replica wrote is used instead; once the cache shows any other version, the
//! entry is dropped (the cache has caught up, or someone else changed the Mirror).

use super::copy::Owner;
use super::types::Mirror;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

#[derive(Default)]
pub struct MirrorWrites {
    /// Per Mirror: the versions its writes replaced, and the object last written.
    entries: Mutex<HashMap<Owner, (Vec<String>, Mirror)>>,
}

impl MirrorWrites {
    /// The cached Mirror, or what this replica last wrote if the cache hasn't caught up.
    pub fn latest(&self, owner: &Owner, cached: Mirror) -> Mirror {
        let mut entries = self.lock();
        match entries.get(owner) {
            Some((superseded, ours))
                if superseded
                    .iter()
                    .any(|v| v == cached.metadata.resource_version()) =>
            {
                ours.clone()
            }
            Some(_) => {
                entries.remove(owner);
                cached
            }
            None => cached,
        }
    }

    /// Records that `written` replaced the version `replaced`; a write on top of this
    /// replica's previous one extends the versions it supersedes.
    pub fn remember(&self, replaced: &str, written: Mirror) {
        let owner = Owner::of(&written);
        let mut entries = self.lock();
        let superseded = match entries.remove(&owner) {
            Some((mut versions, ours)) if ours.metadata.resource_version() == replaced => {
                versions.push(replaced.to_owned());
                versions
            }
            _ => vec![replaced.to_owned()],
        };
        entries.insert(owner, (superseded, written));
    }

    /// Drops what is known of a Mirror that is gone.
    pub fn forget(&self, owner: &Owner) {
        self.lock().remove(owner);
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Owner, (Vec<String>, Mirror)>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::ObjectMeta;

    fn at(rv: &str, note: &str) -> Mirror {
        let mut m = Mirror {
            metadata: ObjectMeta::named(Some("src"), "m"),
            ..Mirror::default()
        };
        m.metadata.resource_version = Some(rv.into());
        m.spec.source.name = note.into();
        m
    }

    fn owner() -> Owner {
        Owner::of(&at("0", ""))
    }

    #[test]
    fn a_cache_two_writes_behind_reads_as_the_last_write() {
        let w = MirrorWrites::default();
        w.remember("1", at("2", "finalizer"));
        w.remember("2", at("3", "status"));
        for stale in ["1", "2"] {
            let seen = w.latest(&owner(), at(stale, "cached"));
            assert_eq!(seen.spec.source.name, "status", "cache at {stale}");
        }
        assert_eq!(
            w.latest(&owner(), at("3", "cached")).spec.source.name,
            "cached"
        );
        assert!(w.is_empty(), "the entry goes once the cache has caught up");
    }

    #[test]
    fn a_change_by_someone_else_drops_the_entry() {
        let w = MirrorWrites::default();
        w.remember("1", at("2", "ours"));
        assert_eq!(
            w.latest(&owner(), at("5", "theirs")).spec.source.name,
            "theirs"
        );
        assert_eq!(w.latest(&owner(), at("1", "old")).spec.source.name, "old");
    }

    #[test]
    fn a_write_not_on_top_of_ours_starts_over() {
        let w = MirrorWrites::default();
        w.remember("1", at("2", "first"));
        w.remember("7", at("8", "second"));
        assert_eq!(
            w.latest(&owner(), at("1", "cached")).spec.source.name,
            "cached"
        );
    }

    #[test]
    fn a_gone_mirror_is_forgotten() {
        let w = MirrorWrites::default();
        w.remember("1", at("2", "ours"));
        w.forget(&owner());
        assert!(w.is_empty());
    }
}
