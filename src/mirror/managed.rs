//! Which labels and annotations of a copy are skiff's, recorded on the copy itself.
//!
//! A copy may carry labels and annotations that others put there (a policy engine, a backup
//! tool, a person); skiff must change only those it set. It remembers them in two annotations
//! of the copy, `skiff.dev/managed-labels` and `skiff.dev/managed-annotations`, comma lists of
//! keys (label and annotation keys never contain a comma). When the Mirror stops setting a key,
//! skiff removes it from the copy because the record lists it; a key it never recorded is never
//! removed. A record on the copy, rather than server-side apply's field ownership, keeps the
//! copy cache free of managedFields and the writes plain patches; see the README.
//!
//! The copy cache keeps the record's text (only for copies that have one), and hashes the
//! recorded keys with their values, so a hand edit of a managed label shows as drift while a
//! label someone else added does not.

use crate::kube::api::ObjectMeta;
use serde::Serialize;
use std::collections::BTreeMap;

pub const MANAGED_LABELS_ANNOTATION: &str = "skiff.dev/managed-labels";
pub const MANAGED_ANNOTATIONS_ANNOTATION: &str = "skiff.dev/managed-annotations";

/// The keys skiff records as set on a copy, as the record's text: the labels, a newline, the
/// annotations (each a comma list). Kept boxed in the copy cache, only when not empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record(Box<str>);

impl Record {
    /// The record `meta` carries, if any.
    pub fn of(meta: &ObjectMeta) -> Option<Record> {
        let labels = meta.annotations.get(MANAGED_LABELS_ANNOTATION);
        let annotations = meta.annotations.get(MANAGED_ANNOTATIONS_ANNOTATION);
        if labels.is_none() && annotations.is_none() {
            return None;
        }
        let text = format!(
            "{}\n{}",
            labels.map_or("", String::as_str),
            annotations.map_or("", String::as_str)
        );
        Some(Record(text.into_boxed_str()))
    }

    pub fn labels(&self) -> impl Iterator<Item = &str> {
        keys(self.0.split('\n').next().unwrap_or_default())
    }

    pub fn annotations(&self) -> impl Iterator<Item = &str> {
        keys(self.0.split('\n').nth(1).unwrap_or_default())
    }
}

fn keys(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|k| !k.is_empty())
}

/// The managed labels and annotations of a copy, key to value: what the hash covers. A value
/// is `None` when the record lists a key the copy no longer has.
#[derive(Debug, Default, PartialEq, Eq, Serialize)]
pub struct Managed<'a> {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<&'a str, Option<&'a str>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<&'a str, Option<&'a str>>,
}

impl<'a> Managed<'a> {
    /// What a copy with `meta` holds of the keys its `record` lists.
    pub fn held(meta: &'a ObjectMeta, record: &'a Record) -> Managed<'a> {
        let read = |map: &'a BTreeMap<String, String>, keys: &mut dyn Iterator<Item = &'a str>| {
            entries(keys.map(|k| (k, map.get(k).map(String::as_str))))
        };
        Managed {
            labels: read(&meta.labels, &mut record.labels()),
            annotations: read(&meta.annotations, &mut record.annotations()),
        }
    }

    /// What a copy should hold: every key set to its value.
    pub fn wanted(
        labels: &'a BTreeMap<String, String>,
        annotations: &'a BTreeMap<String, String>,
    ) -> Managed<'a> {
        let all = |map: &'a BTreeMap<String, String>| {
            entries(map.iter().map(|(k, v)| (k.as_str(), Some(v.as_str()))))
        };
        Managed {
            labels: all(labels),
            annotations: all(annotations),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.annotations.is_empty()
    }

    /// `Some(self)` unless empty: an empty record hashes as no record at all.
    pub fn if_any(&self) -> Option<&Self> {
        (!self.is_empty()).then_some(self)
    }
}

/// A map of `pairs`, built by insertion: collecting one would compile the standard library's
/// stable sort once more for this key, value and iterator type (about 4 KB each).
fn entries<'a>(
    pairs: impl Iterator<Item = (&'a str, Option<&'a str>)>,
) -> BTreeMap<&'a str, Option<&'a str>> {
    let mut map = BTreeMap::new();
    for (key, value) in pairs {
        map.insert(key, value);
    }
    map
}

/// The record's annotations for a copy carrying `labels` and `annotations` from skiff (a key
/// maps to `None` when there is nothing to record, so a patch removes it).
pub fn record_annotations(
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> [(&'static str, Option<String>); 2] {
    let list = |map: &BTreeMap<String, String>| {
        (!map.is_empty()).then(|| map.keys().cloned().collect::<Vec<_>>().join(","))
    };
    [
        (MANAGED_LABELS_ANNOTATION, list(labels)),
        (MANAGED_ANNOTATIONS_ANNOTATION, list(annotations)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::fixtures::map;

    fn recorded(labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> ObjectMeta {
        let (labels, annotations) = (map(labels), map(annotations));
        let mut meta = ObjectMeta {
            labels: labels.clone(),
            annotations: annotations.clone(),
            ..ObjectMeta::default()
        };
        for (key, value) in record_annotations(&labels, &annotations) {
            if let Some(value) = value {
                meta.annotations.insert(key.to_owned(), value);
            }
        }
        meta
    }

    #[test]
    fn a_copy_without_a_record_has_none() {
        assert_eq!(Record::of(&ObjectMeta::default()), None);
    }

    #[test]
    fn what_a_copy_holds_of_its_record_equals_what_was_wanted() {
        let (labels, annotations) = (map(&[("a/b", "1"), ("c", "2")]), map(&[("d", "3")]));
        let meta = recorded(&[("a/b", "1"), ("c", "2")], &[("d", "3")]);
        let record = Record::of(&meta).expect("a record");
        assert_eq!(record.labels().collect::<Vec<_>>(), ["a/b", "c"]);
        assert_eq!(record.annotations().collect::<Vec<_>>(), ["d"]);
        assert_eq!(
            Managed::held(&meta, &record),
            Managed::wanted(&labels, &annotations)
        );
    }

    #[test]
    fn a_label_someone_else_added_is_not_managed_and_a_removed_one_shows() {
        let mut meta = recorded(&[("a", "1")], &[]);
        meta.labels.insert("theirs".into(), "x".into());
        let record = Record::of(&meta).expect("a record");
        let wanted_labels = map(&[("a", "1")]);
        let empty = BTreeMap::new();
        let wanted = Managed::wanted(&wanted_labels, &empty);
        assert_eq!(Managed::held(&meta, &record), wanted);
        let mut edited = meta.clone();
        edited.labels.remove("a");
        assert_ne!(Managed::held(&edited, &record), wanted);
        assert_eq!(Managed::held(&edited, &record).labels["a"], None);
    }

    #[test]
    fn nothing_to_record_removes_the_record() {
        let empty = BTreeMap::new();
        let annotations = record_annotations(&empty, &map(&[("x", "1"), ("y", "2")]));
        assert_eq!(annotations[0], (MANAGED_LABELS_ANNOTATION, None));
        assert_eq!(
            annotations[1],
            (MANAGED_ANNOTATIONS_ANNOTATION, Some("x,y".to_owned()))
        );
        assert!(Managed::wanted(&empty, &empty).if_any().is_none());
    }
}
