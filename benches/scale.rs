//! Scale benchmark: what one Namespace event costs skiff as the numbers of namespaces (N) and
//! Mirrors (M) grow, against the fake API server.
//!
//! Each cell seeds N namespaces and M Mirrors (ten of them selecting five namespaces each, the
//! rest selecting nothing), lets skiff converge, restarts it to time start → leading and
//! converged with nothing to write, then relabels 1,000 namespaces without changing any
//! selection and measures skiff's CPU time per event (from `/proc`), reconciles per event and
//! the time from the last event until the work queue is empty.
//!
//! `cargo bench --bench scale` runs N ∈ {1,000, 10,000} × M ∈ {1, 100, 1,000}, prints a
//! Markdown table and writes `benches/scale.svg`; `SKIFF_BINARY=path` measures another build
//! (for before/after figures), `SCALE_CELLS=1000x1,10000x100` runs only those cells.
//! `cargo bench --bench scale -- --real` measures
//! on the real control plane instead (3,000 namespaces, 1 and 201 Mirrors, 2,000 relabels).
//! `cargo test --all-targets` runs one small cell as a smoke test.

// Built with cfg(test) but no test harness, the support files' test modules import unused items.
#[path = "../tests/support/mod.rs"]
#[cfg_attr(test, allow(unused_imports))]
mod support;

#[path = "scale/cgroup.rs"]
mod cgroup;
mod common;
#[path = "scale/large.rs"]
mod large;
#[path = "scale/plot.rs"]
mod plot;
#[path = "scale/real.rs"]
mod real;

use common::bench_mode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::fake::FakeServer;
use support::scrape::sum_samples;
use support::skiff::{
    Skiff, TempDir, eventually, free_port, http_get, proc_status_kib, write_kubeconfig,
};

const HOME: &str = "skiff-system";
const SOURCE: &str = "app-ca";
/// Mirrors that select namespaces, and how many each selects.
const SELECTING: usize = 10;
const PER_MIRROR: usize = 5;
/// Namespace events of the measured burst.
const RELABELS: usize = 1_000;
const LIMIT: Duration = Duration::from_secs(600);

/// One cell's figures.
pub struct Cell {
    pub namespaces: usize,
    pub mirrors: usize,
    /// CPU time per namespace event, microseconds.
    pub cpu_per_event_us: f64,
    pub reconciles_per_event: f64,
    /// From the last event until the queue was empty and its effect visible, seconds.
    pub drain: f64,
    pub rss_anon_kib: u64,
    /// From process start until leading with every Mirror reconciled, seconds.
    pub start_to_converged: f64,
    pub restart_writes: usize,
}

fn namespace_name(i: usize) -> String {
    format!("ns-{i:05}")
}

fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

/// The cell's world: namespaces `ns-00000`…, the source, and the Mirrors.
fn seed(n: usize, m: usize) -> FakeServer {
    let server = FakeServer::start();
    server.insert(namespace(HOME, json!({})));
    server.insert(namespace("sentinel", json!({})));
    for i in 0..n {
        let labels = if i < SELECTING * PER_MIRROR {
            json!({"group": format!("g{}", i / PER_MIRROR)})
        } else {
            json!({"churn": "0"})
        };
        server.insert(namespace(&namespace_name(i), labels));
    }
    server.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": SOURCE, "namespace": HOME}, "data": {"ca.crt": "PEM"}}));
    for i in 0..m {
        let group = if i < SELECTING {
            format!("g{i}")
        } else {
            format!("nobody-{i}")
        };
        server.insert(json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {"name": format!("m-{i:04}"), "namespace": HOME},
            "spec": {"source": {"kind": "ConfigMap", "name": SOURCE},
                     "namespaceSelector": {"matchLabels": {"group": group}}}}));
    }
    server
}

/// A skiff process, leading, with its metrics on `port`.
struct Process {
    skiff: Skiff,
    port: u16,
    started: Instant,
}

impl Process {
    fn start(server: &FakeServer, dir: &TempDir, run: &str) -> Process {
        let kubeconfig = write_kubeconfig(dir, &server.url(), None, None, HOME);
        let fast = ["--kube-api-qps=1000", "--kube-api-burst=1000"];
        Process::with(&kubeconfig, dir, run, &fast, None)
    }

    /// The measured binary as `run` (its log's name and its `POD_NAME`), inside `cgroup` if
    /// given.
    fn with(
        kubeconfig: &std::path::Path,
        dir: &TempDir,
        run: &str,
        extra: &[&str],
        cgroup: Option<&cgroup::MemoryCgroup>,
    ) -> Process {
        let binary = support::skiff::binary();
        Process::of(&binary, kubeconfig, dir, run, extra, cgroup)
    }

    /// [`Process::with`] for another build, `binary`.
    fn of(
        binary: &std::path::Path,
        kubeconfig: &std::path::Path,
        dir: &TempDir,
        run: &str,
        extra: &[&str],
        cgroup: Option<&cgroup::MemoryCgroup>,
    ) -> Process {
        let port = free_port();
        let metrics = format!("--metrics-bind-address=127.0.0.1:{port}");
        let mut args = vec![metrics.as_str(), "--leader-elect"];
        if knows_flag("--metrics-secure") {
            args.push("--metrics-secure=false");
        }
        args.extend_from_slice(extra);
        let started = Instant::now();
        let log = dir.0.join(format!("{run}.log"));
        let skiff = launch(binary, cgroup, kubeconfig, log, &args, run);
        Process {
            skiff,
            port,
            started,
        }
    }

    fn pid(&self) -> u32 {
        self.skiff.child.id()
    }

    /// Whether the process has ended.
    fn ended(&mut self) -> bool {
        !matches!(self.skiff.child.try_wait(), Ok(None))
    }

    /// Fails the benchmark, with the log and exit status, if the process has ended.
    fn assert_alive(&mut self) {
        if let Ok(Some(status)) = self.skiff.child.try_wait() {
            panic!("skiff ended ({status}); log:\n{}", self.skiff.logs());
        }
    }

    /// (queue adds, reconciles, queue depth), or `None` while the server is not up.
    fn work(&self) -> Option<(f64, f64, f64)> {
        let (200, metrics) = http_get(self.port, "/metrics")? else {
            return None;
        };
        let queue = [("name", "mirror")];
        Some((
            sum_samples(&metrics, "workqueue_adds_total", &queue),
            sum_samples(
                &metrics,
                "controller_runtime_reconcile_total",
                &[("controller", "mirror")],
            ),
            sum_samples(&metrics, "workqueue_depth", &queue),
        ))
    }

    /// Waits until every Mirror was reconciled at least once and the queue is empty; the
    /// instant it was first seen so.
    fn wait_converged(&mut self, mirrors: usize) -> Instant {
        let mut at = None;
        let done = eventually(LIMIT, || match self.work() {
            Some((_, reconciles, 0.0)) if reconciles >= mirrors as f64 => {
                at = Some(Instant::now());
                true
            }
            _ => false,
        });
        assert!(done, "not converged; log:\n{}", self.skiff.logs());
        at.unwrap_or_else(Instant::now)
    }

    /// Waits until the work counters stop moving and the queue is empty.
    fn settle(&self) -> (f64, f64) {
        let mut last = None;
        let quiet = eventually(LIMIT, || {
            std::thread::sleep(Duration::from_millis(300));
            let now = self.work();
            let same = now.is_some() && now == last && now.is_some_and(|w| w.2 == 0.0);
            last = now;
            same
        });
        assert!(quiet, "never settled; log:\n{}", self.skiff.logs());
        last.map(|(adds, reconciles, _)| (adds, reconciles))
            .unwrap_or_default()
    }
}

/// `binary` started as [`Skiff::start_with_env`] starts it, inside `cgroup` if given.
fn launch(
    binary: &std::path::Path,
    cgroup: Option<&cgroup::MemoryCgroup>,
    kubeconfig: &std::path::Path,
    log: std::path::PathBuf,
    args: &[&str],
    name: &str,
) -> Skiff {
    let stderr = std::fs::File::create(&log).expect("create the log");
    let mut command = match cgroup {
        Some(cgroup) => cgroup.command(binary),
        None => std::process::Command::new(binary),
    };
    let child = command
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .arg("--health-probe-bind-address=127.0.0.1:0")
        .args(args)
        .env("POD_NAME", name)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start skiff");
    Skiff { child, log }
}

/// Whether the measured binary has `flag` (a build from before it may not); its `--help` is
/// read once per run.
fn knows_flag(flag: &str) -> bool {
    static HELP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let help = HELP.get_or_init(|| {
        let out = std::process::Command::new(support::skiff::binary())
            .arg("--help")
            .output();
        out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    });
    help.contains(flag)
}

/// CPU time of every thread of `pid` so far, in microseconds: the scheduler's nanosecond
/// account (`/proc/PID/task/*/schedstat`), else utime + stime in clock ticks (`/proc/PID/stat`).
fn cpu_us(pid: u32) -> f64 {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten();
    let from_schedstat: Option<f64> = tasks
        .flatten()
        .map(|task| {
            let text = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            text.split_whitespace().next()?.parse::<f64>().ok()
        })
        .sum();
    if let Some(nanos) = from_schedstat.filter(|n| *n > 0.0) {
        return nanos / 1_000.0;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) * 10_000.0 // utime, stime at 100 Hz
}

fn set_labels(server: &FakeServer, name: &str, labels: Value) {
    let path = format!("/api/v1/namespaces/{name}");
    let mut ns = server.get(&path).expect("seeded namespace");
    ns["metadata"]["labels"] = labels;
    server.update(ns);
}

fn copies(server: &FakeServer) -> usize {
    let is_copy = |cm: &Value| cm["metadata"]["namespace"] != HOME;
    server
        .list("/api/v1/configmaps")
        .iter()
        .filter(|cm| is_copy(cm))
        .count()
}

/// Writes of copies and Mirrors since request `from` (not the Lease, nor the leader's Event).
fn writes_since(server: &FakeServer, from: usize) -> usize {
    let writes: Vec<String> = server.requests()[from..]
        .iter()
        .filter(|r| r.is_mutating())
        .filter(|r| !r.path.contains("/leases") && !r.path.ends_with("/events"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    if !writes.is_empty() {
        println!("writes on restart: {writes:?}");
    }
    writes.len()
}

fn run_cell(n: usize, m: usize, relabels: usize) -> Cell {
    let server = seed(n, m);
    let dir = TempDir::new(&format!("scale-{n}-{m}"));
    let expected = SELECTING.min(m) * PER_MIRROR;
    // First run: converge (the copies and statuses are written).
    let mut first = Process::start(&server, &dir, "first");
    first.wait_converged(m);
    assert!(
        eventually(LIMIT, || copies(&server) >= expected),
        "copies missing"
    );
    first.settle();
    first.skiff.terminate(Duration::from_secs(30));
    // Second run: nothing to write; time start → leading and converged.
    let from = server.requests().len();
    let mut second = Process::start(&server, &dir, "second");
    let converged = second.wait_converged(m);
    let start_to_converged = (converged - second.started).as_secs_f64();
    let before = second.settle();
    let restart_writes = writes_since(&server, from);
    // The burst: relabels that change no selection, then one that selects the sentinel.
    let cpu_before = cpu_us(second.pid());
    let first_relabelled = SELECTING * PER_MIRROR;
    for i in first_relabelled..(first_relabelled + relabels).min(n) {
        set_labels(&server, &namespace_name(i), json!({"churn": "1"}));
    }
    set_labels(&server, "sentinel", json!({"group": "g0"}));
    let last_event = Instant::now();
    let seen = eventually(LIMIT, || {
        server
            .get("/api/v1/namespaces/sentinel/configmaps/app-ca")
            .is_some()
            && second.work().is_some_and(|w| w.2 == 0.0)
    });
    assert!(
        seen,
        "the sentinel's copy never came; log:\n{}",
        second.skiff.logs()
    );
    let drain = last_event.elapsed().as_secs_f64();
    let after = second.settle();
    let cpu = cpu_us(second.pid()) - cpu_before;
    let events = (relabels.min(n - first_relabelled) + 1) as f64;
    let cell = Cell {
        namespaces: n,
        mirrors: m,
        cpu_per_event_us: cpu / events,
        reconciles_per_event: (after.1 - before.1) / events,
        drain,
        rss_anon_kib: proc_status_kib(second.pid(), "RssAnon").unwrap_or(0),
        start_to_converged,
        restart_writes,
    };
    second.skiff.terminate(Duration::from_secs(30));
    cell
}

/// N × M, or the cells `SCALE_CELLS` names (`1000x1,10000x100`).
fn chosen_cells() -> Vec<(usize, usize)> {
    let all = [1_000, 10_000]
        .into_iter()
        .flat_map(|n| [1, 100, 1_000].map(|m| (n, m)));
    let Ok(chosen) = std::env::var("SCALE_CELLS") else {
        return all.collect();
    };
    chosen
        .split(',')
        .filter_map(|cell| {
            let (n, m) = cell.trim().split_once('x')?;
            Some((n.parse().ok()?, m.parse().ok()?))
        })
        .collect()
}

fn print_table(cells: &[Cell]) {
    println!(
        "| N | M | CPU per event | reconciles per event | last event → queue empty | RssAnon | start → converged | writes on restart |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for c in cells {
        println!(
            "| {} | {} | {:.1} µs | {:.3} | {:.2} s | {:.1} MiB | {:.2} s | {} |",
            c.namespaces,
            c.mirrors,
            c.cpu_per_event_us,
            c.reconciles_per_event,
            c.drain,
            c.rss_anon_kib as f64 / 1024.0,
            c.start_to_converged,
            c.restart_writes
        );
    }
    let cpu = cells.iter().map(|c| c.cpu_per_event_us);
    let (low, high) = cpu.fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    println!(
        "\nlargest ÷ smallest CPU per event: {:.2}×",
        high / low.max(f64::MIN_POSITIVE)
    );
}

/// `--namespaces N` from the command line.
fn namespaces_arg() -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == "--namespaces")?;
    let value = args.get(at + 1)?;
    match value.parse() {
        Ok(n) if n >= 20_000 => Some(n),
        _ => panic!(
            "--namespaces {value}: give a count of at least 20,000 (the run's labels need them)"
        ),
    }
}

fn main() {
    if bench_mode() && std::env::args().any(|a| a == "--real") {
        match namespaces_arg() {
            Some(n) => large::run(n),
            None => real::run(),
        }
        return;
    }
    if !bench_mode() {
        let cell = run_cell(100, 12, 50);
        assert_eq!(
            cell.restart_writes, 0,
            "a restart with nothing changed wrote"
        );
        assert!(
            cell.reconciles_per_event < 1.0,
            "{}",
            cell.reconciles_per_event
        );
        println!("scale: smoke run ok (run `cargo bench --bench scale` for figures)");
        return;
    }
    let mut cells = Vec::new();
    for (n, m) in chosen_cells() {
        {
            let cell = run_cell(n, m, RELABELS);
            println!(
                "N={n} M={m}: {:.1} µs per event, {:.3} reconciles per event",
                cell.cpu_per_event_us, cell.reconciles_per_event
            );
            cells.push(cell);
        }
    }
    println!();
    print_table(&cells);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/scale.svg");
    match std::fs::write(path, plot::svg(&cells)) {
        Ok(()) => println!("wrote {path}"),
        Err(e) => println!("could not write {path}: {e}"),
    }
}
