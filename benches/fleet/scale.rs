//! The fleet benchmark's scale part: one real hub (kube-apiserver, etcd, skiff with
//! `--fleet-hub` at its default `--fleet-qps`), and members added step by step (100, 300,
//! 1,000 by default), each step measured once every member holds its copy and the fleet has
//! settled:
//!
//! - the members' requests to the hub while idle, per member per minute, by what they are
//!   for (the hub's audit log over the idle window);
//! - the hub API server's open watches and memory, against the same hub with no member
//!   (step 0), and what it stores for its members, listed;
//! - a hub edit to the copy in the last member (the fakes, read in-process), and when the hub
//!   skiff's Placement writes arrived (the audit log).
//!
//! Each figure is fitted with a straight line in the number of members (least squares).

use crate::hub::{self, Sample, Stored};
use crate::members::Members;
use crate::real::{STEP, verdict};
use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE};
use crate::support::fleet::install_hub;
use crate::support::skiff::{Skiff, TempDir, eventually};
use crate::world::{self, Editor, SOURCE};
use crate::{Settings, children};
use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

/// The label the fleet Mirror selects this part's clusters by.
const SELECTOR: (&str, &str) = ("bench", "scale");
/// How long the whole fleet may take to report every cluster current, and an edit to reach
/// every member: liveness bounds.
const FLEET_LIMIT: Duration = Duration::from_secs(900);

/// One step's figures.
pub struct Point {
    pub members: usize,
    /// The members' requests over the idle window, by what they are for.
    pub requests: BTreeMap<String, usize>,
    pub window: Duration,
    pub hub: Sample,
    pub stored: Vec<Stored>,
    /// The edit: to the last member's copy, and the hub's Placement writes (count, from the
    /// edit to the first and to the last).
    pub edit: Option<Edit>,
    /// The members' skiffs' RssAnon: mean and max, KiB.
    pub member_anon: (f64, u64),
    /// The machine when it was sampled: `MemAvailable` (KiB) and the load averages.
    pub available_kib: u64,
    pub load: String,
}

pub struct Edit {
    pub to_last_copy: Duration,
    pub placement_writes: usize,
    pub to_first_placement: Duration,
    pub to_last_placement: Duration,
}

impl Point {
    /// Requests per member per minute.
    pub fn rate(&self, count: usize) -> f64 {
        count as f64 / self.members.max(1) as f64 / (self.window.as_secs_f64() / 60.0)
    }

    pub fn total_rate(&self) -> f64 {
        self.rate(self.requests.values().sum())
    }
}

pub fn measure(settings: &Settings) -> Vec<Point> {
    if let Err(e) = skiff::fd_limit::raise() {
        eprintln!("fleet: {e}");
    }
    let hub = ControlPlane::start();
    install_hub(&hub);
    world::place_source_and_mirror(&hub, "v0", SELECTOR);
    let mut hub_skiff = HubSkiff::start(&hub);
    std::thread::sleep(settings.settle);
    let mut points = vec![idle_point(&hub, &Members::new(), Duration::ZERO)];
    let editor = Editor::of(&hub);
    let mut members = Members::new();
    let mut value = "v0".to_owned();
    for &count in &settings.members {
        let started = Instant::now();
        members.grow(&hub, count, SELECTOR, &value);
        wait_current(&hub, count);
        say(&format!(
            "fleet: {count} members started and current in {:.0} s",
            started.elapsed().as_secs_f64()
        ));
        std::thread::sleep(settings.settle);
        let mut point = idle_point(&hub, &members, settings.idle);
        value = format!("v{count}");
        point.edit = Some(timed_edit(&hub, &editor, &mut members, &value));
        members.assert_running();
        hub_skiff.assert_running();
        wait_current(&hub, count);
        say(&format!(
            "fleet: {count} members: {:.2} hub requests per member per minute, edit → last copy {:.2} s",
            point.total_rate(),
            point
                .edit
                .as_ref()
                .map_or(0.0, |e| e.to_last_copy.as_secs_f64())
        ));
        points.push(point);
    }
    drop(members);
    hub_skiff.stop();
    points
}

/// The idle figures, counting requests over `window` (none for step 0, which has no member).
fn idle_point(hub: &ControlPlane, members: &Members, window: Duration) -> Point {
    let since = SystemTime::now();
    std::thread::sleep(window);
    let requests = match members.len() {
        0 => BTreeMap::new(),
        _ => hub::member_requests(hub, since, SystemTime::now()),
    };
    Point {
        members: members.len(),
        requests,
        window,
        hub: hub::sample(hub),
        stored: hub::stored(hub),
        edit: None,
        member_anon: members.anon_kib(),
        available_kib: machine_memory_available(),
        load: std::fs::read_to_string("/proc/loadavg").unwrap_or_default(),
    }
}

/// `MemAvailable` of `/proc/meminfo`, KiB.
fn machine_memory_available() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"));
    let kib = line.and_then(|l| l.split_whitespace().nth(1)?.parse().ok());
    kib.unwrap_or(0)
}

/// Sets the hub's source to `value`: until the last member holds it, and the hub's writes.
fn timed_edit(hub: &ControlPlane, editor: &Editor, members: &mut Members, value: &str) -> Edit {
    let before = Instant::now();
    let sent = editor.edit(value);
    let last = members.wait_holding(value, FLEET_LIMIT);
    let (placement_writes, first, last_write) = hub::placement_writes(hub, sent);
    let since_sent = |at: Option<SystemTime>| {
        at.and_then(|at| at.duration_since(sent).ok())
            .unwrap_or_default()
    };
    Edit {
        to_last_copy: last.duration_since(before),
        placement_writes,
        to_first_placement: since_sent(first),
        to_last_placement: since_sent(last_write),
    }
}

/// Waits until the hub's fleet Mirror counts `count` clusters current.
fn wait_current(hub: &ControlPlane, count: usize) {
    let current = || {
        let mirror = hub.object("mirror", OPERATOR_NAMESPACE, SOURCE);
        let current = mirror.as_ref().map(|m| &m["status"]["clusters"]["current"]);
        current.and_then(|c| c.as_u64()) == Some(count as u64)
    };
    let reached = eventually(FLEET_LIMIT, || {
        let reached = current();
        if !reached {
            std::thread::sleep(Duration::from_secs(1));
        }
        reached
    });
    assert!(
        reached,
        "the hub's Mirror does not count {count} clusters current"
    );
}

/// The hub's skiff, as `deploy/fleet-hub` installs it (leading, `--fleet-hub`, default
/// `--fleet-qps`).
struct HubSkiff {
    skiff: Skiff,
    _dir: TempDir,
}

impl HubSkiff {
    fn start(hub: &ControlPlane) -> HubSkiff {
        let dir = TempDir::new("fleet-hub");
        let flags = [
            "--leader-elect",
            "--leader-election-namespace=skiff-system",
            "--source-namespaces=skiff-system",
            "--secret-target-names=app-tls",
            "--fleet-hub",
        ];
        let log = dir.0.join("skiff.log");
        let env = [("POD_NAME", "hub")];
        let skiff = Skiff::start_with_env(&hub.operator_kubeconfig(), log, &flags, &env);
        children::register(skiff.child.id());
        let mut hub_skiff = HubSkiff { skiff, _dir: dir };
        let placed = eventually(STEP, || {
            hub.object("mirror", OPERATOR_NAMESPACE, SOURCE)
                .is_some_and(|m| m["status"]["clusters"].is_object())
        });
        hub_skiff.assert_running();
        assert!(
            placed,
            "the hub's skiff reports no clusters; log:\n{}",
            hub_skiff.skiff.logs()
        );
        hub_skiff
    }

    fn assert_running(&mut self) {
        assert!(
            self.skiff.is_running(),
            "the hub's skiff ended; log:\n{}",
            self.skiff.logs()
        );
    }

    fn stop(mut self) {
        children::unregister(self.skiff.child.id());
        self.skiff.terminate(STEP);
    }
}

fn say(line: &str) {
    crate::support::control_plane::say(line);
}

/// A straight line through `points` by least squares: (intercept, slope).
pub fn fit(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(sx, sy), (x, y)| (sx + x, sy + y));
    let (mx, my) = (sx / n, sy / n);
    let (sxy, sxx) = points.iter().fold((0.0, 0.0), |(sxy, sxx), (x, y)| {
        (sxy + (x - mx) * (y - my), sxx + (x - mx) * (x - mx))
    });
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (my - slope * mx, slope)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

pub fn print(points: &[Point]) {
    let Some(largest) = points.last().filter(|p| p.members > 0) else {
        return;
    };
    let base = &points[0];
    println!("\n## One real hub, many members (each a skiff process against a fake cluster)\n");
    println!(
        "| members | hub requests / member / min (idle) | hub watches | hub kube-apiserver RssAnon / VmRSS, MiB | per member (vs no member) | stored / member | edit → last Placement written | edit → copy in the last member | member skiff RssAnon mean / max, MiB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for p in points {
        let per_member = |now: u64, then: u64| match p.members {
            0 => "".to_owned(),
            n => format!("{:.0} KiB", (now as f64 - then as f64) / n as f64),
        };
        let stored: usize = p.stored.iter().map(|s| s.bytes).sum();
        let edit = p.edit.as_ref();
        let seconds =
            |d: Option<Duration>| d.map_or(String::new(), |d| format!("{:.2} s", d.as_secs_f64()));
        println!(
            "| {} | {} | {:.0} ({:.2} / member) | {:.0} / {:.0} | {} | {} | {} | {} | {} |",
            p.members,
            if p.members == 0 {
                String::new()
            } else {
                format!("{:.2}", p.total_rate())
            },
            p.hub.watches,
            (p.hub.watches - base.hub.watches) / p.members.max(1) as f64,
            mib(p.hub.memory.anon),
            mib(p.hub.memory.rss),
            per_member(p.hub.memory.anon, base.hub.memory.anon),
            if p.members == 0 {
                String::new()
            } else {
                format!("{:.1} KB", stored as f64 / p.members as f64 / 1000.0)
            },
            seconds(edit.map(|e| e.to_last_placement)),
            seconds(edit.map(|e| e.to_last_copy)),
            if p.members == 0 {
                String::new()
            } else {
                format!(
                    "{:.1} / {:.1}",
                    p.member_anon.0 / 1024.0,
                    mib(p.member_anon.1)
                )
            },
        );
    }
    println!(
        "\nThe hub API server's watches (Placements / carrier Secrets / all) and etcd's database size:\n"
    );
    println!("| members | Placement watches | Secret watches | all watches | etcd database |");
    println!("|---|---|---|---|---|");
    for p in points {
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.1} MB |",
            p.members,
            p.hub.placement_watches,
            p.hub.secret_watches,
            p.hub.watches,
            p.hub.storage_bytes / 1e6
        );
    }
    println!("\nThe machine at each sample (2 cores, shared):\n");
    println!("| members | MemAvailable | load average (1, 5, 15 min) |");
    println!("|---|---|---|");
    for p in points {
        let load: Vec<&str> = p.load.split_whitespace().take(3).collect();
        println!(
            "| {} | {:.1} GiB | {} |",
            p.members,
            p.available_kib as f64 / 1024.0 / 1024.0,
            load.join(", ")
        );
    }
    print_requests(largest);
    print_stored(largest);
    print_fits(points);
}

fn print_requests(p: &Point) {
    println!(
        "\nHub requests by the members' identities while idle, {} members over {} s (hub audit log), per member per minute:\n",
        p.members,
        p.window.as_secs()
    );
    println!("| request | count | per member per minute |");
    println!("|---|---|---|");
    for (class, count) in &p.requests {
        println!("| {class} | {count} | {:.2} |", p.rate(*count));
    }
    let total = p.total_rate();
    println!(
        "| **all** | {} | **{total:.2}** (goal ≤ 5: {}) |",
        p.requests.values().sum::<usize>(),
        verdict(total <= 5.0)
    );
}

fn print_stored(p: &Point) {
    println!(
        "\nWhat the hub keeps for {} members (JSON as served, managedFields included; etcd holds built-in kinds in protobuf, smaller):\n",
        p.members
    );
    println!("| object | count | bytes per member |");
    println!("|---|---|---|");
    for s in &p.stored {
        println!(
            "| {} | {} | {:.0} |",
            s.kind,
            s.objects,
            s.bytes as f64 / p.members as f64
        );
    }
    let edit = p.edit.as_ref();
    if let Some(e) = edit {
        println!(
            "\nThe edit at {} members: {} Placement writes by the hub's skiff, the first {:.2} s and the last {:.2} s after the edit ({:.0} writes/s; --fleet-qps 250, burst 500)",
            p.members,
            e.placement_writes,
            e.to_first_placement.as_secs_f64(),
            e.to_last_placement.as_secs_f64(),
            e.placement_writes as f64
                / (e.to_last_placement - e.to_first_placement)
                    .as_secs_f64()
                    .max(0.001)
        );
    }
}

fn print_fits(points: &[Point]) {
    let members: Vec<&Point> = points.iter().filter(|p| p.members > 0).collect();
    let line = |what: &str, unit: &str, values: Vec<(f64, f64)>| {
        let (intercept, slope) = fit(&values);
        println!("| {what} | {intercept:.2} {unit} | {slope:.4} {unit} |");
    };
    println!("\nStraight lines fitted by least squares (y = a + b × members):\n");
    println!("| figure | a | b (per member) |");
    println!("|---|---|---|");
    line(
        "hub kube-apiserver RssAnon",
        "MiB",
        points
            .iter()
            .map(|p| (p.members as f64, mib(p.hub.memory.anon)))
            .collect(),
    );
    line(
        "hub kube-apiserver VmRSS",
        "MiB",
        points
            .iter()
            .map(|p| (p.members as f64, mib(p.hub.memory.rss)))
            .collect(),
    );
    line(
        "hub watches",
        "",
        points
            .iter()
            .map(|p| (p.members as f64, p.hub.watches))
            .collect(),
    );
    line(
        "stored for members",
        "KB",
        points
            .iter()
            .map(|p| {
                (
                    p.members as f64,
                    p.stored.iter().map(|s| s.bytes).sum::<usize>() as f64 / 1000.0,
                )
            })
            .collect(),
    );
    line(
        "hub requests a minute (idle)",
        "",
        members
            .iter()
            .map(|p| (p.members as f64, p.total_rate() * p.members as f64))
            .collect(),
    );
    line(
        "edit → copy in the last member",
        "s",
        members
            .iter()
            .filter_map(|p| {
                Some((
                    p.members as f64,
                    p.edit.as_ref()?.to_last_copy.as_secs_f64(),
                ))
            })
            .collect(),
    );
    let times: Vec<Duration> = members
        .iter()
        .filter_map(|p| Some(p.edit.as_ref()?.to_last_copy))
        .collect();
    if let (Some(p), Some(last)) = (members.last(), times.last()) {
        println!(
            "\nedit → copy in the last of {} members: {:.2} s (goal ≤ 5 s at 1,000: {})",
            p.members,
            last.as_secs_f64(),
            verdict(*last <= Duration::from_secs(5))
        );
    }
}
