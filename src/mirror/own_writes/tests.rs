use super::*;
use crate::kube::api::{Object, ObjectMeta};
use crate::mirror::payload::{Digest, HeldMaps};

fn owner(name: &str) -> Owner {
    Owner {
        namespace: "src".into(),
        name: name.into(),
    }
}

fn info(rv: &str, hash: &str) -> CopyInfo {
    CopyInfo {
        kind: SourceKind::ConfigMap,
        owner: Some(owner("m").into()),
        resource_version: Version::new(rv),
        content_hash: Digest::of(hash.as_bytes()),
        record: None,
        changed_by: None,
        held: HeldMaps::default(),
    }
}

fn key(namespace: &str) -> CopyKey {
    CopyKey::new(SourceKind::ConfigMap, namespace, "ca")
}

fn mirror_at(rv: &str, note: &str) -> Mirror {
    let mut m = Mirror {
        metadata: ObjectMeta::named(Some("src"), "m"),
        ..Mirror::default()
    };
    m.metadata.resource_version = Some(rv.into());
    m.spec.source.name = note.into();
    m
}

fn note(m: Option<Mirror>) -> String {
    m.map(|m| m.spec.source.name).unwrap_or_default()
}

/// The note of the Mirror `w` answers with when the cache holds Mirror `m` at `rv`, noted
/// `cached`.
fn seen_over(w: &MirrorWrites, rv: &str, cached: &str) -> String {
    note(w.resolve(&owner("m"), Some(mirror_at(rv, cached))))
}

#[test]
fn a_create_the_cache_has_not_seen_reads_as_present() {
    let w = CopyWrites::default();
    w.record(key("a"), None, Some(info("5", "h")));
    assert_eq!(w.resolve(&key("a"), None), Some(info("5", "h")));
}

#[test]
fn an_update_hides_the_stale_cached_version_until_the_cache_moves() {
    let w = CopyWrites::default();
    w.record(key("a"), Some("4"), Some(info("6", "new")));
    let stale = Some(info("4", "old"));
    assert_eq!(
        w.resolve(&key("a"), stale).map(|c| c.content_hash),
        Some(Digest::of(b"new"))
    );
    let caught_up = Some(info("6", "new"));
    assert_eq!(w.resolve(&key("a"), caught_up.clone()), caught_up);
    assert!(w.is_empty(), "the entry goes once the cache has moved");
}

#[test]
fn a_delete_hides_the_cached_copy() {
    let w = CopyWrites::default();
    w.record(key("a"), Some("4"), None);
    assert_eq!(w.resolve(&key("a"), Some(info("4", "h"))), None);
}

#[test]
fn an_update_on_top_of_an_unseen_create_still_hides_the_absence() {
    let w = CopyWrites::default();
    w.record(key("a"), None, Some(info("5", "h")));
    w.record(key("a"), Some("5"), Some(info("6", "h2")));
    assert_eq!(w.resolve(&key("a"), None), Some(info("6", "h2")));
    assert_eq!(
        w.resolve(&key("a"), Some(info("5", "h"))),
        Some(info("6", "h2"))
    );
}

#[test]
fn unseen_creates_are_listed_for_their_owner_only() {
    let w = CopyWrites::default();
    w.record(key("a"), None, Some(info("5", "h")));
    w.record(key("b"), Some("3"), Some(info("6", "h")));
    let unseen = w.created_unseen(&owner("m"), |_, _| false);
    assert_eq!(unseen, [(ObjectKey::new("a", "ca"), info("5", "h"))]);
    assert!(w.created_unseen(&owner("m"), |_, _| true).is_empty());
    assert!(w.created_unseen(&owner("x"), |_, _| false).is_empty());
    w.record(key("a"), Some("5"), None);
    assert!(
        w.created_unseen(&owner("m"), |_, _| false).is_empty(),
        "a copy created then deleted is not listed"
    );
}

#[test]
fn an_expired_write_is_ignored_and_swept() {
    let w = CopyWrites::expiring_after(Duration::ZERO);
    w.record(key("a"), None, Some(info("5", "h")));
    assert_eq!(w.resolve(&key("a"), None), None);
    w.record(key("b"), None, Some(info("6", "h")));
    assert!(w.created_unseen(&owner("m"), |_, _| false).is_empty());
    w.record(key("c"), None, Some(info("7", "h")));
    assert_eq!(w.len(), 1, "each record sweeps what has expired");
}

#[test]
fn a_write_within_its_lifetime_is_kept() {
    let w = CopyWrites::expiring_after(Duration::from_secs(3600));
    w.record(key("a"), None, Some(info("5", "h")));
    w.record(key("b"), None, Some(info("6", "h")));
    assert_eq!(w.len(), 2);
    assert!(w.resolve(&key("a"), None).is_some());
}

#[test]
fn a_sweep_keeps_the_writes_that_have_not_expired() {
    let w = CopyWrites::expiring_after(Duration::from_secs(10));
    let start = Instant::now();
    let at = |secs| start + Duration::from_secs(secs);
    w.insert(key("old"), ABSENT, Some(info("5", "h")), at(0));
    w.insert(key("young"), ABSENT, Some(info("5", "h")), at(5));
    w.insert(key("new"), ABSENT, Some(info("5", "h")), at(12)); // sweeps "old" (12 s), not "young" (7 s)
    let mut left: Vec<String> = w
        .lock()
        .entries
        .keys()
        .map(|k| k.object.namespace.to_string())
        .collect();
    left.sort();
    assert_eq!(left, ["new", "young"]);
}

#[test]
fn a_mirror_cache_two_writes_behind_reads_as_the_last_write() {
    let w = MirrorWrites::default();
    w.record(owner("m"), Some("1"), Some(mirror_at("2", "finalizer")));
    w.record(owner("m"), Some("2"), Some(mirror_at("3", "status")));
    for stale in ["1", "2"] {
        assert_eq!(seen_over(&w, stale, "cached"), "status", "cache at {stale}");
    }
    assert_eq!(seen_over(&w, "3", "cached"), "cached");
    assert!(w.is_empty(), "the entry goes once the cache has caught up");
}

#[test]
fn looking_up_our_own_write_keeps_what_it_replaced() {
    let w = MirrorWrites::default();
    w.record(owner("m"), Some("1"), Some(mirror_at("2", "finalizer")));
    let ours = w.newest(&owner("m"), mirror_at("2", "held"));
    assert_eq!(note(Some(ours)), "held", "nothing newer than our own write");
    let held_before = w.newest(&owner("m"), mirror_at("1", "held"));
    assert_eq!(note(Some(held_before)), "finalizer");
    assert_eq!(
        seen_over(&w, "1", "cached"),
        "finalizer",
        "a cache still behind our write reads as it, whatever was looked up since"
    );
}

/// A copy watch event of the copy `key("a")` at `rv`, and what the cache held before it.
fn copy_event(change: fn(Object) -> Change<Object>, rv: &str) -> Change<Object> {
    let mut meta = ObjectMeta::named(Some("a"), "ca");
    meta.resource_version = Some(rv.into());
    change(Object {
        metadata: meta,
        ..Object::default()
    })
}

#[test]
fn a_create_seen_and_then_deleted_by_someone_else_reads_as_absent() {
    let w = CopyWrites::default();
    w.record(key("a"), None, Some(info("5", "ours")));
    let kind = SourceKind::ConfigMap;
    w.observe_event(kind, &copy_event(Change::Applied, "5"), None);
    w.observe_event(
        kind,
        &copy_event(Change::Deleted, "6"),
        Some(&info("5", "ours")),
    );
    assert_eq!(
        w.resolve(&key("a"), None),
        None,
        "the copy is gone: write it again"
    );
}

#[test]
fn a_deletion_seen_after_the_create_was_recorded_drops_it_too() {
    let w = CopyWrites::default();
    w.record(key("a"), None, Some(info("5", "ours")));
    let held = info("5", "ours");
    w.observe_event(
        SourceKind::ConfigMap,
        &copy_event(Change::Deleted, "6"),
        Some(&held),
    );
    assert_eq!(w.resolve(&key("a"), None), None);
}

#[test]
fn events_of_versions_our_writes_replaced_keep_them() {
    let w = CopyWrites::default();
    let kind = SourceKind::ConfigMap;
    w.record(key("a"), Some("4"), None);
    w.record(key("a"), None, Some(info("7", "recreated")));
    let old = info("4", "old");
    w.observe_event(kind, &copy_event(Change::Applied, "4"), None);
    w.observe_event(kind, &copy_event(Change::Deleted, "5"), Some(&old));
    assert_eq!(
        w.resolve(&key("a"), None),
        Some(info("7", "recreated")),
        "the old copy's deletion says nothing of the one written after it"
    );
    w.observe_event(kind, &copy_event(Change::Applied, "7"), None);
    assert!(w.is_empty(), "the cache caught up with the recreated copy");
}

#[test]
fn a_change_by_someone_else_drops_the_entry() {
    let w = MirrorWrites::default();
    w.record(owner("m"), Some("1"), Some(mirror_at("2", "ours")));
    assert_eq!(seen_over(&w, "5", "theirs"), "theirs");
    assert_eq!(seen_over(&w, "1", "old"), "old");
}

#[test]
fn a_write_not_on_top_of_ours_starts_over() {
    let w = MirrorWrites::default();
    w.record(owner("m"), Some("1"), Some(mirror_at("2", "first")));
    w.record(owner("m"), Some("7"), Some(mirror_at("8", "second")));
    assert_eq!(seen_over(&w, "1", "cached"), "cached");
}

#[test]
fn a_gone_object_is_forgotten() {
    let w = MirrorWrites::default();
    w.record(owner("m"), Some("1"), Some(mirror_at("2", "ours")));
    w.forget(&owner("m"));
    assert!(w.is_empty());
}

#[test]
fn a_write_is_remembered_in_few_bytes() {
    assert_eq!(size_of::<CopyKey>(), 40);
    assert_eq!(size_of::<Entry<CopyInfo>>(), 112);
}

#[test]
fn versions_compare_as_their_strings_do() {
    let w = CopyWrites::default();
    w.record(key("a"), Some("007"), Some(info("8", "ours")));
    assert_eq!(
        w.resolve(&key("a"), Some(info("7", "theirs"))),
        Some(info("7", "theirs"))
    );
    w.record(key("b"), Some("abc"), Some(info("8", "ours")));
    let hidden = w.resolve(&key("b"), Some(info("abc", "old")));
    assert_eq!(hidden, Some(info("8", "ours")));
}
