//! What this replica wrote that the copy cache may not have seen yet.
//!
//! The cache learns of a write only when its watch event arrives. A reconcile that runs in
//! between (another event on the same Mirror) would see a created copy as missing, or an
//! updated one as stale, and write again. Like controller-runtime's "expectations", the
//! reconciler records each write here and reads the cache through it; an entry is dropped as
//! soon as the cache has moved past the version the write replaced.
//!
//! An entry whose copy is never looked at again (its namespace was deleted, or its Mirror) would
//! stay forever, so entries also expire, like the expectations of kube-controller-manager, after
//! [`EXPIRY`]. An expired entry only costs efficiency: the server refuses a write based on a
//! stale cache (409, or 404 for a delete), and the reconciler recovers from that.

use super::copy::{CopyInfo, Owner};
use super::types::SourceKind;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a write is remembered at most; a watch delivers its event within seconds.
const EXPIRY: Duration = Duration::from_secs(5 * 60);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CopyKey {
    kind: SourceKind,
    namespace: String,
    name: String,
}

#[derive(Debug, Clone)]
struct Write {
    /// The resourceVersion the cache held before the write (`None`: no object).
    replaced: Option<String>,
    /// The copy after the write (`None`: deleted).
    now: Option<CopyInfo>,
    at: Instant,
}

pub struct Written {
    expiry: Duration,
    state: Mutex<State>,
}

struct State {
    writes: HashMap<CopyKey, Write>,
    swept: Instant,
}

impl Default for Written {
    fn default() -> Self {
        Written::expiring_after(EXPIRY)
    }
}

impl Written {
    fn expiring_after(expiry: Duration) -> Written {
        Written {
            expiry,
            state: Mutex::new(State {
                writes: HashMap::new(),
                swept: Instant::now(),
            }),
        }
    }

    /// Records a successful create, update (`now` = the copy written) or delete (`None`).
    pub fn record(
        &self,
        kind: SourceKind,
        namespace: &str,
        name: &str,
        replaced: Option<String>,
        now: Option<CopyInfo>,
    ) {
        let key = CopyKey {
            kind,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        };
        let at = Instant::now();
        self.insert(key, Write { replaced, now, at });
    }

    /// Stores a write, first dropping the expired ones if no sweep ran for an expiry period.
    fn insert(&self, key: CopyKey, write: Write) {
        let at = write.at;
        let mut state = self.lock();
        if at.duration_since(state.swept) >= self.expiry {
            state
                .writes
                .retain(|_, w| at.duration_since(w.at) < self.expiry);
            state.swept = at;
        }
        state.writes.insert(key, write);
    }

    /// The copy as it is after this replica's writes, given what the cache shows (`cached`).
    pub fn resolve(
        &self,
        kind: SourceKind,
        namespace: &str,
        name: &str,
        cached: Option<CopyInfo>,
    ) -> Option<CopyInfo> {
        let key = CopyKey {
            kind,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        };
        let mut state = self.lock();
        let Some(write) = state.writes.get(&key) else {
            return cached;
        };
        let cached_version = cached.as_ref().map(|c| c.resource_version.clone());
        if cached_version == write.replaced && write.at.elapsed() < self.expiry {
            write.now.clone()
        } else {
            state.writes.remove(&key);
            cached
        }
    }

    /// Copies of `owner` written by this replica that the cache does not hold at all yet.
    pub fn created_unseen(
        &self,
        owner: &Owner,
        in_cache: impl Fn(SourceKind, &str, &str) -> bool,
    ) -> Vec<CopyInfo> {
        self.lock()
            .writes
            .iter()
            .filter(|(_, w)| w.replaced.is_none() && w.at.elapsed() < self.expiry)
            .filter(|(k, _)| !in_cache(k.kind, &k.namespace, &k.name))
            .filter_map(|(_, w)| w.now.clone())
            .filter(|c| c.owner.as_ref() == Some(owner))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.lock().writes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(rv: &str, hash: &str) -> CopyInfo {
        CopyInfo {
            kind: SourceKind::ConfigMap,
            namespace: "a".into(),
            name: "ca".into(),
            owner: Some(Owner {
                namespace: "src".into(),
                name: "m".into(),
            }),
            resource_version: rv.into(),
            content_hash: hash.into(),
        }
    }

    #[test]
    fn a_create_the_cache_has_not_seen_reads_as_present() {
        let w = Written::default();
        w.record(SourceKind::ConfigMap, "a", "ca", None, Some(info("5", "h")));
        assert_eq!(
            w.resolve(SourceKind::ConfigMap, "a", "ca", None),
            Some(info("5", "h"))
        );
    }

    #[test]
    fn an_update_hides_the_stale_cached_version_until_the_cache_moves() {
        let w = Written::default();
        w.record(
            SourceKind::ConfigMap,
            "a",
            "ca",
            Some("4".into()),
            Some(info("6", "new")),
        );
        let stale = Some(info("4", "old"));
        assert_eq!(
            w.resolve(SourceKind::ConfigMap, "a", "ca", stale)
                .map(|c| c.content_hash),
            Some("new".into())
        );
        let caught_up = Some(info("6", "new"));
        assert_eq!(
            w.resolve(SourceKind::ConfigMap, "a", "ca", caught_up.clone()),
            caught_up
        );
        assert!(w.is_empty(), "the entry goes once the cache has moved");
    }

    #[test]
    fn a_delete_hides_the_cached_copy() {
        let w = Written::default();
        w.record(SourceKind::ConfigMap, "a", "ca", Some("4".into()), None);
        assert_eq!(
            w.resolve(SourceKind::ConfigMap, "a", "ca", Some(info("4", "h"))),
            None
        );
    }

    #[test]
    fn unseen_creates_are_listed_for_their_owner_only() {
        let w = Written::default();
        w.record(SourceKind::ConfigMap, "a", "ca", None, Some(info("5", "h")));
        let me = Owner {
            namespace: "src".into(),
            name: "m".into(),
        };
        let other = Owner {
            namespace: "src".into(),
            name: "x".into(),
        };
        assert_eq!(w.created_unseen(&me, |_, _, _| false).len(), 1);
        assert!(w.created_unseen(&me, |_, _, _| true).is_empty());
        assert!(w.created_unseen(&other, |_, _, _| false).is_empty());
    }

    #[test]
    fn an_expired_write_is_ignored_and_swept() {
        let w = Written::expiring_after(Duration::ZERO);
        w.record(SourceKind::ConfigMap, "a", "ca", None, Some(info("5", "h")));
        assert_eq!(w.resolve(SourceKind::ConfigMap, "a", "ca", None), None);
        let me = Owner {
            namespace: "src".into(),
            name: "m".into(),
        };
        w.record(SourceKind::ConfigMap, "b", "ca", None, Some(info("6", "h")));
        assert!(w.created_unseen(&me, |_, _, _| false).is_empty());
        w.record(SourceKind::ConfigMap, "c", "ca", None, Some(info("7", "h")));
        assert_eq!(w.len(), 1, "each record sweeps what has expired");
    }

    #[test]
    fn a_write_within_its_lifetime_is_kept() {
        let w = Written::expiring_after(Duration::from_secs(3600));
        w.record(SourceKind::ConfigMap, "a", "ca", None, Some(info("5", "h")));
        w.record(SourceKind::ConfigMap, "b", "ca", None, Some(info("6", "h")));
        assert_eq!(w.len(), 2);
        assert!(w.resolve(SourceKind::ConfigMap, "a", "ca", None).is_some());
    }

    #[test]
    fn a_sweep_keeps_the_writes_that_have_not_expired() {
        let w = Written::expiring_after(Duration::from_secs(10));
        let start = Instant::now();
        let key = |namespace: &str| CopyKey {
            kind: SourceKind::ConfigMap,
            namespace: namespace.into(),
            name: "ca".into(),
        };
        let write_at = |secs| Write {
            replaced: None,
            now: Some(info("5", "h")),
            at: start + Duration::from_secs(secs),
        };
        w.insert(key("old"), write_at(0));
        w.insert(key("young"), write_at(5));
        w.insert(key("new"), write_at(12)); // sweeps: "old" is 12 s old, "young" 7 s
        let mut left: Vec<String> = w
            .lock()
            .writes
            .keys()
            .map(|k| k.namespace.clone())
            .collect();
        left.sort();
        assert_eq!(left, ["new", "young"]);
    }
}
