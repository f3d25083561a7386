//! e2e: a copy another writer keeps changing back is contested; skiff backs off and says so.
//!
//! Why: two controllers that each restore the same object fight forever, at the pace of the
//! faster one, unless one of them notices. The fighters here are kubectl, never skiff's field
//! manager: one watches its copies and patches its own data back at once (field manager
//! `fighter-patch`), as a second copier does; one re-applies with server-side apply as
//! `argocd-controller`, forcing, as Argo CD's self-heal does. The writes are counted in the API
//! server's audit log, so what is measured is what the server took.
//!
//! Real time, as the binary runs and kubectl fights it: the test asserts what was written and
//! in what order (counted in the audit log); each wait is a liveness bound of 10× or more. The
//! backoff's steps are pinned in virtual time by `src/mirror/contest/tests.rs`; the counts
//! here are bounded by them from below (a slower machine only writes fewer times).

use std::process::Child;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, require_e2e_binaries};
use crate::support::mirror_e2e::{
    SELECT_LABEL, STEP_TIMEOUT, mirror, source_configmap, wait_until, with_replica,
};
use crate::support::scrape::{scrape, sum_samples};
use serde_json::{Value, json};

const SOURCE: &str = "contest-src";
const THEIRS: &str = "from-fighter";
/// How long the fighters fight: long enough for several backoff steps. `CONTEST_FIGHT_SECS`
/// makes it longer, to measure (BENCHMARKS.md).
fn fight_for() -> Duration {
    let secs = std::env::var("CONTEST_FIGHT_SECS")
        .ok()
        .and_then(|s| s.parse().ok());
    Duration::from_secs(secs.unwrap_or(25))
}

/// The most restorations of one copy skiff may make in `d` under a fighter that never stops:
/// at 0 s, then after steps of 1 s doubling to 5 min, each at least its nominal length.
fn most_writes(d: Duration) -> usize {
    let (mut n, mut at, mut step) = (0, Duration::ZERO, Duration::from_secs(1));
    while at <= d {
        n += 1;
        at += step;
        step = (step * 2).min(Duration::from_secs(300));
    }
    n
}
const SKIFF_USER: &str = "system:serviceaccount:skiff-system:skiff";
/// How long the fight takes to make every copy contested: three undone restorations, at 0 s,
/// after 1–2 s and 2–4 s, each undone at once: about 6 s. A liveness bound, 10× that.
const CONTESTED_WITHIN: Duration = Duration::from_secs(60);
/// Once the fighters stop, each copy is restored at its next backoff step, at most twice its
/// nominal length (the jitter); this many times that is the liveness bound of the wait.
const STEP_LIVENESS: u32 = 10;

/// How a fighter writes its value back.
#[derive(Clone, Copy)]
enum How {
    Patch,
    ServerSideApply,
}

impl How {
    fn write(self, cp: &ControlPlane, ns: &str) {
        match self {
            How::Patch => {
                let patch = json!({"data": {"k": THEIRS}}).to_string();
                let args = ["patch", "configmap", SOURCE, "-n", ns, "--type=merge", "-p"];
                let manager = "--field-manager=fighter-patch";
                cp.kubectl(&[&args[..], &[&patch, manager]].concat());
            }
            How::ServerSideApply => {
                let manifest = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": SOURCE, "namespace": ns}, "data": {"k": THEIRS}});
                let args = [
                    "apply",
                    "--server-side",
                    "--force-conflicts",
                    "--field-manager=argocd-controller",
                    "-f",
                    "-",
                ];
                cp.kubectl_stdin(&args, &manifest.to_string());
            }
        }
    }
}

/// A kubectl watch of one copy's `k`, one line per change.
fn watch(cp: &ControlPlane, ns: &str) -> (Child, impl Iterator<Item = String> + use<>) {
    cp.admin().watch_field("configmap", ns, SOURCE, ".data.k")
}

/// Another writer of one copy: each time the copy shows the source's value, it writes its own.
struct Fighter {
    watch: Child,
    thread: JoinHandle<()>,
}

impl Fighter {
    fn start(cp: &'static ControlPlane, ns: &str, how: How) -> Fighter {
        let (watch, lines) = watch(cp, ns);
        let ns = ns.to_owned();
        let thread = thread::spawn(move || {
            for line in lines {
                if line.trim() != THEIRS {
                    how.write(cp, &ns);
                }
            }
        });
        Fighter { watch, thread }
    }

    /// Stops the watch; returns once the fighter's last write is done.
    fn stop(mut self) {
        let _ = self.watch.kill();
        let _ = self.watch.wait();
        let _ = self.thread.join();
    }
}

/// skiff's writes of the copy in `ns` the server received since `since`.
fn skiff_writes(cp: &ControlPlane, ns: &str, since: SystemTime) -> usize {
    let uri = format!("/api/v1/namespaces/{ns}/configmaps/{SOURCE}");
    cp.audit()
        .iter()
        .filter(|e| e.user == SKIFF_USER && e.is_write() && e.received >= since)
        .filter(|e| e.uri.starts_with(&uri) && e.stage == "ResponseComplete")
        .count()
}

fn copy_value(cp: &ControlPlane, ns: &str) -> Option<String> {
    let copy = cp.object("configmap", ns, SOURCE)?;
    copy["data"]["k"].as_str().map(str::to_owned)
}

fn condition(cp: &ControlPlane, name: &str, type_: &str) -> Option<Value> {
    let mirror = cp.object("mirror", OPERATOR_NAMESPACE, name)?;
    let conditions = mirror["status"]["conditions"].as_array()?.clone();
    conditions.into_iter().find(|c| c["type"] == type_)
}

/// CPU seconds (user and system) the process `pid` has used.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// A Mirror with `conflicts: Yield` whose one copy has the fought copies' name; its namespace.
fn yield_mirror(cp: &ControlPlane) -> String {
    source_configmap(cp, "contest-yield-src", r#"{"k": "from-source"}"#);
    let extra = format!(r#""targetName": "{SOURCE}", "conflicts": "Yield","#);
    mirror(
        cp,
        "contest-yield",
        "ConfigMap",
        "contest-yield-src",
        &extra,
        "contest-yield",
    );
    cp.create_namespace("contest-yield", &[(SELECT_LABEL, "contest-yield")])
}

/// Under Yield, skiff restores the copy in `ns` once, then leaves it to the fighter until the
/// source changes; a new source is copied once more, and yielded again.
fn yielded_until_the_source_changes(cp: &ControlPlane, ns: &str, since: SystemTime) {
    wait_until("Contested under Yield", || {
        condition(cp, "contest-yield", "Contested").is_some_and(|c| {
            let message = c["message"].as_str().unwrap_or("");
            c["status"] == "True" && message.contains("spec.conflicts: Yield")
        })
    });
    assert_eq!(copy_value(cp, ns).as_deref(), Some(THEIRS));
    assert_eq!(skiff_writes(cp, ns, since), 1, "one restoration, then none");
    source_configmap(cp, "contest-yield-src", r#"{"k": "from-source", "x": "2"}"#);
    wait_until("the new source copied, then changed back", || {
        cp.object("configmap", ns, SOURCE)
            .is_some_and(|c| c["data"]["x"] == "2" && c["data"]["k"] == THEIRS)
    });
    thread::sleep(Duration::from_secs(2));
    assert_eq!(
        skiff_writes(cp, ns, since),
        2,
        "the new source once, then none"
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_copy_another_writer_keeps_changing_back_is_contested_and_restored_with_backoff() {
    require_e2e_binaries();
    with_replica("contest", |cp, replica| {
        source_configmap(cp, SOURCE, r#"{"k": "from-source"}"#);
        mirror(cp, "contest", "ConfigMap", SOURCE, "", "contest");
        let labels = [(SELECT_LABEL, "contest")];
        let fought: Vec<String> = (0..5)
            .map(|_| cp.create_namespace("contest", &labels))
            .collect();
        let calm = cp.create_namespace("contest", &labels);
        source_configmap(cp, "contest-other-src", r#"{"k": "v1"}"#);
        mirror(
            cp,
            "contest-other",
            "ConfigMap",
            "contest-other-src",
            "",
            "contest-other",
        );
        let other_labels = [(SELECT_LABEL, "contest-other")];
        let others: Vec<String> = (0..2)
            .map(|_| cp.create_namespace("contest-other", &other_labels))
            .collect();
        let yielding = yield_mirror(cp);
        let mirrored = |ns: &str, value: &str, name: &str| {
            cp.object("configmap", ns, name)
                .is_some_and(|c| c["data"]["k"] == value)
        };
        wait_until("every copy", || {
            fought
                .iter()
                .chain([&calm, &yielding])
                .all(|ns| mirrored(ns, "from-source", SOURCE))
                && others
                    .iter()
                    .all(|ns| mirrored(ns, "v1", "contest-other-src"))
        });

        let pid = replica.skiff.child.id();
        let (cpu_before, wall0, t0) = (cpu_seconds(pid), SystemTime::now(), Instant::now());
        let ways = [
            How::Patch,
            How::Patch,
            How::Patch,
            How::ServerSideApply,
            How::ServerSideApply,
        ];
        let fighters: Vec<Fighter> = fought
            .iter()
            .chain([&yielding])
            .zip(ways.into_iter().chain([How::ServerSideApply]))
            .map(|(ns, how)| Fighter::start(cp, ns, how))
            .collect();

        // Contested, naming both other writers; Ready says so, and so do the printer column,
        // the metric and a Warning Event.
        let contested = || condition(cp, "contest", "Contested").filter(|c| c["status"] == "True");
        let says_all = |c: &Value| {
            let message = c["message"].as_str().unwrap_or("");
            message.contains("5 copies")
                && ["argocd-controller", "fighter-patch"]
                    .iter()
                    .all(|w| message.contains(w))
        };
        while !contested().is_some_and(|c| says_all(&c)) {
            assert!(
                t0.elapsed() < CONTESTED_WITHIN,
                "no Contested: {:?}",
                contested()
            );
            thread::sleep(Duration::from_millis(200));
        }
        let to_contested = t0.elapsed();
        let ready = condition(cp, "contest", "Ready").expect("a Ready condition");
        assert_eq!(
            (&ready["status"], &ready["reason"]),
            (&json!("False"), &json!("Contested"))
        );
        let row = cp.kubectl_ok(&[
            "get",
            "mirror",
            "contest",
            "-n",
            OPERATOR_NAMESPACE,
            "--no-headers",
        ]);
        assert_eq!(
            row.split_whitespace().nth(6),
            Some("5"),
            "CONTESTED column: {row}"
        );
        let metric = sum_samples(
            &scrape(replica.metrics_port),
            "skiff_mirror_contested_copies",
            &[("namespace", OPERATOR_NAMESPACE), ("name", "contest")],
        );
        assert_eq!(metric, 5.0);
        wait_until("a Warning Event", || {
            crate::support::mirror_e2e::has_event(
                cp,
                "contest",
                "Warning",
                "Contested",
                "reported as",
            )
        });

        // A one-off hand edit elsewhere is still restored, by one write, while the fight goes
        // on: the copy in another namespace is not held back by the contested ones (pinned in
        // virtual time: `a_held_copy_holds_no_other_copy_or_mirror`). The time between the
        // watch events of the edit and of the restoration is printed.
        let (mut calm_watch, lines) = watch(cp, &calm);
        let (seen, arrivals) = std::sync::mpsc::channel();
        let reader = thread::spawn(move || {
            for line in lines {
                let _ = seen.send((Instant::now(), line));
            }
        });
        let arrived = |value: &str| loop {
            match arrivals.recv_timeout(STEP_TIMEOUT) {
                Ok((at, line)) if line == value => break at,
                Ok(_) => {}
                Err(e) => panic!("no {value} from the watch of {calm}: {e}"),
            }
        };
        // The watch's first line is the copy as listed: only then is the edit sure to be seen.
        arrived("from-source");
        let edit = json!({"data": {"k": "hand-edit"}}).to_string();
        let before_edit = SystemTime::now();
        cp.kubectl_ok(&[
            "patch",
            "configmap",
            SOURCE,
            "-n",
            &calm,
            "--type=merge",
            "-p",
            &edit,
        ]);
        let edited = arrived("hand-edit");
        let restored_in = arrived("from-source") - edited;
        let _ = calm_watch.kill();
        let _ = calm_watch.wait();
        let _ = reader.join();
        // The audit log has a write once its response is complete, maybe after the watch saw it.
        wait_until("the restoration in the audit log", || {
            skiff_writes(cp, &calm, before_edit) >= 1
        });
        assert_eq!(
            skiff_writes(cp, &calm, before_edit),
            1,
            "the hand edit restored by one write"
        );

        // Another Mirror's copies keep converging during the fight (liveness: `wait_until`,
        // 20 s, for what takes well under a second).
        source_configmap(cp, "contest-other-src", r#"{"k": "v2"}"#);
        let changed = Instant::now();
        wait_until("the other Mirror's copies", || {
            others
                .iter()
                .all(|ns| mirrored(ns, "v2", "contest-other-src"))
        });
        let other_in = changed.elapsed();

        yielded_until_the_source_changes(cp, &yielding, wall0);

        thread::sleep(fight_for().saturating_sub(t0.elapsed()));
        for fighter in fighters {
            fighter.stop();
        }
        let (stopped, fought_for) = (Instant::now(), t0.elapsed());
        let cpu = cpu_seconds(pid) - cpu_before;

        // Writes per copy: restorations at 0 s, then after 1-2, 2-4, 4-8, 8-16 s ...: at most
        // 5 in 25 s (without backoff: about 4 a second).
        let writes: Vec<usize> = fought
            .iter()
            .map(|ns| skiff_writes(cp, ns, wall0))
            .collect();
        eprintln!(
            "contest: Contested after {to_contested:?}; skiff's writes per contested copy in \
             {fought_for:?}: {writes:?}; skiff CPU over the fight {cpu:.2} s; one-off edit \
             restored in {restored_in:?}; other Mirror converged in {other_in:?}"
        );
        let most = most_writes(fought_for);
        for (ns, n) in fought.iter().zip(&writes) {
            assert!(
                (3..=most).contains(n),
                "{n} writes of the copy in {ns} in {fought_for:?} (at most {most})"
            );
        }

        // The fighters stopped: each copy is restored at its next backoff step (after n undone
        // restorations, 2^(n-1) s, times the jitter of 1-2), by one more write.
        for (ns, n) in fought.iter().zip(&writes) {
            let step = Duration::from_secs((1u64 << (n - 1).min(9)).min(300));
            let bound = STEP_LIVENESS * 2 * step;
            while copy_value(cp, ns).as_deref() != Some("from-source") {
                assert!(
                    stopped.elapsed() <= bound,
                    "{ns} not restored within {bound:?}"
                );
                thread::sleep(Duration::from_millis(200));
            }
        }
        // At most one more write each: the restoration (it may have been counted above, if it
        // came before the count).
        let after: Vec<usize> = fought
            .iter()
            .map(|ns| skiff_writes(cp, ns, wall0))
            .collect();
        for ((ns, n), m) in fought.iter().zip(&writes).zip(&after) {
            assert!(
                *m <= n + 1,
                "{m} writes of the copy in {ns}, {n} when the fighters stopped"
            );
        }
        let all_restored = stopped.elapsed();
        assert_eq!(
            copy_value(cp, &yielding).as_deref(),
            Some(THEIRS),
            "yielded"
        );
        assert_eq!(skiff_writes(cp, &yielding, wall0), 2, "under Yield");
        eprintln!("contest: after the fighters stopped, every copy restored in {all_restored:?}");
    });
}
