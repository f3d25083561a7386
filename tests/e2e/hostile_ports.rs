//! e2e: the probe and metrics ports of the binary as launched hold under 3,000 hostile
//! connections each, on the real control plane: slow request heads (slowloris), TLS handshakes
//! started and never finished, and a header that never ends.
//!
//! Meanwhile skiff must keep its Lease (never lost, no other holder, renewed during the flood),
//! never fail the kubelet's probe (`GET /healthz` answered 200 within the kubelet's 1 s
//! timeout), and never lock out an authorized scraper (each scrape answered 200, a new
//! connection tried again if skiff closed one, as Prometheus's next scrape would), within
//! bounds of memory and open files.
//! Every hostile connection must be closed by skiff: over the connection cap by eviction (its
//! `skiff_serve_refused_total` counts them), the rest by their timeouts. skiff runs as its
//! ServiceAccount with the shipped RBAC, so the scrape's TokenReview and SubjectAccessReview
//! are the API server's real ones.
//!
//! Real time, as the binary runs: how fast `/healthz` answers and how long the Lease went
//! between renewals under a flood are speed goals, measured by `cargo bench --bench flood`
//! (BENCHMARKS.md, "Hostile traffic"); this test prints them and asserts what must hold
//! however busy the machine is. Its waits are liveness bounds of 10× or more. So is a scrape's
//! first connection: a scraper starved of CPU (the test's own thread, beside the flood's
//! client on a loaded machine) is silent in its turn of the handshake like an attacker, and
//! may be evicted for it; no server can tell the two apart. How many first connections get
//! 200 is `make compare`'s figure ("scrapes 200").

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::support::control_plane::{ControlPlane, E2E_REPLICA_FLAGS, require_e2e_binaries};
use crate::support::flood::{Attack, Fate, Flood};
use crate::support::lease::{LeasePoller, LeaseRecord, renew_gaps};
use crate::support::metrics_reader::service_account_token;
use crate::support::scrape::{Trust, scrape_https, sum_samples};
use crate::support::skiff::{Skiff, TempDir, eventually, free_port};
use crate::support::vitals::{Vitals, Worst};
use skiff::serve::limits::{HEAD_TIMEOUT, MAX_CONNECTIONS, MAX_TLS_CONNECTIONS};

/// Hostile connections per flood; giant headers are fewer, each one sending 10 MiB.
const CONNECTIONS: usize = 3000;
const GIANT_HEADERS: usize = 100;
const GIANT: usize = 10 << 20;
/// Every hostile connection must be closed by skiff within this of the flood's start: a
/// liveness bound, 24× the 5 s head timeout that closes the last of them (the floods end in
/// 5–10 s). A connection skiff never closes keeps the flood waiting until then, and fails it.
const CLOSED_WITHIN: Duration = Duration::from_secs(120);
/// How long a renewal of the Lease may take to be seen after a flood: a liveness bound, 30×
/// the e2e replicas' 1 s retry period.
const LIVENESS: Duration = Duration::from_secs(30);
/// Anonymous memory a flood may add: far above what skiff needs, far below what an unbounded
/// server took (58 MiB and more). The exact figures are BENCHMARKS.md's (`make compare`).
const ANON_GROWTH_KIB: u64 = 16 * 1024;
/// Connections one scrape may take: a closed connection (an eviction) is tried again at once;
/// any answer but 200 fails. Three evictions of one scraper in a row would be a lockout.
const SCRAPE_ATTEMPTS: usize = 3;
/// Each flood watches the Lease at least this long, so a flood shorter than a retry period
/// (giant headers are cut at once) still sees several renewals.
const MIN_WATCH: Duration = Duration::from_secs(4);

/// The tests share the control plane's one `skiff-leader` Lease: one at a time.
static LEASE: Mutex<()> = Mutex::new(());

struct Leader {
    skiff: Skiff,
    /// Its identity in the Lease.
    holder: String,
    probes: u16,
    metrics: u16,
    reader_token: String,
    _dir: TempDir,
}

/// skiff as its ServiceAccount, leading, with both servers on known ports.
fn leader(cp: &'static ControlPlane, tag: &str) -> Leader {
    cp.apply(&release_lease());
    let reader_token = service_account_token(cp, &format!("{tag}-reader"), true);
    let dir = TempDir::new(tag);
    let (probes, metrics) = (free_port(), free_port());
    let probe_flag = format!("--health-probe-bind-address=127.0.0.1:{probes}");
    let metrics_flag = format!("--metrics-bind-address=127.0.0.1:{metrics}");
    // Info, not the suites' debug: a flood would log a line per connection.
    let mut args: Vec<&str> = E2E_REPLICA_FLAGS
        .iter()
        .copied()
        .filter(|flag| !flag.starts_with("--log-level"))
        .collect();
    args.extend([
        probe_flag.as_str(),
        metrics_flag.as_str(),
        "--log-level=info",
    ]);
    let log = dir.0.join("skiff.log");
    let skiff = Skiff::start_with_env(&cp.operator_kubeconfig(), log, &args, &[("POD_NAME", tag)]);
    let poller = LeasePoller::start(cp, Duration::from_millis(100));
    let mine = format!("{tag}_");
    let leads = poller.wait_for(Instant::now(), LIVENESS, |r| r.holder.starts_with(&mine));
    let Some(holder) = leads.map(|r| r.holder) else {
        panic!("no leader; log:\n{}", skiff.logs());
    };
    let scraped = eventually(LIVENESS, || {
        matches!(
            scrape_https(metrics, Some(&reader_token), Trust::Any),
            Ok((200, _))
        )
    });
    assert!(scraped, "no authorized scrape; log:\n{}", skiff.logs());
    Leader {
        skiff,
        holder,
        probes,
        metrics,
        reader_token,
        _dir: dir,
    }
}

fn release_lease() -> String {
    serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "skiff-leader", "namespace": "skiff-system"},
        "spec": {"holderIdentity": "", "leaseDurationSeconds": 1},
    })
    .to_string()
}

/// What one flood showed.
struct Verdict {
    worst: Worst,
    baseline_anon: u64,
    /// Whether the leader kept its Lease through the flood (see `LeasePoller::kept_by`).
    lease: Result<(), String>,
    /// The longest time between renewals seen, printed only (a speed figure).
    renew_gap: Duration,
    /// Connections the flooded server closed to make room or refused at its cap, as its
    /// `skiff_serve_refused_total` counted them during the flood.
    evicted: f64,
    /// Each authorized scrape: its status, or why there was none, per connection it took.
    scrapes: Vec<Vec<Result<u16, String>>>,
    fates: Vec<Fate>,
}

fn flood(
    cp: &'static ControlPlane,
    leader: &Leader,
    (port, server): (u16, &str),
    attack: Attack,
) -> Verdict {
    let pid = leader.skiff.child.id();
    let evicted_before = evictions(leader, server);
    let baseline_anon = crate::support::skiff::proc_status_kib(pid, "RssAnon").unwrap_or(0);
    let vitals = Vitals::watch(pid, Some(leader.probes));
    let poller = LeasePoller::start(cp, Duration::from_millis(100));
    let started = Instant::now();
    let connections = match attack {
        Attack::GiantHeader { .. } | Attack::GiantHeaderTls { .. } => GIANT_HEADERS,
        _ => CONNECTIONS,
    };
    let flood = Flood::start(
        SocketAddr::from(([127, 0, 0, 1], port)),
        attack,
        connections,
    );
    let mut scrapes = Vec::new();
    while !flood.all_attempted() || flood.counts().1 > 0 || started.elapsed() < MIN_WATCH {
        if started.elapsed() > CLOSED_WITHIN {
            break;
        }
        scrapes.push(scrape(leader));
        std::thread::sleep(Duration::from_millis(500));
    }
    let lease = poller.kept_by(&leader.holder, started, LIVENESS);
    let records = poller.stop();
    let worst = vitals.finish();
    let fates = flood.fates();
    Verdict {
        worst,
        baseline_anon,
        lease,
        renew_gap: longest_renew_gap(&records, started, &leader.holder),
        evicted: evictions(leader, server) - evicted_before,
        scrapes,
        fates,
    }
}

/// One authorized scrape: a new connection after each one skiff closed without an answer, at
/// most [`SCRAPE_ATTEMPTS`]; the status or failure of each.
fn scrape(leader: &Leader) -> Vec<Result<u16, String>> {
    let mut attempts = Vec::new();
    while attempts.len() < SCRAPE_ATTEMPTS {
        let attempt = scrape_https(leader.metrics, Some(&leader.reader_token), Trust::Any);
        let closed = attempt.is_err();
        attempts.push(attempt.map(|(status, _)| status));
        if !closed {
            break;
        }
    }
    attempts
}

/// Connections `server` (`probes` or `metrics`) evicted or refused at its cap so far.
fn evictions(leader: &Leader, server: &str) -> f64 {
    let metrics = scrape_https(leader.metrics, Some(&leader.reader_token), Trust::Any);
    let (_, text) = metrics.unwrap_or_else(|e| panic!("scrape the evictions: {e}"));
    ["evicted", "over_capacity"]
        .iter()
        .map(|reason| {
            let labels = [("server", server), ("reason", reason)];
            sum_samples(&text, "skiff_serve_refused_total", &labels)
        })
        .sum()
}

/// The longest time between renewals of `holder`, each timed when the poller first saw its
/// `renewTime` (the test's monotonic clock, not skiff's wall clock: a step of the wall clock,
/// as when a virtual machine is paused and resumed, is not a missed renewal).
fn longest_renew_gap(records: &[LeaseRecord], since: Instant, holder: &str) -> Duration {
    // The poller appends its readings in time order.
    let flooded = &records[records.partition_point(|r| r.at < since)..];
    renew_gaps(flooded, holder)
        .into_iter()
        .max()
        .unwrap_or(Duration::MAX)
}

/// `cap`: the connections the flooded server may keep; `silent`: whether the attack's
/// connections wait silently (they must then be evicted once more than `cap` arrive).
fn assert_held(verdict: &Verdict, leader: &mut Leader, what: &str, cap: usize, silent: bool) {
    let w = &verdict.worst;
    let fates = &verdict.fates;
    let connected = fates.iter().filter(|f| f.opened.is_some()).count();
    assert!(connected > 0, "{what}: no hostile connection got through");
    let still_open = fates
        .iter()
        .filter(|f| f.opened.is_some() && f.closed.is_none())
        .count();
    assert_eq!(
        still_open, 0,
        "{what}: connections still open {CLOSED_WITHIN:?} after the flood began"
    );
    if silent && connected > cap {
        assert!(
            verdict.evicted > 0.0,
            "{what}: {connected} silent connections and none evicted at the cap of {cap}"
        );
    }
    let log = leader.skiff.logs();
    assert!(
        leader.skiff.is_running() && !log.contains("leader election lost"),
        "{what}: the Lease was lost; log:\n{log}"
    );
    if let Err(why) = &verdict.lease {
        panic!("{what}: {why}; log:\n{log}");
    }
    assert_eq!(
        w.healthz_failures, 0,
        "{what}: /healthz failed {} of {} times",
        w.healthz_failures, w.probes
    );
    assert!(
        !verdict.scrapes.is_empty() && verdict.scrapes.iter().all(|s| s.last() == Some(&Ok(200))),
        "{what}: authorized scrapes answered {:?}",
        verdict.scrapes
    );
    let retried = verdict.scrapes.iter().filter(|s| s.len() > 1).count();
    let growth = w.rss_anon.saturating_sub(verdict.baseline_anon);
    assert!(
        growth <= ANON_GROWTH_KIB,
        "{what}: RssAnon grew {growth} KiB"
    );
    assert!(
        w.fds <= 2 * MAX_CONNECTIONS + 64,
        "{what}: {} open files at the worst",
        w.fds
    );
    let longest = fates
        .iter()
        .filter_map(Fate::held)
        .max()
        .unwrap_or_default();
    println!(
        "{what}: {connected} of {} connected, {} evicted at the cap; RssAnon {} → {} KiB, {} fds, \
         /healthz ≤ {:?}, renew gap {:?}, longest held {longest:?} (head timeout {HEAD_TIMEOUT:?}), \
         {} scrapes, {retried} on a second connection",
        fates.len(),
        verdict.evicted,
        verdict.baseline_anon,
        w.rss_anon,
        w.fds,
        w.healthz,
        verdict.renew_gap,
        verdict.scrapes.len()
    );
}

fn run(attacks: &[(Attack, bool)], tag: &str) {
    require_e2e_binaries();
    let _one_at_a_time = LEASE.lock().unwrap_or_else(|e| e.into_inner());
    let _ = skiff::fd_limit::raise();
    let cp = ControlPlane::installed();
    let mut leader = leader(cp, tag);
    for (attack, on_metrics) in attacks {
        let (port, name, cap) = match on_metrics {
            true => (leader.metrics, "metrics", MAX_TLS_CONNECTIONS),
            false => (leader.probes, "probes", MAX_CONNECTIONS),
        };
        let verdict = flood(cp, &leader, (port, name), *attack);
        let what = format!("{} on {name}", attack.label());
        let silent = !matches!(
            attack,
            Attack::GiantHeader { .. } | Attack::GiantHeaderTls { .. }
        );
        assert_held(&verdict, &mut leader, &what, cap, silent);
    }
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn the_probe_port_holds_under_slowloris_half_handshakes_and_a_giant_header() {
    run(
        &[
            (Attack::Slowloris, false),
            (Attack::HalfHandshake, false),
            (Attack::GiantHeader { bytes: GIANT }, false),
        ],
        "hostile-probes",
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn the_metrics_port_holds_under_slowloris_half_handshakes_and_a_giant_header() {
    run(
        &[
            (Attack::SlowlorisTls, true),
            (Attack::HalfHandshake, true),
            (Attack::GiantHeaderTls { bytes: GIANT }, true),
        ],
        "hostile-metrics",
    );
}
