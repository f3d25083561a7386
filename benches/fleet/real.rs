//! The fleet benchmark's real part: a hub and two members, each a real control plane (the
//! e2e suite's [`Fleet`]), skiff leading in each as a process with its own identity, the
//! members admitted with `hack/hub-admit.sh` and reaching the hub through a [`FaultProxy`]
//! each (which passes bytes untouched until the outage).
//!
//! Times are the API servers' own: when a member's API server received its skiff's Lease
//! acquisition and copy writes (its audit log), against when the hub edit was sent from here
//! (same clock, loopback).

use crate::footprint::Footprint;
use crate::outage::{self, Outage};
use crate::support::audit::AuditEvent;
use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, OPERATOR_USER};
use crate::support::fault_proxy::{FaultProxy, kubeconfig_through};
use crate::support::fleet::{Admission, Fleet};
use crate::support::mirror_e2e::Replica;
use crate::support::skiff::{Skiff, TempDir, eventually};
use crate::world::{self, Editor, HUB_NAME, SOURCE, TARGET_NAMESPACE};
use crate::{Settings, children};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// The label the fleet Mirror selects this part's clusters by.
const SELECTOR: (&str, &str) = ("bench", "fleet");
/// How long any one step may take before the benchmark gives up: a liveness bound.
pub const STEP: Duration = Duration::from_secs(120);
/// The pause between edits, so each is timed alone.
const BETWEEN_EDITS: Duration = Duration::from_secs(2);

/// What the real part measured.
pub struct Figures {
    /// Per member: from its skiff's leading to its first copy.
    pub first_copy: Vec<(String, Duration)>,
    /// Per edit: from the edit to the copy in the later of the two members.
    pub edits: Vec<Duration>,
    pub outage: Outage,
    /// A member's skiff idle without, then with, `--hub-kubeconfig`.
    pub memory: (Footprint, Footprint),
}

/// A member cluster, its admission and its skiff (reaching the hub through `proxy`).
pub struct Member<'a> {
    pub cluster: &'a ControlPlane,
    pub admission: Admission,
    pub proxy: FaultProxy,
    pub skiff: Option<Replica>,
}

pub fn measure(settings: &Settings) -> Figures {
    let fleet = Fleet::start(2);
    let (key, value) = SELECTOR;
    let mut members: Vec<Member> = ["bench-west", "bench-east"]
        .into_iter()
        .zip(&fleet.members)
        .map(|(name, cluster)| {
            let admission = fleet.admit(name, &[(key, value)]);
            let proxy = FaultProxy::start(fleet.hub.url().trim_start_matches("https://"));
            for namespace in world::member_namespaces() {
                cluster.apply(&namespace.to_string());
            }
            Member {
                cluster,
                admission,
                proxy,
                skiff: None,
            }
        })
        .collect();
    world::place_source_and_mirror(fleet.hub, "v0", SELECTOR);
    let hub = Replica::start_with(fleet.hub, "hub", &["--fleet-hub"]);
    children::register(hub.skiff.child.id());
    let first_copy = members.iter_mut().map(start_member).collect();
    let editor = Editor::of(fleet.hub);
    let edits = (1..=settings.edits)
        .map(|n| timed_edit(&editor, &members, &format!("edit-{n}")))
        .collect();
    let outage = outage::measure(fleet.hub, &editor, &members, settings.outage);
    for member in &mut members {
        stop(member.skiff.take());
    }
    let memory = member_memory(&members[0], settings);
    stop(Some(hub));
    Figures {
        first_copy,
        edits,
        outage,
        memory,
    }
}

/// Starts the member's skiff (leading in its cluster, reading the hub through its proxy) and
/// times its leading to its first copy.
fn start_member(member: &mut Member) -> (String, Duration) {
    let through = member.admission.dir.join("kubeconfig-proxied");
    kubeconfig_through(
        &member.admission.kubeconfig(),
        &member.proxy.address(),
        &through,
    );
    let started = SystemTime::now();
    let hub = format!("--hub-kubeconfig={}", through.display());
    let name = format!("--hub-name={HUB_NAME}");
    let skiff = Replica::start_with(member.cluster, &member.admission.cluster, &[&hub, &name]);
    children::register(skiff.skiff.child.id());
    member.skiff = Some(skiff);
    let led = first_audited(member.cluster, started, is_lease_acquisition);
    let copied = first_audited(member.cluster, led, |e| {
        is_copy_write(e) && e.verb == "create"
    });
    let took = copied.duration_since(led).unwrap_or_default();
    (member.admission.cluster.clone(), took)
}

/// Sets the hub's source to `value`: how long until the later member's copy was written.
fn timed_edit(editor: &Editor, members: &[Member], value: &str) -> Duration {
    let sent = editor.edit(value);
    let slowest = members
        .iter()
        .map(|m| first_audited(m.cluster, sent, is_copy_write))
        .max()
        .unwrap_or(sent);
    std::thread::sleep(BETWEEN_EDITS);
    slowest.duration_since(sent).unwrap_or_default()
}

/// When `cp` received the first request of skiff's that `wanted` picks, at `since` or later
/// (its audit log, polled); panics after [`STEP`].
pub fn first_audited(
    cp: &ControlPlane,
    since: SystemTime,
    wanted: impl Fn(&AuditEvent) -> bool,
) -> SystemTime {
    let mut found = None;
    let seen = eventually(STEP, || {
        found = (cp.audit().iter())
            .filter(|e| e.user == OPERATOR_USER && e.received >= since)
            .filter(|e| e.stage == "ResponseComplete" && e.code.is_some_and(|c| c < 300))
            .find(|e| wanted(e))
            .map(|e| e.received);
        found.is_some()
    });
    assert!(
        seen,
        "no such request within {STEP:?} in {}",
        cp.dir().display()
    );
    found.unwrap_or(since)
}

/// skiff's leader Lease taken: its create or first update.
fn is_lease_acquisition(e: &AuditEvent) -> bool {
    let path = format!("/apis/coordination.k8s.io/v1/namespaces/{OPERATOR_NAMESPACE}/leases");
    e.uri.starts_with(&path) && e.is_write()
}

/// A write of the copy in the member's selected namespace.
pub fn is_copy_write(e: &AuditEvent) -> bool {
    let path = format!("/api/v1/namespaces/{TARGET_NAMESPACE}/configmaps");
    let named = e.uri.contains(&format!("/{SOURCE}")) || e.verb == "create";
    e.uri.starts_with(&path) && e.is_write() && named
}

fn stop(replica: Option<Replica>) {
    if let Some(replica) = replica {
        children::unregister(replica.skiff.child.id());
        replica.stop();
    }
}

/// The first member's skiff idle, leading in its cluster, without and then with its hub (the
/// one copy it holds either way): its memory after settling.
fn member_memory(member: &Member, settings: &Settings) -> (Footprint, Footprint) {
    let plain = idle_footprint(member.cluster, "member-plain", &[], settings);
    let hub = format!(
        "--hub-kubeconfig={}",
        member.admission.kubeconfig().display()
    );
    let name = format!("--hub-name={HUB_NAME}");
    let with_hub = idle_footprint(member.cluster, "member-hub", &[&hub, &name], settings);
    (plain, with_hub)
}

/// Flags of a member's skiff as installed (`manifests/`, secret targets): leader election at
/// its default timings and info logs, unlike the e2e replicas.
const INSTALLED: [&str; 4] = [
    "--leader-elect",
    "--leader-election-namespace=skiff-system",
    "--source-namespaces=skiff-system",
    "--secret-target-names=app-tls",
];

fn idle_footprint(cp: &ControlPlane, name: &str, extra: &[&str], settings: &Settings) -> Footprint {
    let dir = TempDir::new(&format!("fleet-{name}"));
    let mut flags = INSTALLED.to_vec();
    flags.extend_from_slice(extra);
    let log = dir.0.join("skiff.log");
    let mut skiff = Skiff::start_with_env(
        &cp.operator_kubeconfig(),
        log,
        &flags,
        &[("POD_NAME", name)],
    );
    children::register(skiff.child.id());
    let leading = eventually(STEP, || holder(cp).starts_with(name));
    assert!(leading, "{name} does not lead; log:\n{}", skiff.logs());
    std::thread::sleep(settings.settle);
    assert!(skiff.is_running(), "{name} ended; log:\n{}", skiff.logs());
    let footprint = Footprint::of(skiff.child.id());
    children::unregister(skiff.child.id());
    skiff.terminate(STEP);
    footprint
}

/// Who holds skiff's leader Lease in `cp` ("" when nobody does).
fn holder(cp: &ControlPlane) -> String {
    let lease = cp.object("lease", OPERATOR_NAMESPACE, "skiff-leader");
    let holder = lease.as_ref().map(|l| &l["spec"]["holderIdentity"]);
    holder
        .and_then(|h| h.as_str())
        .unwrap_or_default()
        .to_owned()
}

pub fn print(figures: &Figures, settings: &Settings) {
    println!("\n## A hub and two members, each a real control plane\n");
    println!("| figure | value | goal |");
    println!("|---|---|---|");
    let edits = summary(&figures.edits);
    println!(
        "| a hub edit → the copy in both members, {} edits | median {} ms, max {} ms | ≤ 2 s: {} |",
        figures.edits.len(),
        edits.0.as_millis(),
        edits.1.as_millis(),
        verdict(edits.1 <= Duration::from_secs(2))
    );
    for (cluster, took) in &figures.first_copy {
        println!(
            "| newly admitted member {cluster}: its skiff leading → its first copy | {} ms | ≤ 2 s: {} |",
            took.as_millis(),
            verdict(*took <= Duration::from_secs(2))
        );
    }
    outage::print(&figures.outage, settings.outage);
    let (plain, hub) = figures.memory;
    println!(
        "\nA member's skiff idle, leading (binary {}), after {} s settling, MiB:\n",
        Path::new(&crate::support::skiff::binary()).display(),
        settings.settle.as_secs()
    );
    crate::footprint::header();
    crate::footprint::row("without --hub-kubeconfig", &plain);
    crate::footprint::row("with --hub-kubeconfig (one placed Mirror)", &hub);
    let grew = hub.anon as i64 - plain.anon as i64;
    println!(
        "\nRssAnon with the hub: {:+.2} MiB (goal ≤ +1 MiB: {}); VmRSS {:+.2} MiB, VmHWM {:+.2} MiB",
        grew as f64 / 1024.0,
        verdict(grew <= 1024),
        (hub.rss as f64 - plain.rss as f64) / 1024.0,
        (hub.peak as f64 - plain.peak as f64) / 1024.0
    );
}

/// Median and max.
pub fn summary(times: &[Duration]) -> (Duration, Duration) {
    let mut sorted = times.to_vec();
    sorted.sort_unstable();
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or_default();
    (median, sorted.last().copied().unwrap_or_default())
}

pub fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}
