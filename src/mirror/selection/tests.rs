use super::*;
use crate::kube::api::ObjectMeta;
use crate::mirror::namespace_selector::expr;
use std::collections::BTreeMap;

fn namespace(name: &str, labels: &[(&str, &str)]) -> Namespace {
    let mut ns = Namespace {
        metadata: ObjectMeta::named(None, name),
        ..Namespace::default()
    };
    ns.metadata.labels = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ns
}

/// A namespace labelled only with its `team`, as the mirrors below select.
fn team_namespace(name: &str, team: &str) -> Namespace {
    namespace(name, &[("team", team)])
}

fn mirror(name: &str, team: &str) -> Mirror {
    let mut m = Mirror {
        metadata: ObjectMeta::named(Some("src"), name),
        ..Mirror::default()
    };
    m.spec.namespace_selector = Some(LabelSelector {
        match_labels: BTreeMap::from([("team".to_string(), team.to_string())]),
        ..LabelSelector::default()
    });
    m
}

struct World {
    mirrors: Store<Mirror, Mirror>,
    namespaces: Store<Namespace, NamespaceEntry>,
    selections: Selections,
}

impl World {
    fn new(mirrors: Vec<Mirror>, namespaces: Vec<Namespace>) -> World {
        let (store, mirror_store) = (Store::new(NamespaceEntry::of), Store::whole());
        let world = World {
            selections: Selections::new(&store, {
                let mirrors = mirror_store.clone();
                move |key: &ObjectKey| mirrors.contains(key)
            }),
            mirrors: mirror_store,
            namespaces: store,
        };
        world.namespace_relist(namespaces);
        for event in Change::relist(mirrors) {
            world.mirror_event(event);
        }
        world
    }

    fn namespace_event(&self, event: Change<Namespace>) -> Vec<ObjectKey> {
        let previous = self.namespaces.apply(&event);
        let mut keys = self.selections.namespace_changed(&event, previous.as_ref());
        keys.sort();
        keys
    }

    /// A whole namespace relist; the Mirrors whose selection it changed.
    fn namespace_relist(&self, namespaces: Vec<Namespace>) -> Vec<ObjectKey> {
        let events = Change::relist(namespaces);
        let mut keys: Vec<ObjectKey> = (events.into_iter())
            .flat_map(|event| self.namespace_event(event))
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    fn mirror_event(&self, event: Change<Mirror>) {
        self.mirrors.apply(&event);
        self.selections.mirror_changed(&event);
    }

    fn selected(&self, name: &str) -> Vec<String> {
        let m = self.mirrors.get("src", name).expect("cached Mirror");
        self.selections.of(&m).into_iter().collect()
    }
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new("src", name)
}

#[test]
fn a_namespace_event_that_changes_no_selection_wakes_no_mirror() {
    let w = World::new(
        vec![mirror("a", "red"), mirror("b", "blue")],
        vec![team_namespace("n1", "red")],
    );
    let relabelled = namespace("n1", &[("team", "red"), ("cost-center", "42")]);
    assert!(w.namespace_event(Change::Applied(relabelled)).is_empty());
    let unrelated = team_namespace("n2", "green");
    assert!(w.namespace_event(Change::Applied(unrelated)).is_empty());
    assert_eq!(w.selected("a"), ["n1"]);
}

#[test]
fn a_namespace_event_wakes_exactly_the_mirrors_whose_selection_changed() {
    let w = World::new(
        vec![
            mirror("a", "red"),
            mirror("b", "blue"),
            mirror("c", "green"),
        ],
        vec![team_namespace("n1", "red")],
    );
    let moved = team_namespace("n1", "blue");
    assert_eq!(
        w.namespace_event(Change::Applied(moved.clone())),
        [key("a"), key("b")]
    );
    assert_eq!(w.selected("b"), ["n1"]);
    assert!(w.selected("a").is_empty());
    let mut excluded = moved;
    excluded
        .metadata
        .labels
        .insert("skiff.dev/exclude".into(), "true".into());
    assert_eq!(
        w.namespace_event(Change::Applied(excluded.clone())),
        [key("b")]
    );
    assert_eq!(
        w.namespace_event(Change::Deleted(excluded)),
        Vec::<ObjectKey>::new()
    );
    let mut terminating = team_namespace("n2", "green");
    assert_eq!(
        w.namespace_event(Change::Applied(terminating.clone())),
        [key("c")]
    );
    terminating.metadata.deletion_timestamp = Some("2026-01-01T00:00:00Z".into());
    assert_eq!(w.namespace_event(Change::Applied(terminating)), [key("c")]);
    assert!(w.selected("c").is_empty());
}

#[test]
fn a_relist_drops_namespaces_that_went_and_adds_new_ones() {
    let w = World::new(
        vec![mirror("a", "red")],
        vec![team_namespace("n1", "red"), team_namespace("n2", "red")],
    );
    let relist = vec![team_namespace("n2", "red"), team_namespace("n3", "red")];
    assert_eq!(w.namespace_relist(relist), [key("a")]);
    assert_eq!(w.selected("a"), ["n2", "n3"]);
}

#[test]
fn a_mirror_is_re_evaluated_when_its_selector_changes() {
    let w = World::new(
        vec![mirror("a", "red")],
        vec![team_namespace("n1", "red"), team_namespace("n2", "blue")],
    );
    assert_eq!(w.selected("a"), ["n1"]);
    w.mirror_event(Change::Applied(mirror("a", "blue")));
    assert_eq!(w.selected("a"), ["n2"]);
    let mut unselective = mirror("a", "blue");
    unselective.spec.namespace_selector = None;
    w.mirror_event(Change::Applied(unselective));
    assert!(
        w.selected("a").is_empty(),
        "an absent selector selects nothing"
    );
}

#[test]
fn a_mirror_the_index_has_not_seen_is_computed_from_the_cache() {
    let w = World::new(vec![], vec![team_namespace("n1", "red")]);
    let unseen = mirror("a", "red");
    assert_eq!(
        w.selections.of(&unseen).into_iter().collect::<Vec<_>>(),
        ["n1"]
    );
    let mut own = team_namespace("src", "red");
    own.metadata.name = Some("src".into());
    w.namespace_event(Change::Applied(own));
    assert_eq!(
        w.selections.of(&unseen).len(),
        1,
        "the Mirror's own namespace is never selected"
    );
}

fn mirror_selecting(name: &str, selector: Option<LabelSelector>) -> Mirror {
    let mut m = mirror(name, "unused");
    m.spec.namespace_selector = selector;
    m
}

#[test]
fn mid_relist_no_namespace_is_dropped_and_at_its_end_the_unlisted_are() {
    let w = World::new(
        vec![mirror("a", "red"), mirror("b", "blue")],
        vec![
            team_namespace("removed", "red"),
            team_namespace("changed", "red"),
            team_namespace("kept", "red"),
        ],
    );
    assert_eq!(w.selected("a"), ["changed", "kept", "removed"]);
    assert!(w.namespace_event(Change::Relisting).is_empty());
    let moved = team_namespace("changed", "blue");
    assert_eq!(
        w.namespace_event(Change::Listed(moved)),
        [key("a"), key("b")]
    );
    let added = team_namespace("added", "red");
    assert_eq!(w.namespace_event(Change::Listed(added)), [key("a")]);
    let kept = team_namespace("kept", "red");
    assert!(w.namespace_event(Change::Listed(kept)).is_empty());
    assert_eq!(
        w.selected("a"),
        ["added", "kept", "removed"],
        "a namespace not listed yet is not gone yet"
    );
    assert_eq!(w.namespace_event(Change::Relisted), [key("a")]);
    assert_eq!(w.selected("a"), ["added", "kept"]);
    assert_eq!(w.selected("b"), ["changed"]);
}

#[test]
fn a_mirror_relist_computes_new_and_changed_selections_and_forgets_the_gone() {
    let w = World::new(
        vec![mirror("a", "red"), mirror("gone", "red")],
        vec![team_namespace("n1", "red"), team_namespace("n2", "blue")],
    );
    let relist = vec![mirror("a", "blue"), mirror("new", "red")];
    for event in Change::relist(relist) {
        w.mirror_event(event);
    }
    assert_eq!(w.selected("a"), ["n2"]);
    assert_eq!(w.selected("new"), ["n1"]);
    assert!(w.mirrors.get("src", "gone").is_none());
    let gone = w.selections.lock().selections.contains_key(&key("gone"));
    assert!(!gone, "the index forgets a Mirror the relist did not list");
    let relabelled = team_namespace("n1", "blue");
    assert_eq!(
        w.namespace_event(Change::Applied(relabelled)),
        [key("a"), key("new")],
        "the label index follows the relisted selectors"
    );
}

#[test]
fn selectors_matching_on_absence_or_everything_follow_every_kind_of_namespace_event() {
    let w = World::new(
        vec![
            mirror_selecting("everything", Some(LabelSelector::default())),
            mirror_selecting("no-team", Some(expr("team", "DoesNotExist", &[]))),
            mirror_selecting("not-red", Some(expr("team", "NotIn", &["red"]))),
            mirror_selecting("none", None),
        ],
        vec![team_namespace("n1", "red")],
    );
    assert_eq!(w.selected("everything"), ["n1"]);
    assert!(w.selected("no-team").is_empty());
    assert!(w.selected("not-red").is_empty());
    let created = namespace("n2", &[]);
    assert_eq!(
        w.namespace_event(Change::Applied(created)),
        [key("everything"), key("no-team"), key("not-red")]
    );
    let labelled = team_namespace("n2", "blue");
    assert_eq!(
        w.namespace_event(Change::Applied(labelled)),
        [key("no-team")]
    );
    let unrelated = namespace("n2", &[("team", "blue"), ("cost", "1")]);
    assert!(w.namespace_event(Change::Applied(unrelated)).is_empty());
    let excluded = namespace("n2", &[("team", "blue"), ("skiff.dev/exclude", "true")]);
    assert_eq!(
        w.namespace_event(Change::Applied(excluded.clone())),
        [key("everything"), key("not-red")]
    );
    let included = team_namespace("n2", "blue");
    assert_eq!(
        w.namespace_event(Change::Applied(included.clone())),
        [key("everything"), key("not-red")]
    );
    let mut terminating = included;
    terminating.metadata.deletion_timestamp = Some("2026-01-01T00:00:00Z".into());
    assert_eq!(
        w.namespace_event(Change::Applied(terminating.clone())),
        [key("everything"), key("not-red")]
    );
    assert!(w.namespace_event(Change::Deleted(terminating)).is_empty());
    assert_eq!(
        w.namespace_event(Change::Deleted(team_namespace("n1", "red"))),
        [key("everything")]
    );
    assert!(w.selected("everything").is_empty());
    assert!(w.selected("none").is_empty());
}

#[test]
fn a_namespace_whose_name_is_only_its_key_is_selected_by_its_name_label() {
    use crate::mirror::namespace::NAME_LABEL;
    let by_name = |name: &str| {
        let mut m = mirror(name, "");
        m.spec.namespace_selector = Some(LabelSelector {
            match_labels: BTreeMap::from([(NAME_LABEL.to_string(), "n1".to_string())]),
            ..LabelSelector::default()
        });
        m
    };
    let w = World::new(
        vec![by_name("a")],
        vec![
            namespace("n1", &[(NAME_LABEL, "n1")]),
            namespace("n2", &[(NAME_LABEL, "n2")]),
        ],
    );
    assert_eq!(w.selected("a"), ["n1"], "computed in a relist's pass");
    w.mirror_event(Change::Applied(by_name("b")));
    assert_eq!(w.selected("b"), ["n1"], "computed for one Mirror");
    let relabelled = namespace("n1", &[(NAME_LABEL, "n1"), ("team", "x")]);
    assert!(w.namespace_event(Change::Applied(relabelled)).is_empty());
    assert_eq!(
        w.namespace_event(Change::Deleted(namespace("n1", &[]))),
        [key("a"), key("b")]
    );
}
