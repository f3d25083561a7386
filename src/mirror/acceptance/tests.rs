use super::*;
use crate::kube::api::ObjectMeta;

fn acceptance(ns: &str, name: &str, from_ns: &str, mirror: &str) -> MirrorAcceptance {
    MirrorAcceptance {
        metadata: ObjectMeta::named(Some(ns), name),
        spec: AcceptanceSpec {
            from: MirrorRef {
                namespace: from_ns.into(),
                mirror: mirror.into(),
            },
            kind: SourceKind::ConfigMap,
            target_name: None,
        },
        ..MirrorAcceptance::default()
    }
}

fn owner(ns: &str, name: &str) -> Owner {
    Owner {
        namespace: ns.into(),
        name: name.into(),
    }
}

#[test]
fn the_index_answers_which_namespaces_accept_a_mirror() {
    let store = Acceptances::default();
    for a in [
        acceptance("team-b", "settings", "team-a", "share"),
        acceptance("team-c", "x", "team-a", "share"),
        acceptance("team-c", "y", "team-a", "other"),
        acceptance("team-d", "z", "team-x", "share"),
    ] {
        store.apply(&Change::Applied(a));
    }
    let names = |set: BTreeSet<String>| set.into_iter().collect::<Vec<_>>();
    assert_eq!(
        names(store.accepting(&owner("team-a", "share"), SourceKind::ConfigMap)),
        ["team-b", "team-c"]
    );
    assert_eq!(
        names(store.accepting(&owner("team-a", "other"), SourceKind::ConfigMap)),
        ["team-c"]
    );
    assert!(
        store
            .accepting(&owner("team-a", "none"), SourceKind::ConfigMap)
            .is_empty()
    );
}

#[test]
fn an_acceptance_that_changes_or_goes_moves_in_the_index() {
    let store = Acceptances::default();
    let first = acceptance("team-b", "settings", "team-a", "share");
    store.apply(&Change::Applied(first.clone()));
    let moved = acceptance("team-b", "settings", "team-a", "other");
    store.apply(&Change::Applied(moved.clone()));
    assert!(
        store
            .accepting(&owner("team-a", "share"), SourceKind::ConfigMap)
            .is_empty()
    );
    assert_eq!(
        store
            .accepting(&owner("team-a", "other"), SourceKind::ConfigMap)
            .len(),
        1
    );
    store.apply(&Change::Deleted(moved));
    assert!(
        store
            .accepting(&owner("team-a", "other"), SourceKind::ConfigMap)
            .is_empty()
    );
}

#[test]
fn a_relist_drops_from_the_index_what_it_did_not_list_and_the_mirror_name_is_shared() {
    let store = Acceptances::default();
    let (b, c) = (
        acceptance("team-b", "x", "team-a", "share"),
        acceptance("team-c", "y", "team-a", "share"),
    );
    store.apply(&Change::Applied(b.clone()));
    store.apply(&Change::Applied(c));
    let (kept_b, kept_c) = (
        store.store.get("team-b", "x"),
        store.store.get("team-c", "y"),
    );
    let (kept_b, kept_c) = (kept_b.expect("b"), kept_c.expect("c"));
    assert!(
        Arc::ptr_eq(&kept_b.from, &kept_c.from),
        "one string per Mirror"
    );
    store.apply(&Change::Relisting);
    store.apply(&Change::Listed(b));
    store.apply(&Change::Relisted);
    let share = owner("team-a", "share");
    let names: Vec<String> = store
        .accepting(&share, SourceKind::ConfigMap)
        .into_iter()
        .collect();
    assert_eq!(names, ["team-b"]);
}

#[test]
fn an_event_wakes_the_mirror_it_names_even_one_that_does_not_exist() {
    let (store, mirrors) = (Acceptances::default(), crate::mirror::index::mirror_store());
    let map = accepted_mirrors(store.clone(), mirrors);
    let a = acceptance("team-b", "settings", "team-a", "share");
    assert_eq!(
        map(&Change::Applied(a.clone()), None),
        [ObjectKey::new("team-a", "share")]
    );
    assert_eq!(
        map(&Change::Deleted(a.clone()), None),
        [ObjectKey::new("team-a", "share")]
    );
    assert!(map(&Change::Applied(acceptance("b", "empty", "", "")), None).is_empty());
    store.apply(&Change::Applied(a));
    assert_eq!(
        map(&Change::Relisted, None),
        [ObjectKey::new("team-a", "share")]
    );
}

#[test]
fn the_shown_reason_is_kept_to_write_a_status_only_when_it_changes() {
    let mut a = acceptance("team-b", "settings", "team-a", "share");
    a.metadata.generation = Some(3);
    assert_eq!(Accepted::of(&a, &ByMirror::default()).shown(), None);
    a.status = Some(AcceptanceStatus {
        conditions: vec![Condition {
            type_: SERVED.into(),
            reason: "Served".into(),
            observed_generation: Some(3),
            ..Condition::default()
        }],
    });
    let kept = Accepted::of(&a, &ByMirror::default());
    assert_eq!(kept.shown(), Some(Verdict::Served));
    assert!(kept.shows(Verdict::Served) && !kept.changes_reason(Verdict::Served));
    assert_eq!(kept.generation, 3);
    // A new generation is written again, though its reason is no news.
    a.metadata.generation = Some(4);
    let edited = Accepted::of(&a, &ByMirror::default());
    assert!(!edited.shows(Verdict::Served) && !edited.changes_reason(Verdict::Served));
}

#[test]
fn an_acceptance_decodes_from_its_manifest() {
    let json = r#"{"apiVersion":"skiff.dev/v1alpha1","kind":"MirrorAcceptance",
        "metadata":{"name":"settings","namespace":"team-b"},
        "spec":{"from":{"namespace":"team-a","mirror":"share"}}}"#;
    let a: MirrorAcceptance = serde_json::from_str(json).expect("valid acceptance");
    assert_eq!(
        &*Accepted::of(&a, &ByMirror::default()).from,
        "team-a/share"
    );
}
