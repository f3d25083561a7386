//! Store tests: projections, relists object by object, readiness and the index.

use super::*;
use crate::kube::api::ConfigMap;

fn config_map(ns: &str, name: &str, value: &str) -> ConfigMap {
    let mut cm = ConfigMap {
        metadata: ObjectMeta::named(Some(ns), name),
        ..ConfigMap::default()
    };
    cm.data.insert("k".into(), value.into());
    cm
}

fn data_length(cm: &ConfigMap) -> usize {
    cm.data.values().map(String::len).sum()
}

/// The keys `store` holds, sorted, as `namespace/name`.
fn sorted_keys<K: Resource, P: Clone>(store: &Store<K, P>) -> Vec<String> {
    let mut keys = store.keys();
    keys.sort();
    keys.iter().map(ObjectKey::to_string).collect()
}

/// A task that ends once `store` is ready.
fn ready_waiter<K, P>(store: &Store<K, P>) -> smol::Task<()>
where
    K: Resource + Send + Sync + 'static,
    P: Clone + Send + Sync + 'static,
{
    let store = store.clone();
    smol::spawn(async move { store.wait_until_ready().await })
}

#[test]
fn keeps_only_the_projection_of_each_object() {
    let store = Store::new(data_length);
    store.apply(&Change::Applied(config_map("a", "x", "12345")));
    assert_eq!(store.get("a", "x"), Some(5));
    assert_eq!(store.get("b", "x"), None);
}

#[test]
fn a_relist_replaces_everything_and_makes_the_store_ready() {
    let store = Store::whole();
    store.apply(&Change::Applied(config_map("a", "gone", "1")));
    assert!(!store.ready());
    let waiter = ready_waiter(&store);
    store.relist(vec![config_map("a", "x", "1"), config_map("b", "y", "2")]);
    assert!(store.ready());
    smol::block_on(waiter);
    smol::block_on(store.wait_until_ready());
    assert_eq!(store.len(), 2);
    assert!(store.get("a", "gone").is_none());
    assert_eq!(sorted_keys(&store), ["a/x", "b/y"]);
}

#[test]
fn half_way_through_a_relist_nothing_looks_gone_and_the_store_is_not_ready() {
    let store = Store::new(data_length);
    store.relist(vec![
        config_map("a", "kept", "1"),
        config_map("a", "removed", "1"),
    ]);
    store.apply(&Change::Relisting);
    assert!(!store.ready(), "a relist under way makes the store unready");
    let changed = store.apply(&Change::Listed(config_map("a", "kept", "123")));
    assert_eq!(changed, Some(1), "the projection the relist replaced");
    store.apply(&Change::Listed(config_map("a", "added", "12")));
    assert_eq!(
        store.get("a", "removed"),
        Some(1),
        "not gone before the end"
    );
    assert_eq!(store.len(), 3);
    let waiter = ready_waiter(&store);
    store.apply(&Change::Relisted);
    smol::block_on(waiter);
    assert!(store.get("a", "removed").is_none());
    assert_eq!(store.get("a", "kept"), Some(3));
    assert_eq!(sorted_keys(&store), ["a/added", "a/kept"]);
}

#[test]
fn a_relist_begun_again_drops_what_only_the_abandoned_one_listed() {
    let store = Store::new(data_length);
    store.relist(vec![config_map("a", "old", "1")]);
    store.apply(&Change::Relisting);
    store.apply(&Change::Listed(config_map("a", "brief", "1")));
    store.apply(&Change::Listed(config_map("a", "old", "1")));
    store.relist(vec![config_map("a", "new", "1")]);
    assert_eq!(sorted_keys(&store), ["a/new"]);
    assert!(store.ready());
}

#[test]
fn applied_updates_and_deleted_removes_returning_what_was_there() {
    let store = Store::new(data_length);
    let reader = store.clone();
    assert_eq!(
        store.apply(&Change::Applied(config_map("a", "x", "1"))),
        None
    );
    let replaced = store.apply(&Change::Applied(config_map("a", "x", "123")));
    assert_eq!(replaced, Some(1));
    store.apply(&Change::Applied(config_map("a", "y", "12")));
    assert_eq!(reader.get("a", "x"), Some(3));
    assert!(reader.contains(&ObjectKey::new("a", "x")));
    let removed = store.apply(&Change::Deleted(config_map("a", "x", "")));
    assert_eq!(removed, Some(3));
    assert_eq!(reader.list(), [2]);
}

#[test]
fn keys_display_as_namespace_slash_name() {
    assert_eq!(ObjectKey::new("ns", "n").to_string(), "ns/n");
    assert_eq!(
        ObjectKey::new("", "cluster-wide").to_string(),
        "cluster-wide"
    );
}

#[test]
fn the_index_follows_each_projection_and_forgets_what_went() {
    let by_value = |cm: &ConfigMap| cm.data.values().cloned().collect::<Vec<_>>();
    let store = Store::new(ConfigMap::clone).with_index(by_value);
    store.apply(&Change::Applied(config_map("a", "x", "red")));
    store.apply(&Change::Applied(config_map("b", "y", "red")));
    let mut reds = store.indexed_keys("red");
    reds.sort();
    assert_eq!(reds, [ObjectKey::new("a", "x"), ObjectKey::new("b", "y")]);
    store.apply(&Change::Applied(config_map("a", "x", "blue")));
    assert_eq!(store.indexed_keys("red"), [ObjectKey::new("b", "y")]);
    let blue = store.indexed("blue");
    assert_eq!(blue.len(), 1);
    assert_eq!(blue[0].0, ObjectKey::new("a", "x"), "found with its key");
    store.apply(&Change::Deleted(config_map("b", "y", "")));
    assert!(store.indexed_keys("red").is_empty());
    store.apply(&Change::Relisting);
    store.apply(&Change::Listed(config_map("c", "z", "green")));
    assert_eq!(
        store.indexed_keys("blue"),
        [ObjectKey::new("a", "x")],
        "an unconfirmed object stays indexed until the relist ends"
    );
    store.apply(&Change::Relisted);
    assert!(
        store.indexed_keys("blue").is_empty(),
        "a relist drops the index values of what went"
    );
    assert_eq!(store.indexed_keys("green"), [ObjectKey::new("c", "z")]);
}

#[test]
fn a_key_is_two_boxed_strings_not_two_strings() {
    // Every cached object and index entry holds one: 32 bytes, where two `String`s took 48.
    assert_eq!(std::mem::size_of::<ObjectKey>(), 32);
}
