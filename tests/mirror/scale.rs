//! Cost proportional to what changed: a Namespace event wakes only the Mirrors whose
//! selection it changed, and a long fan-out reports its progress in the status as it goes.

use crate::support::cluster::{Cluster, HOME};
use crate::support::scrape::{scrape, sum_samples};
use crate::support::skiff::{Skiff, eventually, free_port};
use serde_json::json;
use std::time::Duration;

/// Mirrors that select nothing: with every Namespace event waking every Mirror, each of
/// these would be reconciled once per event.
const IDLE_MIRRORS: usize = 20;
const TEAMS: usize = 10;

/// (queue adds, reconciles) of the Mirror controller so far.
fn work_done(port: u16) -> (f64, f64) {
    let metrics = scrape(port);
    (
        sum_samples(&metrics, "workqueue_adds_total", &[("name", "mirror")]),
        sum_samples(
            &metrics,
            "controller_runtime_reconcile_total",
            &[("controller", "mirror")],
        ),
    )
}

/// How long the controller may take to catch up with a few events: a liveness bound, 10× and
/// more of the milliseconds it takes.
const LIVENESS: Duration = Duration::from_secs(20);

/// (queue adds, reconciles) once every add so far has been reconciled. Each add is reconciled
/// exactly once (a key added while it waits is not added again), so the two counts are equal
/// only when no key waits or runs.
fn caught_up(skiff: &Skiff, port: u16) -> (f64, f64) {
    let mut counts = work_done(port);
    let met = eventually(LIVENESS, || {
        counts = work_done(port);
        counts.0 == counts.1
    });
    assert!(met, "never caught up: {counts:?}\n{}", skiff.logs());
    counts
}

/// The work counters once the controller has done what the Mirrors' creation and status
/// writes asked of it, every Mirror's status being written: a mark instead of a quiet spell.
/// Mirror events come in order on one watch, so a spec change of the idle Mirror `marker`
/// comes after the event of every status write before it. Once the marker's own status write
/// is seen, those events were queued; once caught up, reconciled. Only the event of the
/// marker's own status write may come later: one add and one reconcile.
fn settled(cluster: &Cluster, skiff: &Skiff, port: u16, marker: &str) -> (f64, f64) {
    let path = format!("/apis/skiff.dev/v1alpha1/namespaces/{HOME}/mirrors/{marker}");
    let mut mirror = cluster.server.get(&path).expect("the marker Mirror");
    let selector = json!({"matchLabels": {"nobody": format!("{marker}-marked")}});
    mirror["spec"]["namespaceSelector"] = selector;
    let generation = cluster.server.update(mirror)["metadata"]["generation"].clone();
    cluster.wait_for(skiff, "the marker's status", || {
        let marked = cluster.mirror_object(HOME, marker);
        marked.is_some_and(|m| m["status"]["observedGeneration"] == generation)
    });
    caught_up(skiff, port)
}

#[test]
fn a_namespace_event_that_changes_no_selection_enqueues_nothing() {
    let mut cluster = Cluster::new("no-selection-change");
    let teams = cluster.namespaces("team", TEAMS, json!({"team": "yes"}));
    cluster.namespace("newcomer", json!({"team": "no"}));
    cluster.team_ca_mirror();
    for i in 0..IDLE_MIRRORS {
        let selector = json!({"matchLabels": {"nobody": format!("m{i}")}});
        cluster.mirror(HOME, &format!("idle-{i}"), "ConfigMap", "app-ca", selector);
    }
    let port = free_port();
    let metrics = format!("--metrics-bind-address=127.0.0.1:{port}");
    let skiff = cluster.start(&[&metrics, "--metrics-secure=false"]);
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
    for i in 0..IDLE_MIRRORS {
        cluster.wait_ready(&skiff, HOME, &format!("idle-{i}"), "True", "Synced");
    }
    let before = settled(&cluster, &skiff, port, "idle-0");

    for ns in &teams {
        cluster.relabel_namespace(ns, json!({"team": "yes", "cost-center": "42"}));
    }
    // Watch events arrive in order: once this relabel's copy exists, the ones above were seen.
    cluster.relabel_namespace("newcomer", json!({"team": "yes"}));
    cluster.wait_for(&skiff, "the newcomer's copy", || {
        cluster.configmap_at("newcomer", "app-ca").is_some()
    });
    // The relabels' events came before the newcomer's on the Namespace watch, so they were
    // queued before its copy was written.
    let after = caught_up(&skiff, port);

    let (adds, reconciles) = (after.0 - before.0, after.1 - before.1);
    println!(
        "{TEAMS} relabels changing nothing + 1 selecting a namespace: {adds} queue adds, {reconciles} reconciles"
    );
    // The one selection change wakes `ca`; its copy's event and its status write may wake it
    // again, and the marker's status write may wake `idle-0` once more (see `settled`).
    // Waking every Mirror per event would be hundreds.
    assert!(adds <= 4.0, "{adds} queue adds for one selection change");
    assert!(
        reconciles <= 4.0,
        "{reconciles} reconciles for one selection change"
    );
}

#[test]
fn a_progress_status_appears_before_a_long_fan_out_ends() {
    const NAMESPACES: usize = 150;
    let mut cluster = Cluster::new("progress");
    cluster.namespaces("team", NAMESPACES, json!({"team": "yes"}));
    cluster.team_ca_mirror();
    // 150 creates at 20 per second: about 7.5 s, past the first 5 s progress report.
    let skiff = cluster.start(&["--kube-api-qps=20", "--kube-api-burst=1"]);
    let mut seen = None;
    let progressing = eventually(Duration::from_secs(30), || {
        let ready = cluster.ready(HOME, "ca");
        if ready["reason"] == "Progressing" {
            seen = cluster.mirror_object(HOME, "ca");
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
        false
    });
    assert!(
        progressing,
        "no Progressing status during the fan-out\n{}",
        skiff.logs()
    );
    let status = &seen.expect("the Mirror")["status"];
    let synced = status["synced"].as_u64().unwrap_or_default();
    println!("progress: {}", status["conditions"][0]["message"]);
    assert_eq!(status["selected"], NAMESPACES);
    assert!(synced > 0 && synced < NAMESPACES as u64, "{status}");
    assert_eq!(status["conditions"][0]["status"], "False");
    assert_eq!(
        status["conditions"][0]["message"],
        format!("{synced} of {NAMESPACES} copies up to date")
    );
    cluster.wait_ready(&skiff, HOME, "ca", "True", "Synced");
}
