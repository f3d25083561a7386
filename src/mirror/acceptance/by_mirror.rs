//! The acceptances by the Mirror they name: the index that makes a consent check a lookup.
//!
//! Kept beside the store rather than as its generic index, because it is the larger part of
//! what an acceptance costs (`benches/acceptances.rs`): the store's index would copy each
//! acceptance's key (two strings) into a set per Mirror. This one keeps the Mirror's name once,
//! shared with every cached acceptance naming it ([`ByMirror::intern`]), and one
//! `namespace/name` string per acceptance. The watch task updates it right after the store
//! ([`ByMirror::follow`]), and rebuilds it from the store when a relist completes, since a
//! relist drops what it did not list without an event per object.

use super::{Accepted, MirrorAcceptance};
use crate::runtime::{Change, ObjectKey, Store};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock};

type Index = HashMap<Arc<str>, HashSet<Box<str>>>;

#[derive(Clone, Default)]
pub struct ByMirror {
    index: Arc<RwLock<Index>>,
}

impl ByMirror {
    /// `from` (`namespace/name` of a Mirror) as the index holds it, so every acceptance naming
    /// one Mirror shares one string.
    pub fn intern(&self, from: &str) -> Arc<str> {
        let index = self.index.read().unwrap_or_else(PoisonError::into_inner);
        match index.get_key_value(from) {
            Some((key, _)) => Arc::clone(key),
            None => Arc::from(from),
        }
    }

    /// The keys of the acceptances naming `from`.
    pub fn keys(&self, from: &str) -> Vec<ObjectKey> {
        let index = self.index.read().unwrap_or_else(PoisonError::into_inner);
        let Some(keys) = index.get(from) else {
            return Vec::new();
        };
        keys.iter()
            .filter_map(|key| key.split_once('/'))
            .map(|(ns, name)| ObjectKey::new(ns, name))
            .collect()
    }

    /// Follows the store through `event`, which replaced or removed `previous`.
    pub fn follow(
        &self,
        store: &Store<MirrorAcceptance, Accepted>,
        event: &Change<MirrorAcceptance>,
        previous: Option<&Accepted>,
    ) {
        let mut index = self.index.write().unwrap_or_else(PoisonError::into_inner);
        match event {
            Change::Listed(a) | Change::Applied(a) | Change::Deleted(a) => {
                let Some(key) = ObjectKey::of(a) else { return };
                let joined = key.to_string();
                if let Some(old) = previous {
                    remove(&mut index, &old.from, &joined);
                }
                let now = store.get(&key.namespace, &key.name);
                if let Some(now) = now.filter(|_| !matches!(event, Change::Deleted(_))) {
                    index.entry(now.from).or_default().insert(joined.into());
                }
            }
            Change::Relisting => {}
            Change::Relisted => {
                index.clear();
                store.scan(|key, a| {
                    let entry = index.entry(Arc::clone(&a.from)).or_default();
                    entry.insert(key.to_string().into());
                });
            }
        }
    }
}

fn remove(index: &mut Index, from: &str, key: &str) {
    if let Some(keys) = index.get_mut(from) {
        keys.remove(key);
        if keys.is_empty() {
            index.remove(from);
        }
    }
}
