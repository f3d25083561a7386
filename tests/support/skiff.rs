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
pub fn binary() -> PathBuf {
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

    /// As [`Skiff::start`], with extra environment variables (e.g. `POD_NAME`).
    pub fn start_with_env(
        kubeconfig: &PathBuf,
        log: PathBuf,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Skiff {
        let stderr = std::fs::File::create(&log).expect("create log file");
        let mut cmd = Command::new(binary());
        cmd.arg("--kubeconfig").arg(kubeconfig);
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

    /// The exit code, waiting at most `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status.code().unwrap_or(-1));
            }
            std::thread::sleep(Duration::from_millis(5));
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

/// Resident set size of a process in KiB (`VmRSS`).
pub fn rss_kib(pid: u32) -> Option<u64> {
    proc_status_kib(pid, "VmRSS")
}
