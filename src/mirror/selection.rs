//! Which namespaces each Mirror selects, kept up to date event by event.
//!
//! Without it, every Namespace event would have to wake every Mirror and every reconcile
//! would re-evaluate every namespace. Instead a Namespace event evaluates only the Mirrors its
//! change concerns (`by_label`: a relabel of keys no selector names evaluates none) and wakes
//! only those whose answer changed; a Mirror event re-evaluates that Mirror against every
//! namespace, and only when its selector or namespace changed. A reconcile then reads its
//! selection in O(selected).
//!
//! A relist costs O(namespaces + Mirrors × selected), never namespaces × Mirrors: each listed
//! namespace is handled as a single event, the Mirrors a relist brings are computed together in
//! one pass over the namespaces when it completes, and namespaces that went are dropped from
//! each selection then.
//!
//! Both updates run under one lock and each reads the other cache as it is now, so whichever
//! runs second sees both changes: the index never misses an update that raced another.

mod by_label;

use super::namespace::{NamespaceEntry, NamespaceInfo};
use super::namespace_selector::{chooses, effective, eligible, selects};
use super::types::{LabelSelector, Mirror};
use crate::kube::api::Namespace;
use crate::runtime::{Change, ObjectKey, Store};
use by_label::MirrorsByLabel;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// One Mirror's selection and what it was computed from.
#[derive(Debug, Clone, Default)]
struct Selection {
    mirror_namespace: String,
    selector: Option<LabelSelector>,
    namespaces: BTreeSet<String>,
    /// Listed by a Mirror relist still under way: computed when it completes.
    pending: bool,
}

impl Selection {
    fn for_mirror(mirror: &Mirror) -> Selection {
        Selection {
            mirror_namespace: mirror.metadata.namespace().to_owned(),
            selector: effective(mirror),
            namespaces: BTreeSet::new(),
            pending: false,
        }
    }

    fn computed_for(&self, mirror: &Mirror) -> bool {
        self.mirror_namespace == mirror.metadata.namespace() && self.selector == effective(mirror)
    }

    fn selects(&self, ns: &NamespaceInfo) -> bool {
        selects(self.selector.as_ref(), &self.mirror_namespace, ns)
    }

    fn chooses(&self, ns: &NamespaceInfo) -> bool {
        chooses(self.selector.as_ref(), &self.mirror_namespace, ns)
    }

    /// Records whether this Mirror selects `name`; true when that changed.
    fn set(&mut self, name: &str, selected: bool) -> bool {
        if selected {
            !self.namespaces.contains(name) && self.namespaces.insert(name.to_owned())
        } else {
            self.namespaces.remove(name)
        }
    }
}

/// The selections and the label index over them, under one lock.
#[derive(Default)]
struct Index {
    selections: HashMap<ObjectKey, Selection>,
    by_label: MirrorsByLabel,
}

impl Index {
    fn insert(&mut self, key: ObjectKey, selection: Selection) {
        self.remove(&key);
        self.by_label.add(&key, selection.selector.as_ref());
        self.selections.insert(key, selection);
    }

    fn remove(&mut self, key: &ObjectKey) {
        if let Some(old) = self.selections.remove(key) {
            self.by_label.remove(key, old.selector.as_ref());
        }
    }

    /// A namespace went from `before` to `after` (`None`: absent); notes the Mirrors whose
    /// selection changed.
    fn namespace_moved(
        &mut self,
        before: Option<&NamespaceInfo>,
        after: Option<&NamespaceInfo>,
        changed: &mut HashSet<ObjectKey>,
    ) {
        let was = before.filter(|ns| eligible(ns));
        let now = after.filter(|ns| eligible(ns));
        let (concerned, ns, selectable) = match (was, now) {
            (None, None) => return,
            (None, Some(now)) => (self.by_label.may_choose(now), now, true),
            (Some(was), None) => (self.by_label.may_choose(was), was, false),
            (Some(was), Some(now)) => (self.by_label.concerned_by(was, now), now, true),
        };
        for key in concerned {
            let Some(selection) = self.selections.get_mut(key) else {
                continue;
            };
            if selection.pending {
                continue;
            }
            if selection.set(&ns.name, selectable && selection.chooses(ns)) {
                changed.insert(key.clone());
            }
        }
    }
}

/// Whether a Mirror is still cached, by its key: a Mirror relist drops the selections of those
/// that are not.
type Known = Arc<dyn Fn(&ObjectKey) -> bool + Send + Sync>;

/// The selection index; clones share it.
#[derive(Clone)]
pub struct Selections {
    index: Arc<Mutex<Index>>,
    namespaces: Store<Namespace, NamespaceEntry>,
    known: Known,
}

impl Selections {
    /// The selections of the Mirrors `known` says are cached (local ones, and on a member those
    /// its hub placed), over `namespaces`.
    pub fn new(
        namespaces: &Store<Namespace, NamespaceEntry>,
        known: impl Fn(&ObjectKey) -> bool + Send + Sync + 'static,
    ) -> Selections {
        Selections {
            index: Arc::default(),
            namespaces: namespaces.clone(),
            known: Arc::new(known),
        }
    }

    /// The namespaces `mirror` selects. Computed from the namespace cache when the index has
    /// not caught up with this version of the Mirror yet.
    pub fn of(&self, mirror: &Mirror) -> BTreeSet<String> {
        let Some(key) = ObjectKey::from_meta(&mirror.metadata) else {
            return BTreeSet::new();
        };
        match self.lock().selections.get(&key) {
            Some(s) if s.computed_for(mirror) && !s.pending => s.namespaces.clone(),
            _ => self.compute(mirror).namespaces,
        }
    }

    /// Updates the index for a Namespace event (after the namespace cache has it; `previous`
    /// is what the cache held before) and returns the Mirrors whose selection changed.
    pub fn namespace_changed<'a>(
        &self,
        event: &'a Change<Namespace>,
        previous: Option<&'a NamespaceEntry>,
    ) -> Vec<ObjectKey> {
        let mut index = self.lock();
        let mut changed = HashSet::new();
        let was = |ns: &'a Namespace| previous.map(|e| NamespaceInfo::view(ns.metadata.name(), e));
        match event {
            Change::Listed(ns) | Change::Applied(ns) => {
                let now = NamespaceInfo::of(ns);
                index.namespace_moved(was(ns).as_ref(), Some(&now), &mut changed);
            }
            Change::Deleted(ns) => {
                let last = was(ns).unwrap_or_else(|| NamespaceInfo::of(ns));
                index.namespace_moved(Some(&last), None, &mut changed);
            }
            Change::Relisting => {}
            Change::Relisted => self.drop_gone_namespaces(&mut index, &mut changed),
        }
        changed.into_iter().collect()
    }

    /// Updates the index for a Mirror event (after the Mirror cache has it): a Mirror whose
    /// selector or namespace changed is re-evaluated against every namespace, at once for a
    /// single event, in one pass for all of a relist when it completes.
    pub fn mirror_changed(&self, event: &Change<Mirror>) {
        match event {
            Change::Applied(m) => self.refresh(m),
            Change::Deleted(m) => {
                if let Some(key) = ObjectKey::from_meta(&m.metadata) {
                    self.lock().remove(&key);
                }
            }
            Change::Relisting => {}
            Change::Listed(m) => self.mark_pending(m),
            Change::Relisted => {
                let mut index = self.lock();
                let gone: Vec<ObjectKey> = (index.selections.keys())
                    .filter(|key| !(self.known)(key))
                    .cloned()
                    .collect();
                for key in &gone {
                    index.remove(key);
                }
                self.compute_pending(&mut index);
            }
        }
    }

    fn refresh(&self, mirror: &Mirror) {
        let Some(key) = ObjectKey::from_meta(&mirror.metadata) else {
            return;
        };
        let mut index = self.lock();
        if let Some(s) = index.selections.get(&key)
            && s.computed_for(mirror)
            && !s.pending
        {
            return;
        }
        // Computed under the lock, so a Namespace event cannot slip in between.
        let selection = self.compute(mirror);
        index.insert(key, selection);
    }

    /// A Mirror listed by a relist: unchanged, it keeps its selection; otherwise its selection
    /// is computed when the relist completes.
    fn mark_pending(&self, mirror: &Mirror) {
        let Some(key) = ObjectKey::from_meta(&mirror.metadata) else {
            return;
        };
        let mut index = self.lock();
        if index
            .selections
            .get(&key)
            .is_some_and(|s| s.computed_for(mirror))
        {
            return;
        }
        let mut selection = Selection::for_mirror(mirror);
        selection.pending = true;
        index.insert(key, selection);
    }

    /// Computes every pending selection in one pass over the namespaces, evaluating for each
    /// namespace only the Mirrors that may choose it.
    fn compute_pending(&self, index: &mut Index) {
        let pending: HashSet<ObjectKey> = index
            .selections
            .iter()
            .filter(|(_, s)| s.pending)
            .map(|(k, _)| k.clone())
            .collect();
        if pending.is_empty() {
            return;
        }
        let Index {
            selections,
            by_label,
        } = index;
        self.namespaces.scan(|name, entry| {
            let ns = &NamespaceInfo::view(&name.name, entry);
            if !eligible(ns) {
                return;
            }
            for key in by_label.may_choose(ns) {
                if !pending.contains(key) {
                    continue;
                }
                if let Some(selection) = selections.get_mut(key)
                    && selection.chooses(ns)
                {
                    selection.namespaces.insert(name.name.to_string());
                }
            }
        });
        for key in &pending {
            if let Some(selection) = selections.get_mut(key) {
                selection.pending = false;
            }
        }
    }

    /// At the end of a namespace relist: drops the namespaces it did not list.
    fn drop_gone_namespaces(&self, index: &mut Index, changed: &mut HashSet<ObjectKey>) {
        for (key, selection) in index.selections.iter_mut() {
            let before = selection.namespaces.len();
            selection
                .namespaces
                .retain(|name| self.namespaces.contains(&ObjectKey::new("", name.as_str())));
            if selection.namespaces.len() != before {
                changed.insert(key.clone());
            }
        }
    }

    fn compute(&self, mirror: &Mirror) -> Selection {
        let mut selection = Selection::for_mirror(mirror);
        if selection.selector.is_some() {
            let mut found = BTreeSet::new();
            self.namespaces.scan(|key, entry| {
                if selection.selects(&NamespaceInfo::view(&key.name, entry)) {
                    found.insert(key.name.to_string());
                }
            });
            selection.namespaces = found;
        }
        selection
    }

    fn lock(&self) -> MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests;
