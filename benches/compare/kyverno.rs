//! Kyverno as the kit part's third column: the namespace kit as a generate `ClusterPolicy`
//! (`testbin/kyverno/kit-policy.yaml`), which platform teams use for this job. Its admission
//! controller turns each labelled Namespace's admission request into an UpdateRequest; its
//! background controller creates the objects from those. Both run out of cluster with the flags
//! of `testbin/kyverno/start.sh` (its README says why each), each as its own ServiceAccount, and
//! are started, sampled and restarted as the other operators' replicas are.
//!
//! Two things differ from the other columns. Kyverno has no `rest_client_requests_total`, so its
//! requests are those the audit log holds from its two ServiceAccounts (its UpdateRequests
//! listed apart: they are its own cost). And every client of each process has a token bucket of
//! its own, with no flag for a shared one: like the peer's scaffold, not like skiff.
//!
//! Optional (`COMPARE_KYVERNO=1`): the two binaries take about 11 minutes to build.

use std::time::{Duration, Instant, SystemTime};

use serde_json::json;

use crate::kit::{KIT, Kitted, RESTART_WATCH, qps, versions};
use crate::kit_count::{by_resource, is_kit, listed, load_average, requests_of, watch_objects};
use crate::kyverno_launch::{
    Launch, NAMESPACE, Role, STEP, apply_policy, install, logs, remove_webhooks, version,
    wait_ready,
};
use crate::lease_watch::LeaseWatch;
use crate::lifecycle::sample;
use crate::operator::{BURST, Footprint, QPS, Replica};
use crate::settings::Settings;
use crate::support::audit::AuditEvent;
use crate::support::control_plane::ControlPlane;
use crate::support::skiff::proc_status_kib;
use crate::world;

/// The column's heading, its slug (the kit label's value, names of its namespaces).
pub const LABEL: &str = "Kyverno (a bucket per client)";
const SLUG: &str = "kyverno";
/// Kyverno's label on the objects it generates.
const MANAGED_BY: &str = "app.kubernetes.io/managed-by=kyverno";

/// The column, when `COMPARE_KYVERNO=1` chose it.
pub fn part(cp: &ControlPlane, settings: &Settings, started: Instant) -> Option<Kitted> {
    if !settings.runs_kyverno() {
        return None;
    }
    let n = settings.kit_namespaces;
    crate::progress(
        started,
        &format!("{LABEL}: the kit into {n} new namespaces"),
    );
    Some(run(cp, n))
}

pub fn run(cp: &ControlPlane, count: usize) -> Kitted {
    install(cp);
    let launch = Launch::new(cp);
    let watches = Role::BOTH.map(|r| LeaseWatch::start(cp, NAMESPACE, r.lease()));
    let mut first = launch.start("first");
    wait_ready(cp, &watches, &mut first);
    apply_policy(cp, &first);

    let names: Vec<String> = (0..count).map(|i| format!("kit-{SLUG}-{i:04}")).collect();
    let seen = watch_objects(cp, MANAGED_BY, &format!("kit-{SLUG}-"), count);
    std::thread::sleep(Duration::from_secs(2));
    let (from, created) = (SystemTime::now(), Instant::now());
    world::create_labelled(cp, &names, &json!({ KIT: SLUG }));
    let limit = Duration::from_secs_f64(40.0 * count as f64 / qps()) + STEP;
    let took = seen.wait(created, limit).unwrap_or_else(|| {
        panic!(
            "Kyverno: the kit incomplete after {limit:?}; logs:\n{}",
            logs(&first)
        )
    });
    let to = SystemTime::now();
    let load = load_average();
    let audited = requests_of(cp, &users(), from, to);

    std::thread::sleep(Duration::from_secs(5));
    let each: Vec<Footprint> = first.iter().map(sample).collect();
    let peaks: Vec<u64> = first.iter().map(|r| peak(r.pid())).collect();
    let (changed, writes) = restart(cp, &launch, &watches, first);
    remove_webhooks(cp);
    let mut notes = notes(&audited, &each, &peaks);
    notes.push(format!(
        "Kyverno's writes after its restart, the Leases aside (audit log): {}.",
        listed(&by_resource(&writes))
    ));
    Kitted {
        label: LABEL,
        namespaces: count,
        took,
        requests: audited.len() as f64,
        lease: audited.iter().filter(|e| e.is_lease()).count() as f64,
        audited: audited.len(),
        audited_by: by_resource(&audited),
        converged: summed(&each),
        peak_kib: peaks.iter().sum(),
        restart_changed: changed,
        restart_writes: writes.len(),
        restart_kit_writes: writes.iter().filter(|e| is_kit(e)).count(),
        restart_writes_by: by_resource(&writes),
        load,
        audit_only: true,
        notes,
        ..Kitted::default()
    }
}

/// Both ServiceAccounts' users, as the audit log names them.
fn users() -> Vec<String> {
    Role::BOTH.map(Role::user).to_vec()
}

fn peak(pid: u32) -> u64 {
    proc_status_kib(pid, "VmHWM").unwrap_or(0)
}

/// SIGTERM to both converged controllers, both started again, and after [`RESTART_WATCH`]
/// from both leading: the kit objects whose resourceVersion changed and the writes in the
/// audit log (the Leases aside).
fn restart(
    cp: &ControlPlane,
    launch: &Launch,
    watches: &[LeaseWatch; 2],
    first: Vec<Replica>,
) -> (usize, Vec<AuditEvent>) {
    let before = versions(cp, SLUG);
    let old: Vec<String> = watches.iter().map(LeaseWatch::holder).collect();
    for mut replica in first {
        let _ = replica.terminate(Duration::from_secs(40));
    }
    let (restarted, since) = (Instant::now(), SystemTime::now());
    let second = launch.start("second");
    for (watch, old) in watches.iter().zip(&old) {
        let led = watch.wait_for(restarted, STEP, |s| {
            !s.holder.is_empty() && s.holder != *old
        });
        assert!(
            led.is_some(),
            "restarted Kyverno never led; logs:\n{}",
            logs(&second)
        );
    }
    std::thread::sleep(RESTART_WATCH);
    let after = versions(cp, SLUG);
    let changed = after
        .iter()
        .filter(|(key, rv)| before.get(*key) != Some(rv))
        .count();
    let writes = requests_of(cp, &users(), since, SystemTime::now())
        .into_iter()
        .filter(|e| e.is_write() && !e.is_lease())
        .collect();
    (changed, writes)
}

/// Both processes' figures added up.
fn summed(each: &[Footprint]) -> Footprint {
    each.iter().fold(Footprint::default(), |sum, f| Footprint {
        vm_rss: sum.vm_rss + f.vm_rss,
        rss_anon: sum.rss_anon + f.rss_anon,
        rss_file: sum.rss_file + f.rss_file,
        threads: sum.threads + f.threads,
    })
}

/// The report's lines below the table: each process's memory, the requests per
/// ServiceAccount, the UpdateRequests.
fn notes(audited: &[AuditEvent], each: &[Footprint], peaks: &[u64]) -> Vec<String> {
    let mib = |kib: u64| format!("{:.1} MiB", kib as f64 / 1024.0);
    let memory: Vec<String> = Role::BOTH
        .iter()
        .zip(each.iter().zip(peaks))
        .map(|(role, (f, peak))| {
            let (rss, anon, hwm) = (mib(f.vm_rss), mib(f.rss_anon), mib(*peak));
            format!(
                "{} controller VmRSS {rss}, RssAnon {anon}, VmHWM {hwm}",
                role.name()
            )
        })
        .collect();
    let per_user: Vec<String> = Role::BOTH
        .iter()
        .map(|role| {
            let n = audited.iter().filter(|e| e.user == role.user()).count();
            format!("{}: {n}", role.account())
        })
        .collect();
    let update_requests: Vec<AuditEvent> = audited
        .iter()
        .filter(|e| e.uri.contains("/updaterequests"))
        .cloned()
        .collect();
    vec![
        format!(
            "Kyverno {}, each process converged: {}.",
            version(),
            memory.join("; ")
        ),
        format!(
            "Kyverno's requests in the window by ServiceAccount (audit log): {}.",
            per_user.join(", ")
        ),
        format!(
            "Kyverno's UpdateRequest traffic in the window (audit log, {} requests): {}.",
            update_requests.len(),
            listed(&by_resource(&update_requests))
        ),
    ]
}

/// The sentence of the report's introduction about this column.
pub fn described() -> String {
    format!(
        " Kyverno {}: the kit as a `ClusterPolicy` with one generate rule per object, \
         `synchronize: true` (`testbin/kyverno/kit-policy.yaml`), run by its admission \
         controller (an UpdateRequest per Namespace admission) and background controller (which \
         creates the objects), each as its own ServiceAccount with `--clientRateLimitQPS={QPS} \
         --clientRateLimitBurst={BURST}`, reports off. Each process gives every one of its \
         clients (kube, kyverno, dynamic, metadata, apiserver) a token bucket of its own, and \
         no flag makes it one shared bucket: like the peer's scaffold, so requests ÷ QPS is not \
         its floor. Kyverno has no `rest_client_requests_total`: its requests are those of its \
         two ServiceAccounts in the audit log, and its memory is both processes' summed (each \
         below the table).",
        version()
    )
}
