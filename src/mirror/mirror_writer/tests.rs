use super::*;
use crate::kube::Config;
use crate::kube::api::ObjectMeta;

fn writer() -> MirrorWriter {
    let nowhere = "http://127.0.0.1:9".parse().expect("url");
    MirrorWriter::new(Client::new(Config::new(nowhere)).expect("client"), None)
}

fn mirror_at(rv: &str, finalizer: bool) -> Mirror {
    let mut m = Mirror {
        metadata: ObjectMeta::named(Some("src"), "m"),
        ..Mirror::default()
    };
    m.metadata.resource_version = Some(rv.into());
    if finalizer {
        m.metadata.finalizers.push(FINALIZER.to_owned());
    }
    m
}

fn version(m: &Mirror) -> &str {
    m.metadata.resource_version()
}

/// Reconciles in a row while the Mirror cache lags: the first adds the finalizer (1 → 2) and
/// writes the status (2 → 3); the second finds nothing to write. A third, its cache still at
/// 2, must base its status on 3, or the server refuses it with a 409.
#[test]
fn a_reconcile_that_wrote_nothing_leaves_the_next_one_our_last_write() {
    let w = writer();
    let owner = Owner::of(&mirror_at("1", false));
    w.remember(&mirror_at("1", false), mirror_at("2", true));
    let held = w.refreshed(&mirror_at("2", true));
    w.remember(&held, mirror_at("3", true));
    let second = w.latest(&owner, mirror_at("2", true));
    assert_eq!(version(&second), "3");
    assert_eq!(version(&w.refreshed(&second)), "3");
    let third = w.latest(&owner, mirror_at("2", true));
    assert_eq!(
        version(&third),
        "3",
        "a lagging cache read as our last write"
    );
    assert_eq!(version(&w.latest(&owner, mirror_at("3", true))), "3");
}

/// A status written during a fan-out (a progress report) is what the final status is based on.
#[test]
fn the_final_status_is_based_on_the_progress_report_written_before_it() {
    let w = writer();
    let held = mirror_at("2", true);
    w.remember(&mirror_at("1", false), held.clone());
    w.remember(&w.refreshed(&held), mirror_at("3", true));
    assert_eq!(version(&w.refreshed(&held)), "3");
}
