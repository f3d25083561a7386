//! Hostile traffic on the probe and metrics ports, the same for every operator: 3,000
//! connections sending a partial request (slowloris; over TLS on the metrics port), 3,000 where
//! half send the start of a TLS ClientHello and half nothing, and one 10 MiB header. Each
//! operator leads with both ports open (metrics over HTTPS with token reviews, as kubebuilder
//! scaffolds it) while its memory, open files, `/healthz`, an authorized scrape and its Lease
//! are watched from outside.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::lease_watch::{LeaseWatch, renewals};
use crate::operator::{Launch, Operator, Replica};
use crate::support::control_plane::ControlPlane;
use crate::support::flood::{Attack, Flood, open_fds, reset_peak};
use crate::support::metrics_reader::service_account_token;
use crate::support::scrape::{Trust, scrape_https};
use crate::support::skiff::{free_port, proc_status_kib};
use crate::support::vitals::{Vitals, healthz};
use crate::world::{Identity, TARGET};

const CONNECTIONS: usize = 3000;
const GIANT: usize = 10 << 20;
/// How long a flood's connections may stay open before the run stops waiting for them.
const CLOSE_LIMIT: Duration = Duration::from_secs(90);
/// The operator leads within this after it starts.
const LEAD_LIMIT: Duration = Duration::from_secs(60);
/// Authorized scrapes timed when idle.
const IDLE_SCRAPES: usize = 20;

/// One flood's figures (memory in KiB).
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub scenario: String,
    pub anon_before: u64,
    pub anon_during: u64,
    pub anon_after: u64,
    /// The peak resident size during the flood (VmHWM, reset before it).
    pub hwm: u64,
    pub fds_during: usize,
    pub fds_after: usize,
    /// Connections closed by the server within 1 s of opening, of those that connected.
    pub closed_within_1s: usize,
    pub connected: usize,
    /// The longest any connection was held; `None` if some were still open at the limit.
    pub all_closed: Option<Duration>,
    pub renew_gap: Duration,
    pub healthz_worst: Duration,
    pub healthz_failures: usize,
    pub scrapes_ok: usize,
    pub scrapes: usize,
}

/// Everything measured for one operator.
#[derive(Debug, Clone, Default)]
pub struct Flooded {
    pub label: &'static str,
    pub scrape_median: Duration,
    pub anon_idle: u64,
    pub outcomes: Vec<Outcome>,
    /// Why the floods stopped early: the operator exited or stopped answering `/healthz`.
    pub down: Option<String>,
}

pub fn run(cp: &ControlPlane, operator: &Operator, identity: &Identity) -> Flooded {
    let mut launch = Launch::new(cp, operator, identity, TARGET, "flood");
    let (probes, metrics) = (free_port(), free_port());
    launch.probe_address = format!("127.0.0.1:{probes}");
    launch.metrics_address = format!("127.0.0.1:{metrics}");
    let (namespace, name) = operator.lease();
    let watch = LeaseWatch::start(cp, namespace, name);
    let launched = Instant::now();
    let leader = launch.start("flood");
    let leads = watch.wait_for(launched, LEAD_LIMIT, |s| !s.holder.is_empty());
    assert!(
        leads.is_some(),
        "{} did not lead: {}",
        operator.label,
        leader.logs()
    );
    let token = service_account_token(cp, &format!("flood-reader-{}", operator.slug), true);
    let scrape = || match scrape_https(metrics, Some(&token), Trust::Any) {
        Ok((status, _)) => status,
        Err(why) => {
            println!("compare: {}: a scrape got no answer: {why}", operator.label);
            0
        }
    };
    let ready = crate::support::skiff::eventually(LEAD_LIMIT, || scrape() == 200);
    assert!(
        ready,
        "{}: no authorized scrape: {}",
        operator.label,
        leader.logs()
    );
    let mut flooded = Flooded {
        label: operator.label,
        scrape_median: scrape_median(&scrape),
        anon_idle: proc_status_kib(leader.pid(), "RssAnon").unwrap_or(0),
        outcomes: Vec::new(),
        down: None,
    };
    let at = |port| SocketAddr::from(([127, 0, 0, 1], port));
    let scenarios = [
        (
            "slowloris on probes",
            at(probes),
            Attack::Slowloris,
            CONNECTIONS,
        ),
        (
            "half-handshakes on probes",
            at(probes),
            Attack::HalfHandshake,
            CONNECTIONS,
        ),
        (
            "slowloris (TLS) on metrics",
            at(metrics),
            Attack::SlowlorisTls,
            CONNECTIONS,
        ),
        (
            "half-handshakes on metrics",
            at(metrics),
            Attack::HalfHandshake,
            CONNECTIONS,
        ),
        (
            "10 MiB header on probes",
            at(probes),
            Attack::GiantHeader { bytes: GIANT },
            1,
        ),
        (
            "10 MiB header on metrics",
            at(metrics),
            Attack::GiantHeaderTls { bytes: GIANT },
            1,
        ),
    ];
    let mut leader = leader;
    for (scenario, addr, attack, connections) in scenarios {
        println!("compare: {}: {scenario}", operator.label);
        if let Some(why) = down(&mut leader, probes) {
            println!("compare: {}: down before {scenario}: {why}", operator.label);
            flooded.down = Some(format!("down before \"{scenario}\": {why}"));
            break;
        }
        let mut outcome = one(&leader, probes, &watch, &scrape, addr, attack, connections);
        outcome.scenario = scenario.to_owned();
        println!("compare: {}: {outcome:?}", operator.label);
        flooded.outcomes.push(outcome);
    }
    if leader.exited().is_none() {
        let _ = leader.terminate(Duration::from_secs(40));
    }
    flooded
}

/// Why the operator cannot be flooded any more (it exited, or `/healthz` fails), with the end
/// of its log; `None` while it serves.
fn down(leader: &mut Replica, probes: u16) -> Option<String> {
    let why = match leader.exited() {
        Some(code) => format!("exited with {code}"),
        None if !healthz(probes) => "/healthz does not answer".to_owned(),
        None => return None,
    };
    let logs = leader.logs();
    let tail: Vec<&str> = logs.lines().rev().take(5).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Some(format!("{why}; its log ends: {}", tail.join(" / ")))
}

fn scrape_median(scrape: &dyn Fn() -> u16) -> Duration {
    let mut took: Vec<Duration> = (0..IDLE_SCRAPES)
        .map(|_| {
            let asked = Instant::now();
            scrape();
            asked.elapsed()
        })
        .collect();
    took.sort();
    took[took.len() / 2]
}

fn one(
    leader: &Replica,
    probes: u16,
    watch: &LeaseWatch,
    scrape: &dyn Fn() -> u16,
    addr: SocketAddr,
    attack: Attack,
    connections: usize,
) -> Outcome {
    let pid = leader.pid();
    reset_peak(pid);
    let anon = || proc_status_kib(pid, "RssAnon").unwrap_or(0);
    let anon_before = anon();
    let vitals = Vitals::watch(pid, Some(probes));
    let started = Instant::now();
    let flood = Flood::start(addr, attack, connections);
    let (mut scrapes, mut scrapes_ok) = (0, 0);
    while (!flood.all_attempted() || flood.counts().1 > 0) && started.elapsed() < CLOSE_LIMIT {
        scrapes += 1;
        scrapes_ok += usize::from(scrape() == 200);
        std::thread::sleep(Duration::from_secs(1));
    }
    let fates = flood.fates();
    let worst = vitals.finish();
    std::thread::sleep(Duration::from_secs(2));
    let hwm = proc_status_kib(pid, "VmHWM").unwrap_or(0);
    let (anon_after, fds_after) = (anon(), open_fds(pid).unwrap_or(0));
    drop(flood);
    let held: Vec<Duration> = fates.iter().filter_map(|f| f.held()).collect();
    let connected = fates.iter().filter(|f| f.opened.is_some()).count();
    let seen = watch.seen();
    let renewed: Vec<Instant> = renewals(&seen)
        .iter()
        .map(|s| s.at)
        .filter(|at| *at >= started)
        .collect();
    Outcome {
        scenario: String::new(),
        anon_before,
        anon_during: worst.rss_anon,
        anon_after,
        hwm,
        fds_during: worst.fds,
        fds_after,
        closed_within_1s: held
            .iter()
            .filter(|h| **h <= Duration::from_secs(1))
            .count(),
        connected,
        all_closed: (held.len() == connected)
            .then(|| held.iter().max().copied().unwrap_or_default()),
        renew_gap: longest_gap(started, &renewed, Instant::now()),
        healthz_worst: worst.healthz,
        healthz_failures: worst.healthz_failures,
        scrapes_ok,
        scrapes,
    }
}

fn longest_gap(from: Instant, times: &[Instant], to: Instant) -> Duration {
    let mut all = vec![from];
    all.extend_from_slice(times);
    all.push(to);
    all.windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default()
}

/// The flood table of the generated report.
pub fn render(all: &[Flooded]) -> String {
    let mut out = String::new();
    if all.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\n### Hostile traffic on the probe and metrics ports\n\n\
         {CONNECTIONS} connections per flood (one for the 10 MiB header), from one client on \
         loopback, while the operator leads. Memory in MiB from /proc/PID/status (VmHWM reset \
         before each flood); \"after\" is 2 s after the last hostile connection closed. The \
         Lease gap is between renewals seen by a watch, from the flood's start to its end \
         (the retry period is 2 s).\n"
    );
    let _ = writeln!(
        out,
        "| flood | operator | RssAnon before / during / after | VmHWM | fds during / after | closed ≤ 1 s | all closed after | Lease max gap | /healthz worst (failed) | scrapes 200 |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
    let scenarios = all[0].outcomes.iter().map(|o| o.scenario.clone());
    for (i, scenario) in scenarios.enumerate() {
        for flooded in all {
            let Some(o) = flooded.outcomes.get(i) else {
                continue;
            };
            let mib = |kib: u64| kib as f64 / 1024.0;
            let closed = o
                .all_closed
                .map_or(format!("> {} s", CLOSE_LIMIT.as_secs()), |d| {
                    format!("{:.1} s", d.as_secs_f64())
                });
            let _ = writeln!(
                out,
                "| {scenario} | {} | {:.1} / {:.1} / {:.1} | {:.1} | {} / {} | {} of {} | {closed} | {:.2} s | {:.0} ms ({}) | {} of {} |",
                flooded.label,
                mib(o.anon_before),
                mib(o.anon_during),
                mib(o.anon_after),
                mib(o.hwm),
                o.fds_during,
                o.fds_after,
                o.closed_within_1s,
                o.connected,
                o.renew_gap.as_secs_f64(),
                o.healthz_worst.as_secs_f64() * 1000.0,
                o.healthz_failures,
                o.scrapes_ok,
                o.scrapes,
            );
        }
    }
    for flooded in all {
        if let Some(why) = &flooded.down {
            let _ = writeln!(out, "\n{} went {why}", flooded.label);
        }
    }
    let _ = writeln!(
        out,
        "\n| idle leader | {} |",
        all.iter().map(|f| f.label).collect::<Vec<_>>().join(" | ")
    );
    let _ = writeln!(out, "|---|{}", "---|".repeat(all.len()));
    let medians: Vec<String> = all
        .iter()
        .map(|f| format!("{:.1} ms", f.scrape_median.as_secs_f64() * 1000.0))
        .collect();
    let _ = writeln!(
        out,
        "| authorized scrape (new TLS connection), median of {IDLE_SCRAPES} | {} |",
        medians.join(" | ")
    );
    let anon: Vec<String> = all
        .iter()
        .map(|f| format!("{:.1} MiB", f.anon_idle as f64 / 1024.0))
        .collect();
    let _ = writeln!(out, "| RssAnon before the floods | {} |", anon.join(" | "));
    out
}
