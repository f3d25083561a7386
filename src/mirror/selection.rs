//! Which namespaces each Mirror selects, kept up to date event by event.
//!
//! Without it, every Namespace event would have to wake every Mirror and every reconcile
//! would re-evaluate every namespace: O(Mirrors² × namespaces) for a burst of events that
//! mostly change nothing. Instead a Namespace event evaluates each Mirror's selector against
//! that one namespace and wakes only the Mirrors whose answer changed; a Mirror event
//! re-evaluates that Mirror against every namespace, and only when its selector or namespace
//! changed. A reconcile then reads its selection in O(selected).
//!
//! Both updates run under one lock and each reads the other cache as it is now, so whichever
//! runs second sees both changes: the index never misses an update that raced another.

use super::selector::{NamespaceInfo, chooses, eligible, selects};
use super::types::{LabelSelector, Mirror};
use crate::kube::api::Namespace;
use crate::runtime::{ObjectKey, Store, WatcherEvent};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// One Mirror's selection and what it was computed from.
#[derive(Debug, Clone, Default)]
struct Selection {
    mirror_namespace: String,
    selector: Option<LabelSelector>,
    namespaces: BTreeSet<String>,
}

impl Selection {
    fn computed_for(&self, mirror: &Mirror) -> bool {
        self.mirror_namespace == mirror.metadata.namespace()
            && self.selector == mirror.spec.namespace_selector
    }

    fn selects(&self, ns: &NamespaceInfo) -> bool {
        selects(self.selector.as_ref(), &self.mirror_namespace, ns)
    }

    fn chooses(&self, ns: &NamespaceInfo) -> bool {
        chooses(self.selector.as_ref(), &self.mirror_namespace, ns)
    }
}

/// The selection index; clones share it.
#[derive(Clone)]
pub struct Selections {
    index: Arc<Mutex<HashMap<ObjectKey, Selection>>>,
    namespaces: Store<Namespace, NamespaceInfo>,
}

impl Selections {
    pub fn new(namespaces: &Store<Namespace, NamespaceInfo>) -> Selections {
        Selections {
            index: Arc::default(),
            namespaces: namespaces.clone(),
        }
    }

    /// The namespaces `mirror` selects. Computed from the namespace cache when the index has
    /// not caught up with this version of the Mirror yet.
    pub fn of(&self, mirror: &Mirror) -> BTreeSet<String> {
        let Some(key) = ObjectKey::from_meta(&mirror.metadata) else {
            return BTreeSet::new();
        };
        match self.lock().get(&key) {
            Some(s) if s.computed_for(mirror) => s.namespaces.clone(),
            _ => self.compute(mirror).namespaces,
        }
    }

    /// Updates the index for a Namespace event (after the namespace cache has it) and returns
    /// the Mirrors whose selection changed.
    pub fn namespace_changed(&self, event: &WatcherEvent<Namespace>) -> Vec<ObjectKey> {
        let mut index = self.lock();
        let mut changed = HashSet::new();
        match event {
            WatcherEvent::Applied(ns) => {
                let info = NamespaceInfo::of(ns);
                update_one(&mut index, &info, true, &mut changed);
            }
            WatcherEvent::Deleted(ns) => {
                let info = NamespaceInfo::of(ns);
                update_one(&mut index, &info, false, &mut changed);
            }
            WatcherEvent::Restarted(_) => {
                let mut present = HashSet::new();
                self.namespaces.scan(|_, info| {
                    present.insert(info.name.clone());
                    update_one(&mut index, info, true, &mut changed);
                });
                for (key, selection) in index.iter_mut() {
                    let before = selection.namespaces.len();
                    selection.namespaces.retain(|ns| present.contains(ns));
                    if selection.namespaces.len() != before {
                        changed.insert(key.clone());
                    }
                }
            }
        }
        changed.into_iter().collect()
    }

    /// Updates the index for a Mirror event (after the Mirror cache has it): a Mirror whose
    /// selector or namespace changed is re-evaluated against every namespace.
    pub fn mirror_changed(&self, event: &WatcherEvent<Mirror>) {
        match event {
            WatcherEvent::Applied(m) => self.refresh(m),
            WatcherEvent::Deleted(m) => {
                if let Some(key) = ObjectKey::from_meta(&m.metadata) {
                    self.lock().remove(&key);
                }
            }
            WatcherEvent::Restarted(mirrors) => {
                let keys: HashSet<ObjectKey> = mirrors.iter().filter_map(ObjectKey::of).collect();
                self.lock().retain(|k, _| keys.contains(k));
                for m in mirrors {
                    self.refresh(m);
                }
            }
        }
    }

    fn refresh(&self, mirror: &Mirror) {
        let Some(key) = ObjectKey::from_meta(&mirror.metadata) else {
            return;
        };
        let mut index = self.lock();
        if index.get(&key).is_some_and(|s| s.computed_for(mirror)) {
            return;
        }
        // Computed under the lock, so a Namespace event cannot slip in between.
        let selection = self.compute(mirror);
        index.insert(key, selection);
    }

    fn compute(&self, mirror: &Mirror) -> Selection {
        let mut selection = Selection {
            mirror_namespace: mirror.metadata.namespace().to_owned(),
            selector: mirror.spec.namespace_selector.clone(),
            namespaces: BTreeSet::new(),
        };
        if selection.selector.is_some() {
            let mut found = BTreeSet::new();
            self.namespaces.scan(|_, info| {
                if selection.selects(info) {
                    found.insert(info.name.clone());
                }
            });
            selection.namespaces = found;
        }
        selection
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<ObjectKey, Selection>> {
        self.index.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Sets whether each Mirror selects `ns` (`exists` false: it is gone), noting the Mirrors
/// whose answer changed.
fn update_one(
    index: &mut HashMap<ObjectKey, Selection>,
    ns: &NamespaceInfo,
    exists: bool,
    changed: &mut HashSet<ObjectKey>,
) {
    let eligible = exists && eligible(ns);
    for (key, selection) in index.iter_mut() {
        let now = eligible && selection.chooses(ns);
        let was = selection.namespaces.contains(&ns.name);
        if now == was {
            continue;
        }
        if now {
            selection.namespaces.insert(ns.name.clone());
        } else {
            selection.namespaces.remove(&ns.name);
        }
        changed.insert(key.clone());
    }
}

#[cfg(test)]
mod tests;
