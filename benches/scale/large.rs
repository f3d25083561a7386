//! The scale benchmark at the size of the largest clusters, on the real control plane:
//! `cargo bench --bench scale -- --real --namespaces 100000` (`make bench-large`).
//!
//! The namespaces are created in bulk (the API server's time is reported), then 1,000 Mirrors
//! with varied selectors over several label keys: ten select 1,000 namespaces each, the rest a
//! few or none. skiff runs as shipped (its ServiceAccount, QPS 20 unless `SCALE_QPS` says
//! otherwise) inside a 64 MiB memory cgroup where one can be made: the fan-out, its memory
//! idle and during the fan-out, the CPU per Namespace event of a relabel burst that changes no
//! selection, then a restart: time to leading and converged against the time of a bare paged
//! list, and the objects it wrote. Then the controller-runtime peer (`testbin/peer/`, every
//! namespace cached as an operator with per-object selectors must) copies one source into
//! 1,000 namespaces at the same scale: its memory, and whether it lives within 64 MiB.

use super::cgroup::MemoryCgroup;
use super::support::control_plane::ControlPlane;
use super::support::lease::LeaseReader;
use super::support::peer;
use super::support::skiff::{TempDir, eventually, proc_status_kib};
use super::{Process, cpu_us};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[path = "large_world.rs"]
mod world;

const LIMIT: Duration = Duration::from_secs(3600);
/// The shipped Deployment's memory limit.
const POD_LIMIT: u64 = 64 * 1024 * 1024;
/// Namespaces relabelled in the burst.
const RELABELS: usize = 10_000;

/// Memory of a process over a phase, KiB: the highest VmRSS and RssAnon sampled, and VmHWM.
#[derive(Debug, Default, Clone, Copy)]
struct Peak {
    rss: u64,
    anon: u64,
    hwm: u64,
}

impl Peak {
    fn sample(&mut self, pid: u32) {
        let kib = |field| proc_status_kib(pid, field).unwrap_or(0);
        self.rss = self.rss.max(kib("VmRSS"));
        self.anon = self.anon.max(kib("RssAnon"));
        self.hwm = self.hwm.max(kib("VmHWM"));
    }
}

pub fn run(namespaces: usize) {
    let started = Instant::now();
    let cp = ControlPlane::start();
    cp.install_manifests();
    let created = world::create(&cp, namespaces);
    println!(
        "{namespaces} namespaces created in {created:.1} s (the API server's time, 4 clients)"
    );
    let listed = world::list_time(&cp);
    println!("a paged list of every namespace (1,000 a page, no rate limit) takes {listed:.1} s");
    let skiff = run_skiff(&cp, namespaces);
    println!("skiff: {}", skiff.summary());
    let baseline = run_baseline(&cp, namespaces);
    let peer = run_peer(&cp);
    println!("\nthe run took {:.0} s\n", started.elapsed().as_secs_f64());
    report(namespaces, created, listed, &skiff, &peer);
    if let Some(before) = baseline {
        println!(
            "\nSCALE_BASELINE, restarted on the same world ({}):\n",
            before.cgroup
        );
        println!(
            "restart → leading / converged {:.1} s / {:.1} s; writes {}; idle VmRSS {} / RssAnon {} MiB; VmHWM {} MiB; CPU per event {:.1} µs",
            before.restart_to_leading,
            before.restart_to_converged,
            before.restart_writes,
            mib(before.idle.rss),
            mib(before.idle.anon),
            mib(before.restart_peak.hwm.max(before.idle.hwm)),
            before.cpu_per_event_us
        );
    }
}

/// skiff's figures.
#[derive(Default)]
struct SkiffRun {
    qps: String,
    fan_out: f64,
    copies: usize,
    during: Peak,
    /// The first process, 10 s after its fan-out.
    after_fan_out: Peak,
    /// The restarted process, converged on the copies already there.
    idle: Peak,
    cpu_per_event_us: f64,
    restart_to_leading: f64,
    restart_to_converged: f64,
    restart_writes: usize,
    restart_peak: Peak,
    cgroup: String,
}

impl SkiffRun {
    /// Every figure on one line, printed as soon as they are measured.
    fn summary(&self) -> String {
        format!(
            "fan-out {} copies in {:.1} s; during it VmRSS {} RssAnon {} MiB; after it VmRSS {} RssAnon {} MiB; \
             restarted, idle VmRSS {} RssAnon {} MiB; \
             CPU per event {:.1} µs; restart → leading {:.1} s, converged {:.1} s, {} objects written; \
             VmHWM {} MiB",
            self.copies,
            self.fan_out,
            mib(self.during.rss),
            mib(self.during.anon),
            mib(self.after_fan_out.rss),
            mib(self.after_fan_out.anon),
            mib(self.idle.rss),
            mib(self.idle.anon),
            self.cpu_per_event_us,
            self.restart_to_leading,
            self.restart_to_converged,
            self.restart_writes,
            mib(self
                .during
                .hwm
                .max(self.idle.hwm)
                .max(self.restart_peak.hwm)),
        )
    }
}

fn qps() -> String {
    std::env::var("SCALE_QPS").unwrap_or_else(|_| "20".into())
}

fn run_skiff(cp: &ControlPlane, namespaces: usize) -> SkiffRun {
    let mut run = SkiffRun {
        qps: qps(),
        ..SkiffRun::default()
    };
    let cgroup = MemoryCgroup::new("skiff-64mi", POD_LIMIT);
    run.cgroup = match &cgroup {
        Ok(_) => "inside a 64 MiB memory cgroup".into(),
        Err(e) => format!("without a memory cgroup ({e})"),
    };
    println!("skiff runs {}", run.cgroup);
    let dir = TempDir::new("scale-large");
    let qps_flags = [
        "--leader-election-namespace=skiff-system".to_owned(),
        format!("--kube-api-qps={}", run.qps),
        format!(
            "--kube-api-burst={}",
            run.qps.parse::<f64>().unwrap_or(20.0) * 1.5
        ),
    ];
    let flags: Vec<&str> = qps_flags.iter().map(String::as_str).collect();
    let kubeconfig = cp.operator_kubeconfig();
    let launch = |tag: &str, limited: bool| {
        let cgroup = cgroup.as_ref().ok().filter(|_| limited);
        Process::with(&kubeconfig, &dir, tag, &flags, cgroup)
    };
    let mut limited = cgroup.is_ok();
    let mut first = launch("first", limited);
    let expected = world::expected_copies();
    world::add_mirrors(cp);
    let fan_out_start = Instant::now();
    let done = eventually(LIMIT, || {
        if limited && first.ended() {
            // Killed by the cgroup's limit: said as measured, and the run goes on without it.
            let peak = cgroup.as_ref().ok().and_then(|c| c.peak_kib()).unwrap_or(0);
            run.cgroup = format!(
                "OOM-killed in the 64 MiB cgroup {:.0} s into the fan-out (cgroup peak {} MiB); measured again without a limit",
                fan_out_start.elapsed().as_secs_f64(),
                mib(peak)
            );
            println!("skiff: {}", run.cgroup);
            limited = false;
            first = launch("first-unlimited", false);
        }
        first.assert_alive();
        run.during.sample(first.pid());
        std::thread::sleep(Duration::from_secs(2));
        world::synced(cp) >= expected
    });
    assert!(done, "fan-out incomplete; log:\n{}", first.skiff.logs());
    run.fan_out = fan_out_start.elapsed().as_secs_f64();
    run.copies = world::count_copies(cp);
    first.settle();
    std::thread::sleep(Duration::from_secs(10));
    run.after_fan_out = idle(first.pid());
    run.cpu_per_event_us = relabel_burst(cp, &mut first, ("0", "1"), namespaces - 1);
    first.skiff.terminate(Duration::from_secs(60));
    let mut second = restart(cp, &mut run, || launch("second", limited));
    if let Ok(cgroup) = &cgroup {
        println!(
            "cgroup peak {} KiB, OOM kills {}",
            cgroup.peak_kib().unwrap_or(0),
            cgroup.oom_kills()
        );
    }
    second.skiff.terminate(Duration::from_secs(60));
    run
}

/// A restart on the converged world: `start` launches the new process; its time to lead and
/// converge, the objects it wrote and its memory go into `run`.
fn restart(cp: &ControlPlane, run: &mut SkiffRun, start: impl FnOnce() -> Process) -> Process {
    let before = world::versions(cp);
    let mut lease = LeaseReader::new(cp);
    let mut p = start();
    let tag = p
        .skiff
        .log
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let leading = eventually(LIMIT, || {
        p.assert_alive();
        run.restart_peak.sample(p.pid());
        lease.read().is_some_and(|l| l.holder.starts_with(&tag))
    });
    assert!(leading, "no leader; log:\n{}", p.skiff.logs());
    run.restart_to_leading = p.started.elapsed().as_secs_f64();
    let converged = p.wait_converged(world::MIRRORS);
    run.restart_to_converged = (converged - p.started).as_secs_f64();
    p.settle();
    std::thread::sleep(Duration::from_secs(10));
    run.restart_writes = world::changed(&before, &world::versions(cp));
    run.idle = idle(p.pid());
    run.restart_peak.sample(p.pid());
    p
}

/// The build `SCALE_BASELINE` names (an earlier skiff), restarted on the converged world
/// without a cgroup: its restart, memory and CPU per event, for before/after figures.
fn run_baseline(cp: &ControlPlane, namespaces: usize) -> Option<SkiffRun> {
    let binary = PathBuf::from(std::env::var_os("SCALE_BASELINE")?);
    let dir = TempDir::new("scale-baseline");
    let mut run = SkiffRun {
        qps: qps(),
        cgroup: "without a memory cgroup".into(),
        ..SkiffRun::default()
    };
    let flags = skiff_flags(&run.qps);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let kubeconfig = cp.operator_kubeconfig();
    let mut p = restart(cp, &mut run, || {
        Process::of(&binary, &kubeconfig, &dir, "baseline", &flags, None)
    });
    run.cpu_per_event_us = relabel_burst(cp, &mut p, ("1", "0"), namespaces - 2);
    run.restart_peak.sample(p.pid());
    p.skiff.terminate(Duration::from_secs(60));
    Some(run)
}

fn skiff_flags(qps: &str) -> Vec<String> {
    let burst = qps.parse::<f64>().unwrap_or(20.0) * 1.5;
    vec![
        "--leader-election-namespace=skiff-system".to_owned(),
        format!("--kube-api-qps={qps}"),
        format!("--kube-api-burst={burst}"),
    ]
}

/// Median-free idle sample: the highest of 10 readings 1 s apart (VmHWM is the process's).
fn idle(pid: u32) -> Peak {
    let mut peak = Peak::default();
    for _ in 0..10 {
        std::thread::sleep(Duration::from_secs(1));
        peak.sample(pid);
    }
    peak
}

/// Flips `churn` (`from`, `to`) on [`RELABELS`] namespaces (no selector names it), then
/// selects namespace `sentinel` for the first Mirror; the CPU per event over the burst, in µs.
fn relabel_burst(
    cp: &ControlPlane,
    p: &mut Process,
    (from, to): (&str, &str),
    sentinel: usize,
) -> f64 {
    let cpu_before = cpu_us(p.pid());
    let started = Instant::now();
    let sentinel = world::namespace_name(sentinel);
    super::real::relabel_burst(cp, p, (from, to), &sentinel, "team=t0", world::SOURCE);
    println!(
        "relabel burst of {RELABELS} sent in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    p.settle();
    (cpu_us(p.pid()) - cpu_before) / (RELABELS + 1) as f64
}

/// The peer's figures.
#[derive(Default)]
struct PeerRun {
    fan_out: Option<f64>,
    during: Peak,
    idle: Peak,
    in_cgroup: String,
}

fn run_peer(cp: &ControlPlane) -> PeerRun {
    let binary = peer::binary();
    let help = std::process::Command::new(&binary).arg("-h").output();
    let knows =
        help.is_ok_and(|o| String::from_utf8_lossy(&o.stderr).contains("cache-all-namespaces"));
    assert!(
        knows,
        "{} lacks --cache-all-namespaces: rebuild it (rm bin/skiff-peer && make peer)",
        binary.display()
    );
    let kubeconfig = peer::install(cp);
    let mut run = PeerRun::default();
    let cgroup = MemoryCgroup::new("peer-64mi", POD_LIMIT);
    run.in_cgroup = match &cgroup {
        Ok(cgroup) => {
            let mut peer =
                world::start_peer(cp, &binary, &kubeconfig, "peer-limited", Some(cgroup));
            let survived = peer_converges(cp, &mut peer, &mut Peak::default());
            let _ = peer.kill();
            let _ = peer.wait();
            match survived {
                Some(secs) => format!("converged in {secs:.0} s within 64 MiB"),
                None => format!(
                    "OOM-killed {} time(s) within 64 MiB (cgroup peak {} KiB)",
                    cgroup.oom_kills(),
                    cgroup.peak_kib().unwrap_or(0)
                ),
            }
        }
        Err(e) => format!("not run in a cgroup ({e})"),
    };
    world::reset_peer(cp);
    let mut peer = world::start_peer(cp, &binary, &kubeconfig, "peer", None);
    run.fan_out = peer_converges(cp, &mut peer, &mut run.during);
    if run.fan_out.is_some() {
        std::thread::sleep(Duration::from_secs(10));
        run.idle = idle(peer.id());
    }
    let _ = peer.kill();
    let _ = peer.wait();
    run
}

/// Waits for the peer's 1,000 copies, sampling its memory; the fan-out's seconds, or `None`
/// if it died first.
fn peer_converges(
    cp: &ControlPlane,
    peer: &mut std::process::Child,
    peak: &mut Peak,
) -> Option<f64> {
    let started = Instant::now();
    loop {
        if !matches!(peer.try_wait(), Ok(None)) || started.elapsed() > LIMIT {
            return None;
        }
        peak.sample(peer.id());
        if world::peer_copies(cp) >= world::PEER_COPIES {
            return Some(started.elapsed().as_secs_f64());
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

fn report(namespaces: usize, created: f64, listed: f64, s: &SkiffRun, p: &PeerRun) {
    println!(
        "## {namespaces} namespaces, {} Mirrors, real control plane\n",
        world::MIRRORS
    );
    println!("namespaces created in {created:.1} s; a paged list of them takes {listed:.1} s\n");
    println!("| figure | skiff | controller-runtime peer |");
    println!("|---|---|---|");
    let peer_fan_out = p
        .fan_out
        .map_or("did not finish".into(), |s| format!("{s:.1} s"));
    println!(
        "| fan-out | {} copies in {:.1} s (QPS {}) | 1,000 copies in {peer_fan_out} (QPS 20) |",
        s.copies, s.fan_out, s.qps
    );
    let row = |what: &str, a: u64, b: u64| println!("| {what} | {} MiB | {} MiB |", mib(a), mib(b));
    row(
        "VmRSS, idle (skiff: restarted on its copies)",
        s.idle.rss,
        p.idle.rss,
    );
    row(
        "RssAnon, idle (skiff: restarted on its copies)",
        s.idle.anon,
        p.idle.anon,
    );
    println!(
        "| VmRSS / RssAnon 10 s after the fan-out | {} / {} MiB | |",
        mib(s.after_fan_out.rss),
        mib(s.after_fan_out.anon)
    );
    row(
        "VmRSS, highest during the fan-out",
        s.during.rss,
        p.during.rss,
    );
    row(
        "RssAnon, highest during the fan-out",
        s.during.anon,
        p.during.anon,
    );
    row(
        "VmHWM",
        s.idle.hwm.max(s.during.hwm),
        p.idle.hwm.max(p.during.hwm),
    );
    println!(
        "| CPU per Namespace event, burst of {RELABELS} changing no selection | {:.1} µs | |",
        s.cpu_per_event_us
    );
    println!(
        "| restart → leading / converged (copies there) | {:.1} s / {:.1} s | |",
        s.restart_to_leading, s.restart_to_converged
    );
    println!(
        "| VmHWM after the restart | {} MiB | |",
        mib(s.restart_peak.hwm)
    );
    println!(
        "| objects written on the restart | {} | |",
        s.restart_writes
    );
    println!(
        "| within the 64 MiB limit | {} | {} |",
        s.cgroup, p.in_cgroup
    );
    let goal = |ok: bool| if ok { "met" } else { "MISSED" };
    let hwm = (s.during.hwm.max(s.after_fan_out.hwm)).max(s.restart_peak.hwm);
    println!("\nGoals:");
    println!(
        "- VmHWM ≤ 40 MiB: {} ({} MiB)",
        goal(hwm <= 40 * 1024),
        mib(hwm)
    );
    println!(
        "- RssAnon idle ≤ 24 MiB: {} ({} MiB)",
        goal(s.idle.anon <= 24 * 1024),
        mib(s.idle.anon)
    );
    println!(
        "- restart to converged ≤ list time + 5 s: {} ({:.1} s vs {:.1} s)",
        goal(s.restart_to_converged <= listed + 5.0),
        s.restart_to_converged,
        listed + 5.0
    );
    println!(
        "- 0 writes on restart: {} ({})",
        goal(s.restart_writes == 0),
        s.restart_writes
    );
}
