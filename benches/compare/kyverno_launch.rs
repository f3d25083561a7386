//! Kyverno's two controllers for the kit part's Kyverno column (`kyverno.rs`): its CRDs and
//! `testbin/kyverno/manifests.yaml` installed, a TokenRequest kubeconfig per ServiceAccount,
//! both processes started as `Replica`s with the env and flags of `testbin/kyverno/start.sh`
//! (its README says why each), ready once both hold their Leases and the resource webhook
//! exists, and the kit policy in force. Kept apart from the measurement because running Kyverno
//! out of cluster is its own concern.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::lease_watch::LeaseWatch;
use crate::operator::{BURST, QPS, Replica};
use crate::support::control_plane::{ControlPlane, bin_dir};
use crate::support::skiff::free_port;
use crate::world::{self, Identity};

/// Kyverno's namespace: its ServiceAccounts, Leases, configuration and UpdateRequests.
pub const NAMESPACE: &str = "kyverno";
const POLICY: &str = "clusterpolicy/namespace-kit";
/// The resource webhook, whose rules name `namespaces` once the policy is in force.
const WEBHOOK: &str = "validatingwebhookconfiguration/kyverno-resource-validating-webhook-cfg";
/// The binaries `testbin/kyverno/build.sh` builds into bin/.
pub const BINARIES: [&str; 2] = ["kyverno", "kyverno-background-controller"];
/// Kyverno's CRD directories in its module.
const CRDS: [&str; 4] = ["kyverno", "policies.kyverno.io", "reports", "policyreport"];
/// How long each step of getting Kyverno ready may take.
pub const STEP: Duration = Duration::from_secs(120);

/// Kyverno's two processes.
#[derive(Debug, Clone, Copy)]
pub enum Role {
    Admission,
    Background,
}

impl Role {
    pub const BOTH: [Role; 2] = [Role::Admission, Role::Background];

    pub fn name(self) -> &'static str {
        match self {
            Role::Admission => "admission",
            Role::Background => "background",
        }
    }

    /// Its ServiceAccount (and Deployment name) in [`NAMESPACE`].
    pub fn account(self) -> String {
        format!("kyverno-{}-controller", self.name())
    }

    pub fn user(self) -> String {
        format!("system:serviceaccount:{NAMESPACE}:{}", self.account())
    }

    fn binary(self) -> PathBuf {
        bin_dir().join(BINARIES[self as usize])
    }

    /// Its Lease in [`NAMESPACE`].
    pub fn lease(self) -> &'static str {
        match self {
            Role::Admission => "kyverno",
            Role::Background => "kyverno-background-controller",
        }
    }
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testbin/kyverno")
}

/// The Kyverno version `testbin/kyverno/go.mod` requires (what build.sh builds).
pub fn version() -> String {
    let go_mod = std::fs::read_to_string(dir().join("go.mod")).unwrap_or_default();
    go_mod
        .lines()
        .map(|l| l.trim().trim_start_matches("require").trim())
        .find_map(|l| l.strip_prefix("github.com/kyverno/kyverno "))
        .map(|v| v.split_whitespace().next().unwrap_or_default().to_owned())
        .unwrap_or_else(|| "(version unknown)".into())
}

/// How both controllers are started: identities, ports, logs.
pub struct Launch {
    identities: [Identity; 2],
    webhook_port: u16,
    metrics_ports: [u16; 2],
    log_dir: PathBuf,
}

impl Launch {
    pub fn new(cp: &ControlPlane) -> Launch {
        let identity = |role: Role| {
            let file = format!("kyverno-{}.kubeconfig", role.name());
            world::service_account(cp, NAMESPACE, &role.account(), &file)
        };
        Launch {
            identities: Role::BOTH.map(identity),
            webhook_port: free_port(),
            metrics_ports: [free_port(), free_port()],
            log_dir: cp.dir().join("compare"),
        }
    }

    /// Both controllers; `name` tells the runs apart (pod names, logs).
    pub fn start(&self, name: &str) -> Vec<Replica> {
        Role::BOTH
            .iter()
            .map(|r| self.start_one(*r, name))
            .collect()
    }

    fn start_one(&self, role: Role, name: &str) -> Replica {
        let mut command = Command::new(role.binary());
        command
            .args(self.args(role))
            .env("KYVERNO_NAMESPACE", NAMESPACE)
            .env("INIT_CONFIG", "kyverno")
            .env("METRICS_CONFIG", "kyverno-metrics")
            .env("KYVERNO_SERVICEACCOUNT_NAME", role.account())
            .env("KYVERNO_DEPLOYMENT", role.account())
            .env("KYVERNO_POD_NAME", format!("{}-{name}", role.account()))
            .env(
                "KYVERNO_ROLE_NAME",
                format!("kyverno:{}-controller", role.name()),
            )
            .env("KYVERNO_SVC", "kyverno-svc");
        let log = self
            .log_dir
            .join(format!("kit-kyverno-{}-{name}.log", role.name()));
        Replica::spawn(command, log)
    }

    /// `start.sh`'s flags, at the bench's QPS and burst per client.
    fn args(&self, role: Role) -> Vec<String> {
        let mut args = vec![
            format!(
                "--kubeconfig={}",
                self.identities[role as usize].kubeconfig.display()
            ),
            format!("--clientRateLimitQPS={QPS}"),
            format!("--clientRateLimitBurst={BURST}"),
            format!("--metricsPort={}", self.metrics_ports[role as usize]),
            "--controllerRuntimeMetricsAddress=0".into(),
            "--autoMemLimitEnabled=false".into(),
            "--omitEvents=PolicyApplied,PolicySkipped".into(),
            "--enableReporting=".into(),
            "--disableLogColor".into(),
        ];
        if matches!(role, Role::Admission) {
            let port = self.webhook_port;
            args.extend([
                format!("--serverIP=127.0.0.1:{port}"),
                format!("--webhookServerPort={port}"),
                "--caSecretName=kyverno-svc.kyverno.svc.kyverno-tls-ca".into(),
                "--tlsSecretName=kyverno-svc.kyverno.svc.kyverno-tls-pair".into(),
                format!("--backgroundServiceAccountName={}", Role::Background.user()),
                "--admissionReports=false".into(),
                "--generateValidatingAdmissionPolicy=false".into(),
            ]);
        }
        args
    }
}

/// Kyverno's CRDs from its module (server-side: the ClusterPolicy CRD is too big for the
/// last-applied annotation), established, then `manifests.yaml`.
pub fn install(cp: &ControlPlane) {
    let crds = module_dir().join("config/crds");
    let mut args = vec!["apply".to_owned(), "--server-side".into()];
    for sub in CRDS {
        args.extend(["-f".into(), crds.join(sub).display().to_string()]);
    }
    cp.kubectl_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    cp.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd",
        "--all",
        "--timeout=60s",
    ]);
    let manifests = dir().join("manifests.yaml").display().to_string();
    cp.kubectl_ok(&["apply", "-f", &manifests]);
}

/// The Kyverno module's directory in Go's module cache (`go mod download`).
fn module_dir() -> PathBuf {
    let fail = |why: String| -> PathBuf {
        panic!(
            "Kyverno's CRDs: `go mod download -json github.com/kyverno/kyverno` in testbin/kyverno \
             {why}; run testbin/kyverno/build.sh, which downloads the module"
        )
    };
    let output = Command::new("go")
        .args(["mod", "download", "-json", "github.com/kyverno/kyverno"])
        .current_dir(dir())
        .output()
        .unwrap_or_else(|e| panic!("run go (Kyverno's CRDs are in its module): {e}"));
    if !output.status.success() {
        return fail(format!(
            "failed: {}",
            String::from_utf8_lossy(&output.stdout)
        ));
    }
    let module: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    match module["Dir"].as_str() {
        Some(path) => PathBuf::from(path),
        None => fail("printed no Dir".into()),
    }
}

/// Until both controllers hold their Leases and the resource webhook exists; fails at once if
/// either exits.
pub fn wait_ready(cp: &ControlPlane, watches: &[LeaseWatch; 2], replicas: &mut [Replica]) {
    let started = Instant::now();
    loop {
        let led = watches.iter().all(|w| !w.holder().is_empty());
        if led && cp.kubectl(&["get", WEBHOOK]).status.success() {
            return;
        }
        let exited: Vec<i32> = replicas.iter_mut().filter_map(Replica::exited).collect();
        assert!(
            exited.is_empty() && started.elapsed() < STEP,
            "Kyverno never became ready (exits: {exited:?}); logs:\n{}",
            logs(replicas)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The kit policy, Ready, and the resource webhook rewritten for it: only then do Namespace
/// admissions reach Kyverno.
pub fn apply_policy(cp: &ControlPlane, replicas: &[Replica]) {
    let policy = dir().join("kit-policy.yaml").display().to_string();
    // The policy webhook is registered before its TLS server serves: retry until it does.
    let started = Instant::now();
    loop {
        let applied = cp.kubectl(&["apply", "-f", &policy]);
        if applied.status.success() {
            break;
        }
        assert!(
            started.elapsed() < STEP,
            "Kyverno refused the kit policy: {}; logs:\n{}",
            String::from_utf8_lossy(&applied.stderr),
            logs(replicas)
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    let timeout = format!("--timeout={}s", STEP.as_secs());
    cp.kubectl_ok(&["wait", "--for=condition=Ready", POLICY, &timeout]);
    let started = Instant::now();
    let rules = "jsonpath={.webhooks[*].rules[*].resources}";
    while !cp
        .kubectl_ok(&["get", WEBHOOK, "-o", rules])
        .contains("namespaces")
    {
        assert!(
            started.elapsed() < STEP,
            "Kyverno's webhook never named namespaces; logs:\n{}",
            logs(replicas)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(3));
}

/// Kyverno's webhooks fail closed: with its controllers gone they would refuse every later
/// Namespace create, so they go with them.
pub fn remove_webhooks(cp: &ControlPlane) {
    for kind in [
        "validatingwebhookconfigurations",
        "mutatingwebhookconfigurations",
    ] {
        let names = cp.kubectl_ok(&["get", kind, "-o", "name"]);
        for name in names.lines().filter(|n| n.contains("kyverno")) {
            cp.kubectl_ok(&["delete", name, "--ignore-not-found"]);
        }
    }
}

/// Both controllers' logs, for a failure.
pub fn logs(replicas: &[Replica]) -> String {
    replicas
        .iter()
        .map(Replica::logs)
        .collect::<Vec<_>>()
        .join("\n----\n")
}
