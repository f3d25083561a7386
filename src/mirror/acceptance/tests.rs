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
    let store = acceptance_store();
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
        names(accepting(
            &store,
            &owner("team-a", "share"),
            SourceKind::ConfigMap
        )),
        ["team-b", "team-c"]
    );
    assert_eq!(
        names(accepting(
            &store,
            &owner("team-a", "other"),
            SourceKind::ConfigMap
        )),
        ["team-c"]
    );
    assert!(accepting(&store, &owner("team-a", "none"), SourceKind::ConfigMap).is_empty());
}

#[test]
fn an_acceptance_that_changes_or_goes_moves_in_the_index() {
    let store = acceptance_store();
    let first = acceptance("team-b", "settings", "team-a", "share");
    store.apply(&Change::Applied(first.clone()));
    let moved = acceptance("team-b", "settings", "team-a", "other");
    store.apply(&Change::Applied(moved.clone()));
    assert!(accepting(&store, &owner("team-a", "share"), SourceKind::ConfigMap).is_empty());
    assert_eq!(
        accepting(&store, &owner("team-a", "other"), SourceKind::ConfigMap).len(),
        1
    );
    store.apply(&Change::Deleted(moved));
    assert!(accepting(&store, &owner("team-a", "other"), SourceKind::ConfigMap).is_empty());
}

#[test]
fn an_event_wakes_the_mirror_it_names_even_one_that_does_not_exist() {
    let (store, mirrors) = (acceptance_store(), crate::mirror::index::mirror_store());
    let map = accepted_mirrors(store.clone(), mirrors);
    let a = acceptance("team-b", "settings", "team-a", "share");
    assert_eq!(
        map(&Change::Applied(a.clone())),
        [ObjectKey::new("team-a", "share")]
    );
    assert_eq!(
        map(&Change::Deleted(a.clone())),
        [ObjectKey::new("team-a", "share")]
    );
    assert!(map(&Change::Applied(acceptance("b", "empty", "", ""))).is_empty());
    store.apply(&Change::Applied(a));
    assert_eq!(map(&Change::Relisted), [ObjectKey::new("team-a", "share")]);
}

#[test]
fn the_shown_reason_is_kept_to_write_a_status_only_when_it_changes() {
    let mut a = acceptance("team-b", "settings", "team-a", "share");
    a.metadata.generation = Some(3);
    assert_eq!(Accepted::of(&a).shown(), None);
    a.status = Some(AcceptanceStatus {
        conditions: vec![Condition {
            type_: SERVED.into(),
            reason: "Served".into(),
            observed_generation: Some(3),
            ..Condition::default()
        }],
    });
    let kept = Accepted::of(&a);
    assert_eq!(kept.shown(), Some((Verdict::Served, 3)));
    assert_eq!(kept.generation, 3);
}

#[test]
fn an_acceptance_decodes_from_its_manifest() {
    let json = r#"{"apiVersion":"skiff.dev/v1alpha1","kind":"MirrorAcceptance",
        "metadata":{"name":"settings","namespace":"team-b"},
        "spec":{"from":{"namespace":"team-a","mirror":"share"}}}"#;
    let a: MirrorAcceptance = serde_json::from_str(json).expect("valid acceptance");
    assert_eq!(&*Accepted::of(&a).from, "team-a/share");
}
