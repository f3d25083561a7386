use super::*;
use crate::kube::api::ObjectMeta;
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
    namespaces: Store<Namespace, NamespaceInfo>,
    selections: Selections,
}

impl World {
    fn new(mirrors: Vec<Mirror>, namespaces: Vec<Namespace>) -> World {
        let store = Store::new(NamespaceInfo::of);
        let world = World {
            mirrors: Store::whole(),
            selections: Selections::new(&store),
            namespaces: store,
        };
        world.namespace_event(WatcherEvent::Restarted(namespaces));
        let event = WatcherEvent::Restarted(mirrors);
        world.mirrors.apply(&event);
        world.selections.mirror_changed(&event);
        world
    }

    fn namespace_event(&self, event: WatcherEvent<Namespace>) -> Vec<ObjectKey> {
        self.namespaces.apply(&event);
        let mut keys = self.selections.namespace_changed(&event);
        keys.sort();
        keys
    }

    fn mirror_event(&self, event: WatcherEvent<Mirror>) {
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
        vec![namespace("n1", &[("team", "red")])],
    );
    let relabelled = namespace("n1", &[("team", "red"), ("cost-center", "42")]);
    assert!(
        w.namespace_event(WatcherEvent::Applied(relabelled))
            .is_empty()
    );
    let unrelated = namespace("n2", &[("team", "green")]);
    assert!(
        w.namespace_event(WatcherEvent::Applied(unrelated))
            .is_empty()
    );
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
        vec![namespace("n1", &[("team", "red")])],
    );
    let moved = namespace("n1", &[("team", "blue")]);
    assert_eq!(
        w.namespace_event(WatcherEvent::Applied(moved.clone())),
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
        w.namespace_event(WatcherEvent::Applied(excluded.clone())),
        [key("b")]
    );
    assert_eq!(
        w.namespace_event(WatcherEvent::Deleted(excluded)),
        Vec::<ObjectKey>::new()
    );
    let mut terminating = namespace("n2", &[("team", "green")]);
    assert_eq!(
        w.namespace_event(WatcherEvent::Applied(terminating.clone())),
        [key("c")]
    );
    terminating.metadata.deletion_timestamp = Some("2026-01-01T00:00:00Z".into());
    assert_eq!(
        w.namespace_event(WatcherEvent::Applied(terminating)),
        [key("c")]
    );
    assert!(w.selected("c").is_empty());
}

#[test]
fn a_relist_drops_namespaces_that_went_and_adds_new_ones() {
    let w = World::new(
        vec![mirror("a", "red")],
        vec![
            namespace("n1", &[("team", "red")]),
            namespace("n2", &[("team", "red")]),
        ],
    );
    let relist = vec![
        namespace("n2", &[("team", "red")]),
        namespace("n3", &[("team", "red")]),
    ];
    assert_eq!(
        w.namespace_event(WatcherEvent::Restarted(relist)),
        [key("a")]
    );
    assert_eq!(w.selected("a"), ["n2", "n3"]);
}

#[test]
fn a_mirror_is_re_evaluated_when_its_selector_changes() {
    let w = World::new(
        vec![mirror("a", "red")],
        vec![
            namespace("n1", &[("team", "red")]),
            namespace("n2", &[("team", "blue")]),
        ],
    );
    assert_eq!(w.selected("a"), ["n1"]);
    w.mirror_event(WatcherEvent::Applied(mirror("a", "blue")));
    assert_eq!(w.selected("a"), ["n2"]);
    let mut unselective = mirror("a", "blue");
    unselective.spec.namespace_selector = None;
    w.mirror_event(WatcherEvent::Applied(unselective));
    assert!(
        w.selected("a").is_empty(),
        "an absent selector selects nothing"
    );
}

#[test]
fn a_mirror_the_index_has_not_seen_is_computed_from_the_cache() {
    let w = World::new(vec![], vec![namespace("n1", &[("team", "red")])]);
    let unseen = mirror("a", "red");
    assert_eq!(
        w.selections.of(&unseen).into_iter().collect::<Vec<_>>(),
        ["n1"]
    );
    let mut own = namespace("src", &[("team", "red")]);
    own.metadata.name = Some("src".into());
    w.namespace_event(WatcherEvent::Applied(own));
    assert_eq!(
        w.selections.of(&unseen).len(),
        1,
        "the Mirror's own namespace is never selected"
    );
}
