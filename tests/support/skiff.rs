//! Runs the built `skiff` binary against a test server: kubeconfig, flags, logs, signals.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A temp dir removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("skiff-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes a kubeconfig for `server` (plain HTTP or TLS with `ca_pem`) with namespace `ns`.
pub fn write_kubeconfig(
    dir: &TempDir,
    server: &str,
    ca_pem: Option<&[u8]>,
    token: Option<&str>,
    ns: &str,
) -> PathBuf {
    let mut cluster = format!("    server: {server}\n");
    if let Some(ca) = ca_pem {
        let path = dir.0.join("ca.crt");
        std::fs::write(&path, ca).expect("write CA");
        cluster.push_str(&format!("    certificate-authority: {}\n", path.display()));
    }
    let user = token.map_or_else(|| "    {}\n".to_string(), |t| format!("    token: {t}\n"));
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n{cluster}users:\n- name: test\n  user:\n{user}contexts:\n- name: test\n  context:\n    cluster: test\n    user: test\n    namespace: {ns}\ncurrent-context: test\n"
    );
    let path = dir.0.join("kubeconfig");
    let mut f = std::fs::File::create(&path).expect("create kubeconfig");
    f.write_all(text.as_bytes()).expect("write kubeconfig");
    path
}

/// The built `skiff` binary (cargo names it for tests and benches; examples get its path).
/// `SKIFF_BINARY` names another build instead (the benchmarks measure the static binary, or an
/// older build, that way).
pub fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("SKIFF_BINARY") {
        return PathBuf::from(path);
    }
    match option_env!("CARGO_BIN_EXE_skiff") {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/debug/skiff"),
    }
}

/// A running `skiff` process; killed on drop. Its stderr goes to a log file.
pub struct Skiff {
    pub child: Child,
    pub log: PathBuf,
}

impl Skiff {
    /// Starts the binary with `args` (probes and metrics on free ports unless given).
    pub fn start(kubeconfig: &PathBuf, log: PathBuf, args: &[&str]) -> Skiff {
        Skiff::start_with_env(kubeconfig, log, args, &[])
    }

    /// [`Skiff::start`] with extra environment variables (e.g. `POD_NAME` for a known identity).
    pub fn start_with_env(
        kubeconfig: &PathBuf,
        log: PathBuf,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Skiff {
        Skiff::start_program(&[binary().into()], kubeconfig, log, args, env)
    }

    /// [`Skiff::start_with_env`] of `program`: a skiff binary, or a launcher with its own
    /// arguments ending in one (an emulator: `qemu-aarch64 BINARY`).
    pub fn start_program(
        program: &[std::ffi::OsString],
        kubeconfig: &PathBuf,
        log: PathBuf,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Skiff {
        let stderr = std::fs::File::create(&log).expect("create log file");
        let (launcher, rest) = program.split_first().expect("a program to start");
        let mut cmd = Command::new(launcher);
        cmd.args(rest).arg("--kubeconfig").arg(kubeconfig);
        if !args
            .iter()
            .any(|a| a.starts_with("--health-probe-bind-address"))
        {
            cmd.arg("--health-probe-bind-address=127.0.0.1:0");
        }
        if !args.iter().any(|a| a.starts_with("--metrics-bind-address")) {
            cmd.arg("--metrics-bind-address=0");
        }
        cmd.args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        Skiff {
            child: cmd.spawn().expect("start skiff"),
            log,
        }
    }

    /// The port skiff reports it bound for `flag` (given port 0, the kernel's choice), waiting
    /// up to 10 s for the log line.
    pub fn bound_port(&self, flag: &str) -> u16 {
        let suffix = format!(" ({flag})");
        let mut port = None;
        eventually(Duration::from_secs(10), || {
            port = self.logs().lines().find_map(|line| {
                let (_, rest) = line.split_once("listening on ")?;
                let addr = rest.strip_suffix(suffix.as_str())?;
                addr.rsplit_once(':')?.1.parse().ok()
            });
            port.is_some()
        });
        port.unwrap_or_else(|| panic!("no port bound for {flag}; log:\n{}", self.logs()))
    }

    /// Whether the process has not exited yet.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} failed");
    }

    /// Sends SIGTERM and asserts that the process exits 0 within `limit`, showing its log if not.
    pub fn terminate(&mut self, limit: Duration) {
        self.signal("TERM");
        let code = self.wait_exit(limit);
        assert_eq!(code, Some(0), "exit after SIGTERM; log:\n{}", self.logs());
    }

    /// The exit code, waiting at most `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        self.wait_exit_at(limit).map(|(code, _)| code)
    }

    /// The exit code and when the exit was first seen (polled every 0.2 ms), waiting at most
    /// `limit`.
    pub fn wait_exit_at(&mut self, limit: Duration) -> Option<(i32, Instant)> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some((status.code().unwrap_or(-1), Instant::now()));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        None
    }
}

impl Drop for Skiff {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `check` every 20 ms until it holds or `limit` passes.
pub fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    check()
}

/// A `kB` field of `/proc/<pid>/status` (e.g. "VmRSS", "VmHWM") in KiB; `None` when the
/// process is gone or the field is missing (not Linux).
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status
        .lines()
        .find(|line| line.split(':').next() == Some(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `pid`'s RssAnon in KiB, the median of 10 readings 200 ms apart: a benchmark's reading of
/// memory per copy, steadier than one.
pub fn rss_anon_median(pid: u32) -> u64 {
    let mut samples: Vec<u64> = (0..10)
        .filter_map(|_| {
            std::thread::sleep(Duration::from_millis(200));
            proc_status_kib(pid, "RssAnon")
        })
        .collect();
    samples.sort_unstable();
    samples.get(samples.len() / 2).copied().unwrap_or(0)
}

/// A free loopback port for skiff to bind (`--metrics-bind-address` and the like).
pub fn free_port() -> u16 {
    super::ports::free_port().expect("a free loopback port")
}

/// A plain HTTP/1.1 GET on loopback: `(status, body)`, or `None` if nothing answered.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{BufRead as _, BufReader, Read as _};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let status = line.split_whitespace().nth(1)?.parse().ok()?;
    let mut length = None;
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    Some((status, String::from_utf8_lossy(&body).into_owned()))
}

/// The namespace the kubeconfigs of the leader tests name (and the Lease lives in).
pub const HOME_NS: &str = "skiff-system";
/// Short leader-election timings: lease 2 s, renew deadline 1.5 s, retry period 500 ms.
pub const SHORT_LEASE: [&str; 4] = [
    "--leader-elect",
    "--leader-elect-lease-duration=2s",
    "--leader-elect-renew-deadline=1500ms",
    "--leader-elect-retry-period=500ms",
];
pub const SHORT_RETRY: Duration = Duration::from_millis(500);
pub const SHORT_RENEW_DEADLINE: Duration = Duration::from_millis(1500);

/// Controller load: `namespaces` namespaces labelled `fanout=yes`, a source ConfigMap and a
/// Mirror selecting them, all in [`HOME_NS`]. Every selected namespace needs one create.
pub fn fan_out_world(server: &super::fake::FakeServer, namespaces: usize) {
    use serde_json::json;
    let namespace = |name: &str, labels: serde_json::Value| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}});
    server.insert(namespace(HOME_NS, json!({})));
    for n in 0..namespaces {
        server.insert(namespace(&format!("team-{n:04}"), json!({"fanout": "yes"})));
    }
    server.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "app-ca", "namespace": HOME_NS}, "data": {"ca.crt": "PEM"}}));
    server.insert(json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
        "metadata": {"name": "ca", "namespace": HOME_NS},
        "spec": {"source": {"kind": "ConfigMap", "name": "app-ca"},
                 "namespaceSelector": {"matchLabels": {"fanout": "yes"}}}}));
}

/// Starts a leader (short lease timings plus `extra` flags) over a fan-out to `namespaces`
/// namespaces; returns once it holds the lease and has written at least `writes` copies.
pub fn leader_under_load(
    tag: &str,
    namespaces: usize,
    extra: &[&str],
    writes: usize,
) -> (super::fake::FakeServer, TempDir, Skiff) {
    let server = super::fake::FakeServer::start();
    fan_out_world(&server, namespaces);
    let dir = TempDir::new(tag);
    let kubeconfig = write_kubeconfig(&dir, &server.url(), None, None, "skiff-system");
    let mut args: Vec<&str> = SHORT_LEASE.to_vec();
    args.extend_from_slice(extra);
    let skiff = Skiff::start(&kubeconfig, dir.0.join("skiff.log"), &args);
    let busy = eventually(Duration::from_secs(20), || {
        let records = server.requests();
        records.iter().any(is_lease_hold)
            && records.iter().filter(|r| is_controller_write(r)).count() >= writes
    });
    assert!(busy, "not leading and writing; log:\n{}", skiff.logs());
    (server, dir, skiff)
}

/// How many requests `server` has seen that pass `test`.
pub fn count_requests(
    server: &super::fake::FakeServer,
    test: impl Fn(&super::fake::RequestRecord) -> bool,
) -> usize {
    server.requests().iter().filter(|r| test(r)).count()
}

/// A controller's write: mutating and not on a Lease.
pub fn is_controller_write(r: &super::fake::RequestRecord) -> bool {
    r.is_mutating() && r.class == super::fake::RequestClass::Other
}

/// The holderIdentity a lease write sent, if `r` is one.
pub fn lease_write_holder(r: &super::fake::RequestRecord) -> Option<&str> {
    if r.class != super::fake::RequestClass::Lease || !r.is_mutating() {
        return None;
    }
    r.body.as_ref()?["spec"]["holderIdentity"].as_str()
}

/// A successful lease write naming a holder (an acquire or a renewal; not a release).
pub fn is_lease_hold(r: &super::fake::RequestRecord) -> bool {
    (200..300).contains(&r.status) && lease_write_holder(r).is_some_and(|h| !h.is_empty())
}

/// A release: a lease PUT with holderIdentity "" and leaseDurationSeconds 1.
pub fn is_lease_release(r: &super::fake::RequestRecord) -> bool {
    lease_write_holder(r) == Some("")
        && r.body.as_ref().map(|b| &b["spec"]["leaseDurationSeconds"])
            == Some(&serde_json::json!(1))
}

/// The longest wait between consecutive `times` within `[from, to]`, counting both ends.
pub fn longest_gap(from: Instant, times: &[Instant], to: Instant) -> Duration {
    let mut all: Vec<Instant> = vec![from];
    all.extend(times.iter().copied().filter(|t| *t >= from && *t <= to));
    all.push(to);
    all.windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default()
}
