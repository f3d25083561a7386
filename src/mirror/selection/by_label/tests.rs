//! The label index: which Mirrors each namespace change concerns, operator by operator.

use super::*;
use crate::mirror::namespace_selector::expr;
use std::collections::BTreeMap;

fn ns(labels: &[(&str, &str)]) -> NamespaceInfo<'static> {
    let labels: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    NamespaceInfo::new("n", &labels, false)
}

fn labels(pairs: &[(&str, &str)]) -> LabelSelector {
    let match_labels = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    LabelSelector {
        match_labels,
        ..LabelSelector::default()
    }
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new("src", name)
}

fn names(mirrors: BTreeSet<&ObjectKey>) -> Vec<&str> {
    mirrors.into_iter().map(|k| &*k.name).collect()
}

/// One Mirror per kind of requirement, all on the key `team`, plus `{}`.
fn index() -> MirrorsByLabel {
    let mut index = MirrorsByLabel::default();
    index.add(&key("equals-a"), Some(&labels(&[("team", "a")])));
    index.add(&key("in-a-b"), Some(&expr("team", "In", &["a", "b"])));
    index.add(&key("notin-a"), Some(&expr("team", "NotIn", &["a"])));
    index.add(&key("exists"), Some(&expr("team", "Exists", &[])));
    index.add(&key("absent"), Some(&expr("team", "DoesNotExist", &[])));
    index.add(&key("everything"), Some(&LabelSelector::default()));
    index.add(&key("nothing"), None);
    index
}

#[test]
fn a_relabel_of_a_key_no_selector_names_concerns_no_mirror() {
    let index = index();
    let before = ns(&[("team", "a"), ("cost", "1")]);
    let after = ns(&[("team", "a"), ("cost", "2"), ("new", "x")]);
    assert!(index.concerned_by(&before, &after).is_empty());
    assert!(index.concerned_by(&before, &before).is_empty());
}

#[test]
fn a_value_change_concerns_the_mirrors_naming_either_value() {
    let index = index();
    let a_to_b = index.concerned_by(&ns(&[("team", "a")]), &ns(&[("team", "b")]));
    assert_eq!(names(a_to_b), ["equals-a", "in-a-b", "notin-a"]);
    let b_to_c = index.concerned_by(&ns(&[("team", "b")]), &ns(&[("team", "c")]));
    assert_eq!(names(b_to_c), ["in-a-b"]);
}

#[test]
fn a_key_appearing_or_going_concerns_presence_requirements_too() {
    let index = index();
    let added = index.concerned_by(&ns(&[]), &ns(&[("team", "c")]));
    assert_eq!(names(added), ["absent", "exists"]);
    let removed = index.concerned_by(&ns(&[("team", "a")]), &ns(&[]));
    assert_eq!(
        names(removed),
        ["absent", "equals-a", "exists", "in-a-b", "notin-a"]
    );
}

#[test]
fn a_new_namespace_may_be_chosen_by_anchored_mirrors_it_matches_and_by_the_unanchored() {
    let index = index();
    assert_eq!(
        names(index.may_choose(&ns(&[]))),
        ["absent", "everything", "notin-a"],
        "selectors matching on absence, and {{}}"
    );
    let team_a = names(index.may_choose(&ns(&[("team", "a"), ("other", "x")])));
    assert_eq!(
        team_a,
        [
            "absent",
            "equals-a",
            "everything",
            "exists",
            "in-a-b",
            "notin-a"
        ]
    );
}

#[test]
fn removing_a_mirror_leaves_no_trace() {
    let mut index = index();
    for (name, selector) in [
        ("equals-a", labels(&[("team", "a")])),
        ("in-a-b", expr("team", "In", &["a", "b"])),
        ("notin-a", expr("team", "NotIn", &["a"])),
        ("exists", expr("team", "Exists", &[])),
        ("absent", expr("team", "DoesNotExist", &[])),
        ("everything", LabelSelector::default()),
    ] {
        index.remove(&key(name), Some(&selector));
    }
    assert!(index.is_empty());
}

#[test]
fn a_selector_with_a_positive_requirement_is_anchored_by_it() {
    let mut index = MirrorsByLabel::default();
    let mut both = expr("env", "NotIn", &["dev"]);
    both.match_labels.insert("team".into(), "a".into());
    index.add(&key("both"), Some(&both));
    assert!(index.may_choose(&ns(&[("env", "prod")])).is_empty());
    assert_eq!(names(index.may_choose(&ns(&[("team", "a")]))), ["both"]);
    let env_change = index.concerned_by(&ns(&[("env", "dev")]), &ns(&[("env", "qa")]));
    assert_eq!(names(env_change), ["both"]);
}
