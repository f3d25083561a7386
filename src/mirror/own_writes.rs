//! What this replica wrote that its caches may not have seen yet: copies, Mirrors and
//! acceptance statuses alike.
//!
//! A cache learns of a write only when its watch event arrives. A reconcile that runs in
//! between would see a created copy as missing, an updated one (or a Mirror whose finalizer or
//! status was just written) as stale, and write again. Like controller-runtime's
//! "expectations", the reconciler records each write here and reads the caches through it:
//! while a cache shows a version this replica has superseded, the object this replica wrote is
//! used instead; once it shows any other version, the entry is dropped (the cache caught up, or
//! someone else changed the object).
//!
//! An entry whose object is never looked at again (its namespace or Mirror was deleted) would
//! stay forever, so entries also expire, like the expectations of kube-controller-manager, after
//! `EXPIRY`. An expired entry only costs efficiency: the server refuses a write based on a
//! stale cache (409, or 404 for a delete), and the reconciler recovers from that.

use super::copy::{CopyInfo, Owner};
use super::types::{Mirror, SourceKind};
use crate::kube::api::{Resource, Version};
use crate::runtime::{Change, ObjectKey};
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a write is remembered at most; a watch delivers its event within seconds.
const EXPIRY: Duration = Duration::from_secs(5 * 60);

/// The resourceVersion of "no object": what a create replaces.
const ABSENT: &str = "";

/// An object whose version tells whether a cache has caught up with it.
pub trait Versioned: Clone {
    fn version(&self) -> Version;
}

impl Versioned for CopyInfo {
    fn version(&self) -> Version {
        self.resource_version.clone()
    }
}

impl Versioned for Mirror {
    fn version(&self) -> Version {
        Version::new(self.metadata.resource_version())
    }
}

/// Which copy: its kind, and its key in the copy cache of that kind (40 bytes, pinned by a
/// test: a fan-out holds one per write it made).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CopyKey {
    pub kind: SourceKind,
    pub object: ObjectKey,
}

impl CopyKey {
    pub fn new(kind: SourceKind, namespace: &str, name: &str) -> CopyKey {
        CopyKey::of(kind, ObjectKey::new(namespace, name))
    }

    /// The copy of `kind` cached under `object`, reusing the key's strings.
    pub fn of(kind: SourceKind, object: ObjectKey) -> CopyKey {
        CopyKey { kind, object }
    }
}

/// Copy writes, by copy.
pub type CopyWrites = OwnWrites<CopyKey, CopyInfo>;
/// Mirror writes (finalizer, status), by Mirror.
pub type MirrorWrites = OwnWrites<Owner, Mirror>;

#[derive(Debug, Clone)]
struct Entry<T> {
    /// The versions this replica's writes replaced, oldest first ([`ABSENT`] for a create):
    /// a boxed slice, as long as it is (usually one), where a `Vec` would keep room for four.
    superseded: Box<[Version]>,
    /// The object after the last write (`None`: deleted).
    ours: Option<T>,
    at: Instant,
}

pub struct OwnWrites<K, T> {
    expiry: Duration,
    state: Mutex<State<K, T>>,
}

struct State<K, T> {
    entries: HashMap<K, Entry<T>>,
    swept: Instant,
}

impl<K: Eq + Hash + Clone, T: Versioned> Default for OwnWrites<K, T> {
    fn default() -> Self {
        OwnWrites::expiring_after(EXPIRY)
    }
}

impl<K: Eq + Hash + Clone, T: Versioned> OwnWrites<K, T> {
    fn expiring_after(expiry: Duration) -> Self {
        OwnWrites {
            expiry,
            state: Mutex::new(State {
                entries: HashMap::new(),
                swept: Instant::now(),
            }),
        }
    }

    /// Records a successful write that replaced version `replaced` (`None`: a create) with
    /// `written` (`None`: a delete). A write on top of this replica's previous one extends the
    /// versions it supersedes, so a cache two writes behind still reads as the last write.
    pub fn record(&self, key: K, replaced: Option<&str>, written: Option<T>) {
        self.insert(key, replaced.unwrap_or(ABSENT), written, Instant::now());
    }

    fn insert(&self, key: K, replaced: &str, written: Option<T>, at: Instant) {
        let mut state = self.lock();
        if at.duration_since(state.swept) >= self.expiry {
            let expiry = self.expiry;
            state
                .entries
                .retain(|_, e| at.duration_since(e.at) < expiry);
            state.swept = at;
        }
        let mut superseded = match state.entries.remove(&key) {
            Some(e) if version_of(&e.ours).is(replaced) => e.superseded.into_vec(),
            _ => Vec::new(),
        };
        superseded.push(Version::new(replaced));
        let entry = Entry {
            superseded: superseded.into_boxed_slice(),
            ours: written,
            at,
        };
        state.entries.insert(key, entry);
    }

    /// The object as it is after this replica's writes, given what the cache shows (`cached`).
    pub fn resolve(&self, key: &K, cached: Option<T>) -> Option<T> {
        let mut state = self.lock();
        let Some(entry) = state.entries.get(key) else {
            return cached;
        };
        let seen = version_of(&cached);
        if entry.superseded.contains(&seen) && entry.at.elapsed() < self.expiry {
            entry.ours.clone()
        } else {
            state.entries.remove(key);
            cached
        }
    }

    /// What a watch event shows the cache held of `key` at `seen`: the version an event
    /// brings, or for a deletion the version the cache held before it. A version none of this
    /// replica's writes replaced means the cache caught up with them (or someone changed or
    /// deleted the object since), so what was kept of them goes now, as kube-controller-manager
    /// lowers its expectations when it observes the event, not at the next read. Otherwise a
    /// copy this replica created, then someone deleted before a reconcile read the cache,
    /// would read as present (its absence looks like the create not seen yet) until the entry
    /// expired.
    pub fn observe(&self, key: &K, seen: &Version) {
        let mut state = self.lock();
        let replaced = |e: &Entry<T>| e.superseded.contains(seen);
        if state.entries.get(key).is_some_and(|e| !replaced(e)) {
            state.entries.remove(key);
        }
    }

    /// `known` (an object this replica holds: one it read or wrote, not the cache's) as this
    /// replica's writes on top of it left it. Unlike [`resolve`](Self::resolve) it never drops
    /// the entry: `known` may be this replica's own last write, which says nothing of whether
    /// the cache caught up, and dropping it would let the next read of a lagging cache answer
    /// with a version this replica already replaced (a write on it is refused with a 409).
    pub fn newest(&self, key: &K, known: T) -> T {
        let state = self.lock();
        let fresh = |e: &&Entry<T>| e.at.elapsed() < self.expiry;
        match state.entries.get(key).filter(fresh) {
            Some(e) if e.superseded.contains(&known.version()) => e.ours.clone().unwrap_or(known),
            _ => known,
        }
    }

    /// Objects this replica created (and has not deleted since) for which `keep` is true,
    /// with their keys: `keep` tells, for example, whether the cache still lacks them.
    pub fn created(&self, keep: impl Fn(&K, &T) -> bool) -> Vec<(K, T)> {
        self.lock()
            .entries
            .iter()
            .filter(|(_, e)| e.superseded.first().is_some_and(|v| v.is(ABSENT)))
            .filter(|(_, e)| e.at.elapsed() < self.expiry)
            .filter_map(|(k, e)| {
                let ours = e.ours.as_ref().filter(|t| keep(k, t))?;
                Some((k.clone(), ours.clone()))
            })
            .collect()
    }

    /// Drops what is known of an object that is gone.
    pub fn forget(&self, key: &K) {
        self.lock().entries.remove(key);
    }

    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, State<K, T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn version_of<T: Versioned>(object: &Option<T>) -> Version {
    object
        .as_ref()
        .map_or_else(Version::absent, Versioned::version)
}

impl CopyWrites {
    /// Copies of `owner` this replica created that the cache does not hold at all yet, with
    /// their keys.
    pub fn created_unseen(
        &self,
        owner: &Owner,
        in_cache: impl Fn(SourceKind, &ObjectKey) -> bool,
    ) -> Vec<(ObjectKey, CopyInfo)> {
        let created =
            self.created(|k, c| c.owner.as_deref() == Some(owner) && !in_cache(k.kind, &k.object));
        created.into_iter().map(|(k, c)| (k.object, c)).collect()
    }

    /// Observes an event of the copy watch of `kind` ([`OwnWrites::observe`]); `previous` is
    /// what the cache held of the object before it.
    pub fn observe_event<K: Resource>(
        &self,
        kind: SourceKind,
        event: &Change<K>,
        previous: Option<&CopyInfo>,
    ) {
        if self.is_empty() {
            return;
        }
        let (object, seen) = match (event, previous) {
            (Change::Listed(o) | Change::Applied(o), _) => {
                (o, Version::new(o.metadata().resource_version()))
            }
            (Change::Deleted(o), Some(held)) => (o, held.resource_version.clone()),
            _ => return,
        };
        let meta = object.metadata();
        self.observe(&CopyKey::new(kind, meta.namespace(), meta.name()), &seen);
    }
}

#[cfg(test)]
mod tests;
