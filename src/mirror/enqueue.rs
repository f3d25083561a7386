//! Which Mirrors each watch event concerns: the keys a Namespace, source, copy or Mirror event
//! puts on the work queue.
//!
//! Single events are mapped through the caches' indexes ([`super::index`]), so their cost is
//! the Mirrors they concern. The end of a relist or an object leaving a label selection tells
//! less than a single event does (the object that went is in no list, or arrives stripped of
//! the labels naming its Mirror), so those enqueue more widely: a reconcile with nothing to do
//! writes nothing. Namespace events are mapped by [`Selections`](super::selection::Selections).

use super::copy::owner_of;
use super::index::{mirrors_reading, mirrors_writing};
use super::types::{Mirror, SourceKind};
use crate::kube::api::Resource;
use crate::runtime::{Change, ObjectKey, Store, object_keys};
use std::collections::BTreeSet;

/// The Mirrors a Mirror event concerns. At the end of a relist, every Mirror a cached copy
/// names too (`owners`): a Mirror that vanished while the watch was down is in no list, and
/// only its leftover copies remember it.
pub fn mirror_keys(
    owners: impl Fn() -> Vec<ObjectKey> + Send + 'static,
) -> impl Fn(&Change<Mirror>) -> Vec<ObjectKey> + Send + 'static {
    move |event| {
        let mut keys: BTreeSet<ObjectKey> = object_keys(event).into_iter().collect();
        if let Change::Relisted = event {
            keys.extend(owners());
        }
        keys.into_iter().collect()
    }
}

/// The Mirrors a copy event concerns: its owner, and
/// - for a deleted copy, every Mirror of that kind and target name: one that lost the name to
///   this copy may now write its own;
/// - every Mirror when the event cannot say whose copy went: at the end of a relist (a copy
///   deleted while the watch was down is in no list), or for a copy that left the label
///   selection (its labels removed by hand: the watch reports it deleted, unlabelled, naming no
///   Mirror).
pub fn copy_owners<K: Resource>(
    mirrors: Store<Mirror, Mirror>,
    kind: SourceKind,
) -> impl Fn(&Change<K>) -> Vec<ObjectKey> + Send + 'static {
    move |event| {
        let mut keys: BTreeSet<ObjectKey> = owners(event).into_iter().collect();
        match event {
            Change::Relisted => keys.extend(mirrors.keys()),
            Change::Listed(o) | Change::Applied(o) | Change::Deleted(o)
                if owner_of(o.metadata()).is_none() =>
            {
                keys.extend(mirrors.keys())
            }
            Change::Deleted(o) => {
                keys.extend(mirrors_writing(&mirrors, kind, o.metadata().name()));
            }
            Change::Relisting | Change::Listed(_) | Change::Applied(_) => {}
        }
        keys.into_iter().collect()
    }
}

/// The Mirror named by the labels of the copy in an event.
fn owners<K: Resource>(event: &Change<K>) -> Vec<ObjectKey> {
    match event {
        Change::Listed(o) | Change::Applied(o) | Change::Deleted(o) => {
            let owner = owner_of(o.metadata());
            owner
                .map(|o| ObjectKey::new(o.namespace, o.name))
                .into_iter()
                .collect()
        }
        Change::Relisting | Change::Relisted => Vec::new(),
    }
}

/// The Mirrors whose source is the object in an event (every Mirror at the end of a relist).
pub fn mirrors_of_source<K: Resource>(
    mirrors: Store<Mirror, Mirror>,
    kind: SourceKind,
) -> impl Fn(&Change<K>) -> Vec<ObjectKey> + Send + 'static {
    move |event| match event {
        Change::Relisted => mirrors.keys(),
        Change::Applied(o) | Change::Deleted(o) => {
            let (ns, name) = (o.metadata().namespace(), o.metadata().name());
            mirrors_reading(&mirrors, kind, ns, name)
        }
        Change::Relisting | Change::Listed(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::{ConfigMap, ObjectMeta};
    use crate::mirror::copy::copy_meta;
    use crate::mirror::index::mirror_store;

    #[test]
    fn copy_events_enqueue_their_owning_mirror_once() {
        let cm = copy_of("m");
        let mut other = cm.clone();
        other.metadata.namespace = Some("b".into());
        let keys: BTreeSet<ObjectKey> =
            Change::relist(vec![cm.clone(), other, ConfigMap::default()])
                .iter()
                .flat_map(owners)
                .collect();
        assert_eq!(keys, BTreeSet::from([ObjectKey::new("src", "m")]));
        assert_eq!(
            owners(&Change::Deleted(cm)),
            vec![ObjectKey::new("src", "m")]
        );
    }

    #[test]
    fn source_events_enqueue_the_mirrors_reading_that_source() {
        let mirrors = mirrors(vec![
            mirror("src", "m"),
            mirror("other", "m2"),
            secret_mirror("s"),
        ]);
        let map = mirrors_of_source::<ConfigMap>(mirrors, SourceKind::ConfigMap);
        let source = unlabelled("src");
        assert_eq!(
            map(&Change::Applied(source)),
            vec![ObjectKey::new("src", "m")]
        );
    }

    #[test]
    fn a_copy_relist_enqueues_a_mirror_whose_last_copy_vanished() {
        let mirrors = mirrors(vec![mirror("src", "m")]);
        let map = copy_owners::<ConfigMap>(mirrors, SourceKind::ConfigMap);
        assert_eq!(map(&Change::Relisting), vec![]);
        assert_eq!(map(&Change::Relisted), vec![ObjectKey::new("src", "m")]);
    }

    #[test]
    fn a_copy_leaving_the_selection_unlabelled_enqueues_every_mirror() {
        let mirrors = mirrors(vec![mirror("src", "m"), mirror("src", "n")]);
        let map = copy_owners::<ConfigMap>(mirrors, SourceKind::ConfigMap);
        let stripped = unlabelled("a");
        let mut keys = map(&Change::Deleted(stripped));
        keys.sort();
        assert_eq!(
            keys,
            [ObjectKey::new("src", "m"), ObjectKey::new("src", "n")]
        );
        let labelled = copy_of("m");
        assert_eq!(
            map(&Change::Applied(labelled)),
            [ObjectKey::new("src", "m")]
        );
    }

    #[test]
    fn a_deleted_copy_enqueues_the_mirrors_that_want_its_name() {
        let mut renamed = mirror("src", "renamed");
        renamed.spec.target_name = Some("other".into());
        let mirrors = mirrors(vec![
            mirror("src", "winner"),
            mirror("src", "loser"),
            renamed,
            secret_mirror("secret"),
        ]);
        let map = copy_owners::<ConfigMap>(mirrors, SourceKind::ConfigMap);
        let copy = copy_of("winner");
        assert_eq!(
            map(&Change::Applied(copy.clone())),
            [ObjectKey::new("src", "winner")]
        );
        assert_eq!(
            map(&Change::Deleted(copy)),
            [
                ObjectKey::new("src", "loser"),
                ObjectKey::new("src", "winner")
            ]
        );
    }

    #[test]
    fn a_deleted_copy_wakes_the_mirrors_whose_copies_are_of_its_kind() {
        let mut published = secret_mirror("published");
        published.spec.target = Some(crate::mirror::types::TargetSpec {
            kind: Some(SourceKind::ConfigMap),
            ..Default::default()
        });
        let mirrors = mirrors(vec![published, secret_mirror("secret")]);
        let configmaps = copy_owners::<ConfigMap>(mirrors.clone(), SourceKind::ConfigMap);
        let gone = Change::Deleted(copy_of("winner"));
        assert_eq!(
            configmaps(&gone),
            [
                ObjectKey::new("src", "published"),
                ObjectKey::new("src", "winner")
            ]
        );
        let secrets = mirrors_of_source::<ConfigMap>(mirrors, SourceKind::Secret);
        let source = Change::Applied(unlabelled("src"));
        let mut reading = secrets(&source);
        reading.sort();
        assert_eq!(
            reading,
            [
                ObjectKey::new("src", "published"),
                ObjectKey::new("src", "secret")
            ],
            "both read the Secret"
        );
    }

    #[test]
    fn a_mirror_relist_enqueues_mirrors_only_leftover_copies_remember() {
        let map = mirror_keys(|| vec![ObjectKey::new("src", "gone")]);
        let relist = Change::relist(vec![mirror("src", "m")]);
        let keys: Vec<_> = relist.iter().map(&map).collect();
        assert_eq!(
            keys,
            [
                vec![],
                vec![ObjectKey::new("src", "m")],
                vec![ObjectKey::new("src", "gone")]
            ]
        );
        assert_eq!(
            map(&Change::Applied(mirror("src", "m"))),
            vec![ObjectKey::new("src", "m")]
        );
    }

    /// The copy in namespace `a` of the Mirror `src/<mirror_name>`.
    fn copy_of(mirror_name: &str) -> ConfigMap {
        ConfigMap {
            metadata: copy_meta(&mirror("src", mirror_name), "a", "h", None),
            ..ConfigMap::default()
        }
    }

    /// A ConfigMap `app-ca` in `namespace` that no Mirror's labels claim: a source, or a copy
    /// stripped of its labels.
    fn unlabelled(namespace: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta::named(Some(namespace), "app-ca"),
            ..ConfigMap::default()
        }
    }

    /// The Mirror cache holding `list`.
    fn mirrors(list: Vec<Mirror>) -> Store<Mirror, Mirror> {
        let mirrors = mirror_store();
        mirrors.relist(list);
        mirrors
    }

    /// The Mirror `src/<name>` of the Secret `app-ca`.
    fn secret_mirror(name: &str) -> Mirror {
        let mut m = mirror("src", name);
        m.spec.source.kind = SourceKind::Secret;
        m
    }

    fn mirror(ns: &str, name: &str) -> Mirror {
        let mut m = Mirror {
            metadata: ObjectMeta::named(Some(ns), name),
            ..Mirror::default()
        };
        m.spec.source.name = "app-ca".into();
        m
    }
}
