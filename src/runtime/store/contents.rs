//! What a store holds: the projections by key, the secondary index, and during a relist what
//! the relist has not confirmed yet.
//!
//! A relist arrives object by object, so the store cannot be rebuilt beside the old one and
//! swapped in at the end without holding the whole list at once. Instead the old projections
//! move to `unconfirmed` when the relist begins, each listed object takes its own back, and what
//! is left when the relist completes is what went away while the watch was down. Until then a
//! reader still finds every object known before, so nothing looks deleted half-way.

use super::ObjectKey;
use super::index::Index;
use std::collections::HashMap;
use std::sync::Arc;

/// The index values of a projection (for example the owner a copy names).
pub(super) type IndexFn<P> = Arc<dyn Fn(&P) -> Vec<String> + Send + Sync>;

pub(super) struct Contents<P> {
    objects: HashMap<ObjectKey, P>,
    /// During a relist: what was known before it and has not been listed again yet.
    unconfirmed: HashMap<ObjectKey, P>,
    pub(super) index: Index,
}

impl<P> Default for Contents<P> {
    fn default() -> Self {
        Contents {
            objects: HashMap::new(),
            unconfirmed: HashMap::new(),
            index: Index::default(),
        }
    }
}

impl<P> Contents<P> {
    /// Every object known becomes unconfirmed until listed again. A relist that begins again
    /// part-way starts over: what the abandoned one confirmed must be listed again too.
    pub(super) fn begin_relist(&mut self) {
        let known = std::mem::take(&mut self.objects);
        if self.unconfirmed.is_empty() {
            self.unconfirmed = known;
        } else {
            self.unconfirmed.extend(known);
        }
    }

    /// Drops what the completed relist did not list, and returns how many went.
    pub(super) fn end_relist(&mut self, index: Option<&IndexFn<P>>) -> usize {
        let gone = std::mem::take(&mut self.unconfirmed);
        let count = gone.len();
        for (key, old) in gone {
            self.unindex(index, &key, &old);
        }
        count
    }

    /// Stores `value` under `key`; returns the projection it replaces.
    pub(super) fn insert(
        &mut self,
        index: Option<&IndexFn<P>>,
        key: ObjectKey,
        value: P,
    ) -> Option<P> {
        if let Some(index) = index {
            for v in index(&value) {
                self.index.insert(v, &key);
            }
        }
        let previous = match self.objects.insert(key.clone(), value) {
            Some(old) => Some(old),
            None => self.unconfirmed.remove(&key),
        };
        if let Some(old) = &previous {
            self.unindex(index, &key, old);
        }
        previous
    }

    /// Removes `key`; returns its projection.
    pub(super) fn remove(&mut self, index: Option<&IndexFn<P>>, key: &ObjectKey) -> Option<P> {
        let old = self
            .objects
            .remove(key)
            .or_else(|| self.unconfirmed.remove(key))?;
        self.unindex(index, key, &old);
        Some(old)
    }

    pub(super) fn get(&self, key: &ObjectKey) -> Option<&P> {
        self.objects.get(key).or_else(|| self.unconfirmed.get(key))
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &P)> {
        self.objects.iter().chain(self.unconfirmed.iter())
    }

    pub(super) fn len(&self) -> usize {
        self.objects.len() + self.unconfirmed.len()
    }

    /// Drops `key` from the index values of `old` that its current projection no longer has.
    fn unindex(&mut self, index: Option<&IndexFn<P>>, key: &ObjectKey, old: &P) {
        let Some(index) = index else { return };
        let current = self.get(key).map(|p| index(p)).unwrap_or_default();
        for v in index(old) {
            if current.contains(&v) {
                continue;
            }
            self.index.remove(&v, key);
        }
    }
}
