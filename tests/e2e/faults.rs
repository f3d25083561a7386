//! e2e: the network misbehaving between a skiff leader and a real API server (fault proxy in
//! between), on a plain link and on one 10 ms away.
//!
//! Why: these are the faults that leave a leader deaf while its Lease renews, or let a write of
//! an old leader land after a new one leads. Only a real API server shows what really reached
//! it: the audit log counts every request by the replica that sent it, late deliveries after a
//! partition heals included.
//! - Dead connections: a load balancer forgets every open flow (both ends stay open, nothing is
//!   forwarded). One replica must hear again and keep leading, with no relist: its lease
//!   request is hedged on a new connection, whose answer makes every connection suspect.
//! - Partition: the leader is cut off for 25 s while a standby reaches the API server directly.
//!   The old leader stops by its renew deadline, the standby leads once the lease has expired,
//!   and nothing the old leader wrote reaches the server after that.
//!
//! Real time, as the binaries run: the tests assert causes (the log says which mechanism
//! acted, the audit log what the server received and when) and order. Each wait is a liveness
//! bound of 10× what it waits for, or more, and says so; how fast each step is belongs to the
//! benchmarks (BENCHMARKS.md, "When connections die"), which these tests print.
//!
//! The tests share the control plane and its one Lease, so they run one at a time.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use crate::support::audit::AuditEvent;
use crate::support::control_plane::{
    ControlPlane, E2E_REPLICA_FLAGS, OPERATOR_B_UID, OPERATOR_UID, require_e2e_binaries,
};
use crate::support::fault_proxy::{FaultProxy, kubeconfig_through};
use crate::support::lease::{LeasePoller, LeaseRecord, renew_gaps};
use crate::support::skiff::{Skiff, TempDir, eventually};

/// E2E_REPLICA_FLAGS' lease timings.
const LEASE_DURATION: Duration = Duration::from_secs(4);
/// The latency of a link to an API server "10 ms away", each way.
const FAR: Duration = Duration::from_millis(10);
/// Leading, converging, stopping, taking over: each takes a lease duration and a retry period
/// at most (4 s + 1 s, jittered up to 2.2 s), or a few seconds of writes. A liveness bound, 10×
/// that: only a step that never comes fails it.
const LIVENESS: Duration = Duration::from_secs(60);
/// Dead connections: a new namespace's copy and a source edit must land within this. A
/// liveness bound: the hedge (0.5 s) and the suspicion it raises take a second or two, this is
/// 20× that, and still below the watches' 70 s idle timeout (which the log check rules out as
/// the cause anyway).
const HEARD_AGAIN: Duration = Duration::from_secs(40);
/// How long the old leader is cut off.
const PARTITION: Duration = Duration::from_secs(25);

/// The tests share skiff's one Lease: one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn dead_connections_one_replica_hears_again_and_keeps_leading() {
    require_e2e_binaries();
    let _serial = serial();
    dead_connections(Duration::ZERO);
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn dead_connections_on_a_10ms_link() {
    require_e2e_binaries();
    let _serial = serial();
    dead_connections(FAR);
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn partition_the_old_leader_stops_and_nothing_it_wrote_lands_after_the_standby_leads() {
    require_e2e_binaries();
    let _serial = serial();
    partition(Duration::ZERO);
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn partition_on_a_10ms_link() {
    require_e2e_binaries();
    let _serial = serial();
    partition(FAR);
}

fn dead_connections(latency: Duration) {
    let cp = ControlPlane::installed();
    let tag = format!("dead{}", latency.as_millis());
    let world = World::create(cp, &tag, 2);
    let dir = TempDir::new(&tag);
    let proxy = FaultProxy::start(cp.url().trim_start_matches("https://"));
    proxy.set_latency(latency);
    let poller = LeasePoller::start(cp, Duration::from_millis(100));
    let kubeconfig = through(&cp.operator_kubeconfig(), &proxy, &dir, "a");
    let started = SystemTime::now();
    let mut skiff = replica(&kubeconfig, &dir, "fault-a");
    let holder = leads(&poller, &skiff, "fault-a");
    world.wait_copies(cp, &skiff, "v1");
    watches_open(cp, &skiff, started);

    let (fault, fault_wall) = (Instant::now(), SystemTime::now());
    let killed = proxy.kill_open();
    // The changes are made while the connections are dead; whether they come before or after
    // skiff notices, they must reach every copy.
    std::thread::sleep(Duration::from_secs(1));
    let late = cp.create_namespace(&format!("{tag}-late"), &[("fault", &world.label)]);
    world.edit_source(cp, "v2");
    let edited = Instant::now();
    let namespaces = [world.namespaces.clone(), vec![late.clone()]].concat();
    let converged = eventually(HEARD_AGAIN, || {
        namespaces
            .iter()
            .all(|ns| world.copy_data(cp, ns).as_deref() == Some("v2"))
    });
    let took = edited.elapsed();
    let log = skiff.logs();
    assert!(
        converged,
        "not heard again within {HEARD_AGAIN:?}; log:\n{log}"
    );
    eprintln!(
        "dead connections ({killed} killed, latency {latency:?}): new namespace and source edit \
         landed {took:?} after they were made ({:?} after the fault)",
        fault.elapsed()
    );
    // The cause: the renewal on the dead pooled connection was sent again on a new one, whose
    // answer made every connection suspect; the watches resumed then, not by their idle timeout.
    assert!(
        log.contains("while a new connection answered"),
        "the lease request was not hedged on a new connection; log:\n{log}"
    );
    assert!(
        log.contains("are suspect"),
        "no suspicion raised; log:\n{log}"
    );
    assert!(
        !log.contains("heard nothing"),
        "the watches resumed by their idle timeout, not the suspicion; log:\n{log}"
    );
    kept_the_lease(&poller, &mut skiff, &holder, fault);
    let gap = max_gap_since(&poller.stop(), &holder, fault);
    eprintln!("dead connections: longest renew gap across the fault {gap:?}");
    let after_fault: Vec<AuditEvent> = cp
        .audit()
        .into_iter()
        .filter(|e| e.uid == OPERATOR_UID && e.received > fault_wall)
        .collect();
    let relists: Vec<&AuditEvent> = after_fault.iter().filter(|e| e.is_relist()).collect();
    assert!(relists.is_empty(), "relisted after the fault: {relists:?}");
    let resumed = after_fault
        .iter()
        .filter(|e| e.verb == "watch" && !e.is_lease())
        .count();
    assert!(
        resumed >= 3,
        "only {resumed} watches seen resuming after the fault"
    );
    skiff.terminate(LIVENESS);
}

/// Waits until the fault will find every watch open: each collection `skiff` (started at
/// `started`) listed has a watch open since (the audit log records a watch once its response
/// started), and the Lease was renewed after the last of them opened, so the lease connection
/// is in use too.
fn watches_open(cp: &ControlPlane, skiff: &Skiff, started: SystemTime) {
    let path = |e: &AuditEvent| e.uri.split('?').next().unwrap_or_default().to_owned();
    let open = eventually(LIVENESS, || {
        let audit = cp.audit();
        let mine = || (audit.iter()).filter(|e| e.uid == OPERATOR_UID && e.received >= started);
        let listed: BTreeSet<String> = mine().filter(|e| e.verb == "list").map(path).collect();
        let watches = || mine().filter(|e| e.verb == "watch" && !e.is_lease());
        let watched: BTreeSet<String> = watches().map(path).collect();
        let last_opened = watches().map(|e| e.received).max();
        let renewed_since = last_opened.is_some_and(|opened| {
            mine().any(|e| e.is_lease() && e.verb == "update" && e.received > opened)
        });
        !listed.is_empty() && listed.is_subset(&watched) && renewed_since
    });
    assert!(open, "the watches never all opened; log:\n{}", skiff.logs());
}

/// The leader kept its Lease across the fault: still running, never lost it, no other holder
/// read since, and renewed after it.
fn kept_the_lease(poller: &LeasePoller, skiff: &mut Skiff, holder: &str, fault: Instant) {
    let kept = poller.kept_by(holder, fault, LIVENESS);
    let log = skiff.logs();
    assert!(
        skiff.is_running() && !log.contains("leader election lost"),
        "log:\n{log}"
    );
    if let Err(why) = kept {
        panic!("{why}; log:\n{log}");
    }
}

fn partition(latency: Duration) {
    let cp = ControlPlane::installed();
    let tag = format!("part{}", latency.as_millis());
    // Enough namespaces at QPS 5 that the old leader is still writing when it is cut off.
    let world = World::create(cp, &tag, 120);
    let dir = TempDir::new(&tag);
    let proxy = FaultProxy::start(cp.url().trim_start_matches("https://"));
    proxy.set_latency(latency);
    let poller = LeasePoller::start(cp, Duration::from_millis(100));
    let kubeconfig = through(&cp.operator_kubeconfig(), &proxy, &dir, "a");
    let slow = ["--kube-api-qps=5", "--kube-api-burst=1"];
    let mut old = replica_with(&kubeconfig, &dir, "part-a", &slow);
    leads(&poller, &old, "part-a");
    let mut standby = replica(&cp.operator_b_kubeconfig(), &dir, "part-b");
    assert!(
        eventually(LIVENESS, || world.copies(cp) >= 5),
        "the old leader is not writing; log:\n{}",
        old.logs()
    );

    let (cut, cut_wall) = (Instant::now(), SystemTime::now());
    proxy.partition();
    let exited = old.wait_exit_at(LIVENESS);
    let new_lead = poller.wait_for(cut, LIVENESS, |r| r.holder.starts_with("part-b_"));
    std::thread::sleep(PARTITION.saturating_sub(cut.elapsed()));
    proxy.heal();
    // What the proxy held is delivered now: a window for it to land before the check that
    // none of it did (a slow machine can only hide a late write here, never invent one).
    std::thread::sleep(Duration::from_secs(3));
    drop(poller);

    let (code, exit_at) =
        exited.unwrap_or_else(|| panic!("old leader never stopped:\n{}", old.logs()));
    let log = old.logs();
    assert_eq!(code, 1, "the old leader's exit; log:\n{log}");
    assert!(
        log.contains("no successful renewal within the renew deadline"),
        "the old leader did not stop for its renew deadline; log:\n{log}"
    );
    new_lead.unwrap_or_else(|| panic!("standby never led:\n{}", standby.logs()));
    let audit = cp.audit();
    // Nothing passes the partition: the old leader's last renewal reached the server before it.
    let last_renewal = lease_holds(&audit, OPERATOR_UID, cut_wall - LIVENESS)
        .filter(|received| *received < cut_wall)
        .max()
        .expect("the old leader renewed");
    let led = lease_holds(&audit, OPERATOR_B_UID, cut_wall)
        .min()
        .expect("the standby's acquisition in the audit log");
    let since = |t: SystemTime| t.duration_since(last_renewal).unwrap_or_default();
    eprintln!(
        "partition (latency {latency:?}): after the old leader's last renewal reached the API \
         server, it stopped {:?} later (renew deadline 3 s) and the standby's acquisition \
         reached it {:?} later (lease {LEASE_DURATION:?} + retry 1 s)",
        since(wall_time(exit_at)),
        since(led)
    );
    // The standby saw that renewal no sooner than the server received it and waits a lease
    // duration from then: a takeover sooner would not be by expiry, however fast or slow.
    assert!(
        since(led) >= LEASE_DURATION,
        "the standby took the Lease {:?} after the last renewal, before it expired",
        since(led)
    );

    let late_writes: Vec<&AuditEvent> = audit
        .iter()
        .filter(|e| e.uid == OPERATOR_UID && e.is_write() && e.received >= led)
        .collect();
    let late_reads = audit
        .iter()
        .filter(|e| e.uid == OPERATOR_UID && !e.is_write() && e.received >= led)
        .count();
    let stats = proxy.stats();
    eprintln!(
        "partition: after the standby led, the old leader's writes reaching the API server: {}, \
         reads: {late_reads}; proxy: {stats:?}",
        late_writes.len()
    );
    assert!(
        late_writes.is_empty(),
        "late writes of the old leader: {late_writes:?}"
    );
    assert!(
        stats.reset_with_held_bytes >= 1,
        "no connection with a write in flight was reset: {stats:?}; log:\n{log}"
    );
    let standby_wrote = audit
        .iter()
        .any(|e| e.uid == OPERATOR_B_UID && e.is_write() && !e.is_lease());
    assert!(
        standby_wrote,
        "the new leader wrote nothing; log:\n{}",
        standby.logs()
    );
    standby.terminate(LIVENESS);
}

/// When the API server received each successful Lease write of the replica with token `uid`
/// (an acquisition or a renewal), from `since` on.
fn lease_holds<'a>(
    audit: &'a [AuditEvent],
    uid: &'a str,
    since: SystemTime,
) -> impl Iterator<Item = SystemTime> + 'a {
    audit
        .iter()
        .filter(move |e| e.uid == uid && e.is_lease() && e.verb == "update")
        .filter(move |e| e.code == Some(200) && e.received >= since)
        .map(|e| e.received)
}

/// A source ConfigMap in skiff-system, `n` namespaces labelled `fault=<tag>`, and a Mirror
/// copying the source into them.
struct World {
    label: String,
    source: String,
    namespaces: Vec<String>,
}

impl World {
    fn create(cp: &ControlPlane, tag: &str, n: usize) -> World {
        let namespaces = cp.create_namespaces(tag, &[("fault", tag)], n);
        let world = World {
            label: tag.to_owned(),
            source: format!("src-{tag}"),
            namespaces,
        };
        world.edit_source(cp, "v1");
        cp.apply(&format!(
            "apiVersion: skiff.dev/v1alpha1\nkind: Mirror\nmetadata:\n  name: m-{tag}\n  \
             namespace: skiff-system\nspec:\n  source:\n    kind: ConfigMap\n    name: {}\n  \
             namespaceSelector:\n    matchLabels:\n      fault: {tag}\n",
            world.source
        ));
        world
    }

    fn edit_source(&self, cp: &ControlPlane, value: &str) {
        cp.apply(&format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}\n  namespace: skiff-system\n\
             data:\n  value: {value}\n",
            self.source
        ));
    }

    fn copy_data(&self, cp: &ControlPlane, namespace: &str) -> Option<String> {
        let copy = cp.object("configmap", namespace, &self.source)?;
        copy["data"]["value"].as_str().map(str::to_owned)
    }

    fn copies(&self, cp: &ControlPlane) -> usize {
        let list = cp.get_json(&[
            "configmaps",
            "-A",
            "--field-selector",
            &format!("metadata.name={}", self.source),
        ]);
        list.and_then(|l| l["items"].as_array().map(Vec::len))
            .unwrap_or(0)
            .saturating_sub(1)
    }

    fn wait_copies(&self, cp: &ControlPlane, skiff: &Skiff, value: &str) {
        let done = eventually(LIVENESS, || {
            self.namespaces
                .iter()
                .all(|ns| self.copy_data(cp, ns).as_deref() == Some(value))
        });
        assert!(done, "copies not {value}; log:\n{}", skiff.logs());
    }
}

fn replica(kubeconfig: &PathBuf, dir: &TempDir, name: &str) -> Skiff {
    replica_with(kubeconfig, dir, name, &[])
}

fn replica_with(kubeconfig: &PathBuf, dir: &TempDir, name: &str, extra: &[&str]) -> Skiff {
    let mut args = E2E_REPLICA_FLAGS.to_vec();
    args.extend_from_slice(extra);
    let log = dir.0.join(format!("{name}.log"));
    Skiff::start_with_env(kubeconfig, log, &args, &[("POD_NAME", name)])
}

/// Waits until `name` holds the Lease; its full holder identity.
fn leads(poller: &LeasePoller, skiff: &Skiff, name: &str) -> String {
    let prefix = format!("{name}_");
    let record = poller.wait_for(Instant::now() - Duration::from_secs(1), LIVENESS, |r| {
        r.holder.starts_with(&prefix)
    });
    record
        .unwrap_or_else(|| panic!("{name} never led; log:\n{}", skiff.logs()))
        .holder
}

/// `kubeconfig` with its server replaced by the proxy.
fn through(kubeconfig: &Path, proxy: &FaultProxy, dir: &TempDir, name: &str) -> PathBuf {
    let path = dir.0.join(format!("{name}-through-proxy.kubeconfig"));
    kubeconfig_through(kubeconfig, &proxy.address(), &path);
    path
}

/// The longest time between `holder`'s observed renewals, from the last one before `from`.
fn max_gap_since(records: &[LeaseRecord], holder: &str, from: Instant) -> Duration {
    let start = records
        .iter()
        .filter(|r| r.holder == holder && r.at <= from)
        .map(|r| r.at)
        .next_back()
        .unwrap_or(from);
    let after: Vec<LeaseRecord> = records.iter().filter(|r| r.at >= start).cloned().collect();
    renew_gaps(&after, holder)
        .into_iter()
        .max()
        .unwrap_or_default()
}

/// The wall-clock time of a monotonic instant in the past.
fn wall_time(at: Instant) -> SystemTime {
    SystemTime::now() - at.elapsed()
}
