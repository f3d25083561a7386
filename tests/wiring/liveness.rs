//! The binary as launched, when its connections die (fake API server, fault proxy in between
//! where the network misbehaves).
//!
//! Why: skiff's lease client shares nothing with the controllers' client, so a lease that
//! renews proves nothing about the watches. These tests pin what closes that gap: a silent
//! watch resumes from its resourceVersion (no relist); a lease request with no reply is hedged
//! on a new connection and makes every other connection suspect, so the watches resume at
//! once. What happens when they stay deaf is in `deafness.rs`.
//!
//! Real time, as the binary runs: the tests assert causes (the log says which mechanism acted)
//! and order; each wait is a liveness bound of 10× what it waits for, or more, and says so.

use std::time::{Duration, Instant};

use crate::support::fake::{FakeServer, RequestRecord};
use crate::support::fault_proxy::FaultProxy;
use crate::support::skiff::{
    Skiff, TempDir, eventually, fan_out_world, is_lease_hold, longest_gap, write_kubeconfig,
};
use serde_json::json;

/// How long a test waits for leading and the first copies (a second or two): a liveness bound.
const START: Duration = Duration::from_secs(20);

/// A fake cluster of `namespaces` selected namespaces behind a fault proxy, and a leader
/// started with `flags` through the proxy once it leads and has written every copy.
struct Faulty {
    server: FakeServer,
    proxy: FaultProxy,
    _dir: TempDir,
    skiff: Skiff,
}

impl Faulty {
    fn start(tag: &str, namespaces: usize, flags: &[&str]) -> Faulty {
        let server = FakeServer::start();
        fan_out_world(&server, namespaces);
        let upstream = server.url().trim_start_matches("http://").to_owned();
        let proxy = FaultProxy::start(&upstream);
        let dir = TempDir::new(tag);
        let url = format!("http://{}", proxy.address());
        let kubeconfig = write_kubeconfig(&dir, &url, None, None, "skiff-system");
        let mut args = vec![
            "--leader-elect",
            "--kube-api-qps=1000",
            "--kube-api-burst=1000",
        ];
        args.extend_from_slice(flags);
        let skiff = Skiff::start(&kubeconfig, dir.0.join("skiff.log"), &args);
        let faulty = Faulty {
            server,
            proxy,
            _dir: dir,
            skiff,
        };
        let ready = eventually(START, || {
            let records = faulty.server.requests();
            records.iter().any(is_lease_hold)
                && records.iter().filter(|r| is_copy_create(r)).count() >= namespaces
        });
        assert!(
            ready,
            "not leading with every copy; log:\n{}",
            faulty.skiff.logs()
        );
        faulty
    }

    /// Creates a selected namespace; returns when its copy was created, if it is within
    /// `limit`.
    fn new_namespace_copied_within(&self, name: &str, limit: Duration) -> Option<Duration> {
        let created = Instant::now();
        self.server
            .insert(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"fanout": "yes"}}}));
        let path = format!("/api/v1/namespaces/{name}/configmaps/app-ca");
        eventually(limit, || self.server.get(&path).is_some()).then(|| created.elapsed())
    }

    /// Lists that are not watches, received after `from` (a relist would show here).
    fn lists_since(&self, from: Instant) -> Vec<RequestRecord> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.received > from && r.method == "GET" && !r.watch)
            .filter(|r| !r.path.contains("/leases") && !r.path.contains("/configmaps/"))
            .collect()
    }

    /// The longest time between successful renewals, from the last one before `fault` to now.
    fn longest_renew_gap(&self, fault: Instant) -> Duration {
        let renewed: Vec<Instant> = self
            .server
            .requests()
            .iter()
            .filter(|r| is_lease_hold(r))
            .filter_map(|r| r.answered)
            .collect();
        let last_before = renewed.iter().filter(|t| **t <= fault).max();
        longest_gap(*last_before.unwrap_or(&fault), &renewed, Instant::now())
    }

    /// The leader kept its lease: still running, never lost it, and renewed after `fault`.
    fn kept_the_lease(&mut self, fault: Instant) {
        let log = self.skiff.logs();
        assert!(
            self.skiff.is_running() && !log.contains("leader election lost"),
            "log:\n{log}"
        );
        let renewed_after =
            (self.server.requests().iter()).any(|r| is_lease_hold(r) && r.received > fault);
        assert!(renewed_after, "no renewal after the fault; log:\n{log}");
        eprintln!(
            "longest renew gap after the fault: {:?}",
            self.longest_renew_gap(fault)
        );
    }
}

fn is_copy_create(r: &RequestRecord) -> bool {
    r.method == "POST" && r.path.ends_with("/configmaps") && r.status == 201
}

#[test]
fn silent_watches_resume_from_their_resource_version_without_a_relist() {
    // The default lease timings (renew deadline 10 s, retry 2 s): the cut below goes by how
    // quiet a connection is, and may now and then take an idle pooled lease connection too;
    // with the defaults the hedge has time to route a renewal around it, as in production.
    let faulty = Faulty::start(
        "silent-watches",
        3,
        &["--watch-idle-timeout=10s", "--deafness-timeout=0"],
    );
    // Each watch asks the server to end it after 8 s (80 % of 10 s); the fake sends a bookmark
    // every second. Cut when every watch has been open at least 2 s: the client has been quiet
    // on all of them, the server has not.
    let settled = eventually(START, || {
        let latest = faulty
            .server
            .requests()
            .into_iter()
            .filter(|r| r.watch)
            .map(|r| r.received)
            .max();
        latest.is_some_and(|at| at.elapsed() >= Duration::from_secs(2))
    });
    assert!(settled, "the watches never settled");
    let fault = Instant::now();
    let killed = faulty.proxy.kill_watches(Duration::from_millis(1500));
    assert!(killed >= 3, "only {killed} watch connections to kill");
    // A liveness bound, 10× the 10 s idle timeout that finds the dead watches.
    let took = faulty.new_namespace_copied_within("late-0", Duration::from_secs(100));
    let log = faulty.skiff.logs();
    let took = took.unwrap_or_else(|| panic!("the new namespace never got its copy; log:\n{log}"));
    eprintln!("watches dead, lease alive: the new namespace got its copy after {took:?}");
    assert!(
        log.contains("heard nothing"),
        "no silence noticed; log:\n{log}"
    );
    let relists = faulty.lists_since(fault);
    assert!(
        relists.is_empty(),
        "relisted after the silence: {relists:?}"
    );
    let resumed = faulty
        .server
        .requests()
        .into_iter()
        .filter(|r| r.received > fault && r.watch && !r.path.contains("/leases"))
        .collect::<Vec<_>>();
    assert!(
        resumed.iter().all(|r| r
            .params()
            .get("resourceVersion")
            .is_some_and(|v| !v.is_empty())),
        "a watch restarted without a resourceVersion: {resumed:?}"
    );
    // A live server must end each watch before its idle deadline: 80 % of 10 s.
    let timeouts: Vec<String> = resumed
        .iter()
        .filter_map(|r| r.params().get("timeoutSeconds").cloned())
        .collect();
    assert!(
        !timeouts.is_empty() && timeouts.iter().all(|t| t == "8"),
        "server-side watch timeouts {timeouts:?} are not within the 10 s idle timeout"
    );
    // A renewal held up longer than the renew deadline would have cost the lease.
    let mut faulty = faulty;
    faulty.kept_the_lease(fault);
}

/// Default lease timings (renew deadline 10 s, retry 2 s): the renewal on the dead pooled
/// connection is sent again on a new one after 1 s (the hedge), whose answer makes every
/// connection suspect, so the watches resume at once instead of at their 1 min idle timeout.
#[test]
fn when_every_connection_dies_the_lease_hedges_and_the_watches_resume_at_once() {
    let mut faulty = Faulty::start("dead-connections", 3, &["--watch-idle-timeout=1m"]);
    // Every watch open and a renewal since: the connections to kill are all there.
    let open = eventually(START, || {
        let records = faulty.server.requests();
        let last_watch = (records.iter().enumerate())
            .filter(|(_, r)| r.watch && !r.path.contains("/leases") && r.status == 200)
            .map(|(i, _)| i)
            .max();
        last_watch.is_some_and(|w| records[w..].iter().any(is_lease_hold))
    });
    assert!(open, "the watches never opened");
    let fault = Instant::now();
    assert!(
        faulty.proxy.kill_open() >= 4,
        "the watches and the lease connection"
    );
    // A liveness bound, 10× the seconds the hedge and the suspicion take; the 1 min watch idle
    // timeout alone would take longer.
    let bound = Duration::from_secs(40);
    let took = faulty.new_namespace_copied_within("late-0", bound);
    let log = faulty.skiff.logs();
    let took = took.unwrap_or_else(|| panic!("the new namespace never got its copy; log:\n{log}"));
    eprintln!("every connection dead: the new namespace got its copy after {took:?}");
    assert!(
        log.contains("while a new connection answered"),
        "the lease request was not hedged on a new connection; log:\n{log}"
    );
    assert!(log.contains("are suspect"), "log:\n{log}");
    assert!(
        !log.contains("heard nothing"),
        "the watches resumed by their idle timeout, not the suspicion; log:\n{log}"
    );
    let relists = faulty.lists_since(fault);
    assert!(relists.is_empty(), "relisted after the fault: {relists:?}");
    faulty.kept_the_lease(fault);
}
