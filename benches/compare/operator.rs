//! The operators compared: skiff as shipped and the controller-runtime peer's variants, each
//! started as its own ServiceAccount, and one running replica of either (a process).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::control_plane::ControlPlane;
use crate::support::peer;
use crate::support::skiff::proc_status_kib;
use crate::world::Identity;

/// Lease timing of every operator (15 s lease): client-go's defaults, which skiff shares.
pub const RENEW_DEADLINE: Duration = Duration::from_secs(10);
pub const RETRY_PERIOD: Duration = Duration::from_secs(2);
/// Both operators' client bucket (skiff's defaults, set on the peer too).
pub const QPS: &str = "20";
pub const BURST: &str = "30";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Skiff,
    /// The peer with its `--variant`.
    Peer(&'static str),
}

/// One column of the tables.
#[derive(Debug, Clone)]
pub struct Operator {
    pub kind: Kind,
    /// Its column heading.
    pub label: &'static str,
    /// Its part of object names, label keys and log file names.
    pub slug: &'static str,
    /// The peer run with skiff's FlowSchema (`testbin/peer/flowschema.yaml`).
    pub with_flowschema: bool,
}

impl Operator {
    pub fn skiff() -> Operator {
        Operator {
            kind: Kind::Skiff,
            label: "skiff",
            slug: "skiff",
            with_flowschema: false,
        }
    }

    pub fn peer(
        variant: &'static str,
        label: &'static str,
        slug: &'static str,
        with_flowschema: bool,
    ) -> Operator {
        Operator {
            kind: Kind::Peer(variant),
            label,
            slug,
            with_flowschema,
        }
    }

    pub fn is_skiff(&self) -> bool {
        self.kind == Kind::Skiff
    }

    /// Where its Lease lives: (namespace, name).
    pub fn lease(&self) -> (&'static str, &'static str) {
        match self.kind {
            Kind::Skiff => ("skiff-system", "skiff-leader"),
            Kind::Peer(_) => (peer::NAMESPACE, peer::LEASE),
        }
    }

    /// The namespace its sources live in (its own).
    pub fn source_namespace(&self) -> &'static str {
        self.lease().0
    }

    pub fn binary(&self) -> PathBuf {
        match self.kind {
            Kind::Skiff => crate::support::skiff::binary(),
            Kind::Peer(_) => peer::binary(),
        }
    }
}

/// How one run of an operator is configured: which namespaces it copies to, under which
/// names, as which user.
pub struct Launch<'a> {
    pub operator: &'a Operator,
    pub kubeconfig: &'a Path,
    /// Label key=value selecting the target namespaces.
    pub selector: (&'a str, &'a str),
    /// The run's tag: the source's name, and for the peer the source label key's suffix.
    pub tag: String,
    pub log_dir: PathBuf,
    /// The client's QPS and burst ([`QPS`] and [`BURST`] unless a scenario sets its own).
    pub qps: (&'static str, &'static str),
    /// `--health-probe-bind-address` and `--metrics-bind-address` (`0`: metrics off).
    pub probe_address: String,
    pub metrics_address: String,
    /// Flags after the scenario's own (the kit part's `--kinds`, say).
    pub extra: Vec<String>,
}

impl<'a> Launch<'a> {
    /// Replicas of `operator` as `identity`, copying into the namespaces labelled
    /// `selector_key=true`; `prefix` names the scenario in the tag (`cmp`, `wide`).
    pub fn new(
        cp: &ControlPlane,
        operator: &'a Operator,
        identity: &'a Identity,
        selector_key: &'a str,
        prefix: &str,
    ) -> Launch<'a> {
        Launch {
            operator,
            kubeconfig: &identity.kubeconfig,
            selector: (selector_key, "true"),
            tag: format!("{prefix}-{}", operator.slug),
            log_dir: cp.dir().join("compare"),
            qps: (QPS, BURST),
            probe_address: "127.0.0.1:0".into(),
            metrics_address: "0".into(),
            extra: Vec::new(),
        }
    }

    /// The flags of a replica; `name` makes skiff's identity readable (`POD_NAME`).
    fn args(&self) -> Vec<String> {
        let (namespace, _) = self.operator.lease();
        let mut args = vec![
            format!("--kubeconfig={}", self.kubeconfig.display()),
            "--leader-elect=true".into(),
            format!("--leader-election-namespace={namespace}"),
            format!("--health-probe-bind-address={}", self.probe_address),
            format!("--metrics-bind-address={}", self.metrics_address),
            format!("--kube-api-qps={}", self.qps.0),
            format!("--kube-api-burst={}", self.qps.1),
        ];
        match self.operator.kind {
            Kind::Skiff => args.push(format!("--source-namespaces={namespace}")),
            Kind::Peer(variant) => args.extend([
                format!("--variant={variant}"),
                format!("--source-namespace={namespace}"),
                format!("--source-label={}", self.source_label()),
                format!(
                    "--namespace-selector={}={}",
                    self.selector.0, self.selector.1
                ),
            ]),
        }
        args.extend(self.extra.iter().cloned());
        args
    }

    /// The peer's source label key (also on its copies), one per run so no run caches another's
    /// copies.
    pub fn source_label(&self) -> String {
        format!("compare.skiff.dev/{}", self.tag)
    }

    /// Label selector matching this run's copies.
    pub fn copies_selector(&self) -> String {
        match self.operator.kind {
            Kind::Skiff => format!("skiff.dev/mirror-name={}", self.tag),
            Kind::Peer(_) => format!(
                "{},app.kubernetes.io/managed-by=skiff-peer",
                self.source_label()
            ),
        }
    }

    pub fn start(&self, name: &str) -> Replica {
        let log = self.log_dir.join(format!("{}-{name}.log", self.tag));
        let mut command = Command::new(self.operator.binary());
        command.args(self.args()).env("POD_NAME", name);
        Replica::spawn(command, log)
    }
}

/// One running replica; killed on drop.
pub struct Replica {
    child: Child,
    pub log: PathBuf,
}

impl Replica {
    /// Starts `command` with its output to `log`, known to the signal handler; killed on drop.
    pub fn spawn(mut command: Command, log: PathBuf) -> Replica {
        let stderr = std::fs::File::create(&log).expect("create a replica log");
        let stdout = stderr.try_clone().expect("clone a replica log");
        let program = command.get_program().to_string_lossy().into_owned();
        let child = command
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("start {program}: {e}"));
        crate::children::register(child.id());
        Replica { child, log }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit code once exited (`-1` for a signal).
    pub fn exited(&mut self) -> Option<i32> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.code().unwrap_or(-1)),
            _ => None,
        }
    }

    /// Sends SIGTERM; returns the exit code and how long after the signal the exit was seen
    /// (polled every 0.2 ms), or `None` if it did not exit within `limit`.
    pub fn terminate(&mut self, limit: Duration) -> Option<(i32, Duration)> {
        let signalled = Instant::now();
        let sent = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {}", self.pid());
        while signalled.elapsed() < limit {
            if let Some(code) = self.exited() {
                return Some((code, signalled.elapsed()));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        None
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `/proc/<pid>/status` figures: VmRSS, RssAnon, RssFile (KiB) and Threads.
    pub fn footprint(&self) -> Footprint {
        let kib = |field| proc_status_kib(self.pid(), field).unwrap_or(0);
        Footprint {
            vm_rss: kib("VmRSS"),
            rss_anon: kib("RssAnon"),
            rss_file: kib("RssFile"),
            threads: threads(self.pid()),
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        crate::children::unregister(self.child.id());
    }
}

/// Resident memory in KiB and the thread count of one process at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Footprint {
    pub vm_rss: u64,
    pub rss_anon: u64,
    pub rss_file: u64,
    pub threads: u64,
}

fn threads(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}
