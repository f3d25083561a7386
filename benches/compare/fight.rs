//! Another writer that never stops, the same for every operator: one source copied into
//! [`NAMESPACES`] namespaces, and a fighter per copy that watches it and, each time it carries
//! the source's data, patches its own back at once (field manager `fighter-patch`, as the
//! admin: neither operator's name), as a second copier or a script without backoff does.
//!
//! Over the window (`COMPARE_FIGHT`, 120 s by default): the operator's writes of the copies
//! the API server took (its audit log; refused ones, e.g. 409 conflicts, apart), the fighter's
//! writes, the operator's CPU time, and what it reports: Events about the source, the Mirror
//! or a copy, and for skiff the Mirror's `Contested` condition.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use crate::far::cpu_time;
use crate::lease_watch::LeaseWatch;
use crate::lifecycle::wait_leading;
use crate::operator::{Launch, Operator};
use crate::support::control_plane::ControlPlane;
use crate::world::{self, Identity};

/// Label of the fought namespaces.
pub const FIGHT: &str = "compare.skiff.dev/fight";
pub const NAMESPACES: usize = 5;
/// The source's payload (`world::create_source`) and the fighter's.
const OURS: &str = "compare payload";
const THEIRS: &str = "from-fighter";
const STEP: Duration = Duration::from_secs(60);

/// One operator's figures over the window.
#[derive(Debug, Clone, Default)]
pub struct Fought {
    pub label: &'static str,
    pub window: Duration,
    /// The operator's writes of the copies the server took, and those it refused.
    pub writes: usize,
    pub refused: usize,
    /// Its writes per copy, in namespace order.
    pub per_copy: Vec<usize>,
    /// Its writes in the second half of the window (is it slowing down?).
    pub second_half: usize,
    pub fighter_writes: usize,
    pub cpu: Duration,
    /// Events about the source, Mirror or copies during the window.
    pub events: u64,
    /// skiff's `Contested` condition at the end, its status and first clause; `None` for the peer.
    pub condition: Option<String>,
}

/// The fought namespaces, `fight-0` .. `fight-4`.
pub fn create_namespaces(cp: &ControlPlane) {
    for i in 0..NAMESPACES {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": format!("fight-{i}"), "labels": {FIGHT: "true"}}});
        cp.apply(&ns.to_string());
    }
}

pub fn run(
    cp: &ControlPlane,
    operator: &Operator,
    identity: &Identity,
    window: Duration,
) -> Fought {
    let launch = Launch::new(cp, operator, identity, FIGHT, "fight");
    world::free_lease(cp, operator);
    let (namespace, name) = operator.lease();
    let watch = LeaseWatch::start(cp, namespace, name);
    let mut leader = launch.start("fight");
    wait_leading(&watch, &mut leader, operator);
    world::create_source(cp, &launch);
    let namespaces: Vec<String> = (0..NAMESPACES).map(|i| format!("fight-{i}")).collect();
    let started = Instant::now();
    while world::copies_with(cp, &launch, OURS).0 < NAMESPACES {
        assert!(
            started.elapsed() < STEP,
            "{}: copies incomplete; log:\n{}",
            operator.label,
            leader.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let fighter_writes = AtomicUsize::new(0);
    let events_before = events(cp, &launch.tag);
    let (since, cpu_before) = (SystemTime::now(), cpu_time(leader.pid()));
    let half = since + window / 2;
    std::thread::scope(|scope| {
        let mut watches = Vec::new();
        for ns in &namespaces {
            let (child, lines) =
                cp.admin()
                    .watch_field("configmap", ns, &launch.tag, ".data.ca\\.crt");
            watches.push(child);
            let (tag, count) = (&launch.tag, &fighter_writes);
            scope.spawn(move || {
                for line in lines {
                    if line.trim() != THEIRS && patch_copy(cp, ns, tag) {
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        std::thread::sleep(window);
        for mut child in watches {
            let _ = child.kill();
            let _ = child.wait();
        }
    });
    let cpu = cpu_time(leader.pid()).saturating_sub(cpu_before);
    let condition = operator
        .is_skiff()
        .then(|| contested(cp, namespace, &launch.tag));
    drop(leader);

    let user = world::user(operator);
    let until = since + window;
    let writes: Vec<(usize, SystemTime, bool)> = cp
        .audit()
        .into_iter()
        .filter(|e| e.user == user && e.is_write() && e.stage == "ResponseComplete")
        .filter(|e| e.received >= since && e.received <= until)
        .filter_map(|e| {
            let i = namespaces.iter().position(|ns| {
                e.uri.starts_with(&format!(
                    "/api/v1/namespaces/{ns}/configmaps/{}",
                    launch.tag
                ))
            })?;
            let taken = e.code.is_some_and(|c| (200..300).contains(&c));
            Some((i, e.received, taken))
        })
        .collect();
    let taken = || writes.iter().filter(|w| w.2);
    Fought {
        label: operator.label,
        window,
        writes: taken().count(),
        refused: writes.len() - taken().count(),
        per_copy: (0..NAMESPACES)
            .map(|i| taken().filter(|w| w.0 == i).count())
            .collect(),
        second_half: taken().filter(|w| w.1 >= half).count(),
        fighter_writes: fighter_writes.into_inner(),
        cpu,
        events: events(cp, &launch.tag).saturating_sub(events_before),
        condition,
    }
}

/// The fighter's write; whether the server took it.
fn patch_copy(cp: &ControlPlane, ns: &str, name: &str) -> bool {
    let patch = json!({"data": {"ca.crt": THEIRS}}).to_string();
    let args = [
        "patch",
        "configmap",
        name,
        "-n",
        ns,
        "--type=merge",
        "-p",
        &patch,
        "--field-manager=fighter-patch",
    ];
    cp.kubectl(&args).status.success()
}

/// Events about an object named `name` (the source, the Mirror, a copy) so far, repeats
/// counted.
fn events(cp: &ControlPlane, name: &str) -> u64 {
    let list = cp.get_json(&["events", "-A"]).unwrap_or(Value::Null);
    let items = list["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter(|e| e["involvedObject"]["name"] == name)
        .map(|e| {
            e["count"]
                .as_u64()
                .or(e["series"]["count"].as_u64())
                .unwrap_or(1)
        })
        .sum()
}

/// The Mirror's `Contested` condition, as its status and first clause.
fn contested(cp: &ControlPlane, namespace: &str, name: &str) -> String {
    let mirror = cp.object("mirror", namespace, name).unwrap_or(Value::Null);
    let conditions = mirror["status"]["conditions"].as_array().cloned();
    conditions
        .unwrap_or_default()
        .iter()
        .find(|c| c["type"] == "Contested")
        .map_or("no `Contested` condition".into(), |c| {
            // Its first clause: how many copies, and who was reported.
            let message = c["message"].as_str().unwrap_or("");
            let clause = message.split(", in:").next().unwrap_or(message);
            format!(
                "`Contested={}`: {clause}",
                c["status"].as_str().unwrap_or("?")
            )
        })
}

pub fn render(all: &[Fought]) -> String {
    let mut out = String::new();
    let Some(first) = all.first() else {
        return out;
    };
    let secs = first.window.as_secs_f64();
    let _ = writeln!(
        out,
        "\n### Another writer that never stops ({NAMESPACES} copies fought for {secs:.0} s)\n\n\
         One source copied into {NAMESPACES} namespaces; per copy, a fighter watches it and \
         patches its own data back each time it carries the source's (field manager \
         `fighter-patch`, no backoff). Writes are those the API server took (its audit log), \
         per minute over the window; CPU is user + system time from /proc/PID/stat. \
         Reported: Events about the source, Mirror or copies, and skiff's `Contested` \
         condition at the end.\n"
    );
    let _ = writeln!(
        out,
        "| operator | its writes of the copies per minute | per copy; in the second half | refused (409) | fighter's writes per minute | CPU | Events | condition |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for f in all {
        let per_minute = |n: usize| n as f64 * 60.0 / f.window.as_secs_f64();
        let per_copy: Vec<String> = f.per_copy.iter().map(usize::to_string).collect();
        let _ = writeln!(
            out,
            "| {} | {:.1} ({} in all) | {}; {} | {} | {:.1} | {:.2} s | {} | {} |",
            f.label,
            per_minute(f.writes),
            f.writes,
            per_copy.join(", "),
            f.second_half,
            f.refused,
            per_minute(f.fighter_writes),
            f.cpu.as_secs_f64(),
            f.events,
            f.condition.as_deref().unwrap_or("none (no status)"),
        );
    }
    out
}
