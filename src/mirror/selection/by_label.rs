//! Which Mirrors a namespace's labels concern: an index from the label keys and values each
//! Mirror's selector names to that Mirror, so a Namespace event evaluates only the selectors
//! its labels can change the answer of, and a relabel of keys no selector names evaluates none.
//!
//! A requirement on key `k` changes its answer only in known ways:
//! - `k=v` (`matchLabels`), `k in (…)` and `k notin (…)` only when the value of `k` becomes or
//!   stops being one of the listed values: they are indexed under each `(k, value)`;
//! - `exists` and `!k` (`DoesNotExist`) only when `k` appears or disappears: indexed under `k`.
//!
//! A namespace that becomes selectable (created, no longer excluded or terminating) can only be
//! chosen by a Mirror with a positive requirement it satisfies (`k=v`, `in`, `exists`): these
//! anchor a Mirror, in an index of their own. A Mirror with none (`{}`, and selectors made only
//! of `notin` and `!k`, which match on absence) may choose any namespace: it is `unanchored`.

use crate::mirror::namespace::NamespaceInfo;
use crate::mirror::types::LabelSelector;
use crate::runtime::ObjectKey;
use std::collections::{BTreeSet, HashMap, HashSet};

/// The index; Mirrors with an absent selector select nothing and are not in it.
#[derive(Debug, Default)]
pub struct MirrorsByLabel {
    /// Every requirement, for label changes.
    named: Keys,
    /// The positive requirements only, for namespaces becoming selectable.
    anchors: Keys,
    unanchored: HashSet<ObjectKey>,
}

/// Mirrors by label key and value, and by label key alone.
#[derive(Debug, Default)]
struct Keys {
    by_value: HashMap<String, HashMap<String, HashSet<ObjectKey>>>,
    by_presence: HashMap<String, HashSet<ObjectKey>>,
}

/// Where one selector's requirements are indexed: by `(key, value)` or by key.
#[derive(Default)]
struct Entries<'a> {
    values: Vec<(&'a str, &'a str)>,
    presence: Vec<&'a str>,
}

/// Every requirement of `selector`, and its positive ones.
fn entries(selector: &LabelSelector) -> (Entries<'_>, Entries<'_>) {
    let (mut named, mut anchors) = (Entries::default(), Entries::default());
    for (key, value) in &selector.match_labels {
        named.values.push((key, value));
        anchors.values.push((key, value));
    }
    for req in &selector.match_expressions {
        let values = req.values.iter().map(|v| (req.key.as_str(), v.as_str()));
        match req.operator.as_str() {
            "In" => {
                named.values.extend(values.clone());
                anchors.values.extend(values);
            }
            "NotIn" => named.values.extend(values),
            "DoesNotExist" => named.presence.push(&req.key),
            // Exists; an unknown operator matches nothing, so anchoring it by its key only
            // spares evaluating it for namespaces without the key.
            _ => {
                named.presence.push(&req.key);
                anchors.presence.push(&req.key);
            }
        }
    }
    (named, anchors)
}

impl Keys {
    fn add(&mut self, mirror: &ObjectKey, entries: &Entries) {
        for &(key, value) in &entries.values {
            let by_value = self.by_value.entry(key.to_owned()).or_default();
            let mirrors = by_value.entry(value.to_owned()).or_default();
            mirrors.insert(mirror.clone());
        }
        for &key in &entries.presence {
            let mirrors = self.by_presence.entry(key.to_owned()).or_default();
            mirrors.insert(mirror.clone());
        }
    }

    fn remove(&mut self, mirror: &ObjectKey, entries: &Entries) {
        for &(key, value) in &entries.values {
            let Some(by_value) = self.by_value.get_mut(key) else {
                continue;
            };
            if let Some(mirrors) = by_value.get_mut(value) {
                mirrors.remove(mirror);
                if mirrors.is_empty() {
                    by_value.remove(value);
                }
            }
            if by_value.is_empty() {
                self.by_value.remove(key);
            }
        }
        for &key in &entries.presence {
            if let Some(mirrors) = self.by_presence.get_mut(key) {
                mirrors.remove(mirror);
                if mirrors.is_empty() {
                    self.by_presence.remove(key);
                }
            }
        }
    }

    fn with_value(&self, key: &str, value: Option<&str>) -> impl Iterator<Item = &ObjectKey> {
        let mirrors = value.and_then(|v| self.by_value.get(key)?.get(v));
        mirrors.into_iter().flatten()
    }

    fn with_key(&self, key: &str) -> impl Iterator<Item = &ObjectKey> {
        self.by_presence.get(key).into_iter().flatten()
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.by_value.is_empty() && self.by_presence.is_empty()
    }
}

impl MirrorsByLabel {
    pub fn add(&mut self, mirror: &ObjectKey, selector: Option<&LabelSelector>) {
        let Some(selector) = selector else { return };
        let (named, anchors) = entries(selector);
        self.named.add(mirror, &named);
        self.anchors.add(mirror, &anchors);
        if anchors.values.is_empty() && anchors.presence.is_empty() {
            self.unanchored.insert(mirror.clone());
        }
    }

    /// Undoes [`MirrorsByLabel::add`] of the same selector.
    pub fn remove(&mut self, mirror: &ObjectKey, selector: Option<&LabelSelector>) {
        let Some(selector) = selector else { return };
        let (named, anchors) = entries(selector);
        self.named.remove(mirror, &named);
        self.anchors.remove(mirror, &anchors);
        self.unanchored.remove(mirror);
    }

    /// Every Mirror that may choose `ns`, and some that will not: the ones to evaluate when it
    /// becomes selectable, or whose selections to drop it from when it stops being.
    pub fn may_choose(&self, ns: &NamespaceInfo) -> BTreeSet<&ObjectKey> {
        let mut mirrors: BTreeSet<&ObjectKey> = self.unanchored.iter().collect();
        for (key, value) in ns.labels() {
            mirrors.extend(self.anchors.with_value(key, Some(value)));
            mirrors.extend(self.anchors.with_key(key));
        }
        mirrors
    }

    /// The Mirrors whose answer for a namespace may differ between its labels `before` and
    /// `after`: those naming a key whose value changed, with that value before or after.
    pub fn concerned_by(
        &self,
        before: &NamespaceInfo,
        after: &NamespaceInfo,
    ) -> BTreeSet<&ObjectKey> {
        let mut mirrors = BTreeSet::new();
        for (key, was, is) in changed_labels(before, after) {
            mirrors.extend(self.named.with_value(key, was));
            mirrors.extend(self.named.with_value(key, is));
            if was.is_none() || is.is_none() {
                mirrors.extend(self.named.with_key(key));
            }
        }
        mirrors
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.named.is_empty() && self.anchors.is_empty() && self.unanchored.is_empty()
    }
}

/// Each key whose value differs, with its value before and after (`None`: absent).
fn changed_labels<'a>(
    before: &'a NamespaceInfo,
    after: &'a NamespaceInfo,
) -> Vec<(&'a str, Option<&'a str>, Option<&'a str>)> {
    let mut changed: Vec<_> = before
        .labels()
        .filter(|(k, v)| after.label(k) != Some(v))
        .map(|(k, v)| (k, Some(v), after.label(k)))
        .collect();
    let added = after.labels().filter(|(k, _)| before.label(k).is_none());
    changed.extend(added.map(|(k, v)| (k, None, Some(v))));
    changed
}

#[cfg(test)]
mod tests;
