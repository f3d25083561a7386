//! The operators the big-source bench measures, behind one interface: skiff, which fans out
//! when a Mirror is created, and the controller-runtime peer, which fans out when a labelled
//! source appears. The peer takes its namespace selector as a flag, so it is started afresh for
//! each scenario; skiff runs once through all of them.

use super::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE};
use super::support::lease::LeaseReader;
use super::support::peer;
use super::support::skiff::{Skiff, TempDir, eventually};
use super::world::{self, SOURCE, Scenario};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long starting, leading or cleaning up may take.
const LIMIT: Duration = Duration::from_secs(600);
/// As the issue measured: the bucket is not what paces a big fan-out. Both operators get it.
const QPS: [&str; 2] = ["--kube-api-qps=200", "--kube-api-burst=200"];
const SKIFF_FLAGS: [&str; 4] = [
    "--leader-elect",
    "--leader-election-namespace=skiff-system",
    "--source-namespaces=skiff-system",
    "--secret-target-names=app-ca",
];
const MIRROR: &str = "big";
/// The peer's sources and copies carry this label key.
const PEER_SOURCE_LABEL: &str = "bigsource.skiff.dev/source";

pub trait Operator {
    /// Its process, once it leads; panics with its log when it has exited.
    fn pid(&mut self) -> u32;
    /// Whether it copies `scenario`'s kind at all.
    fn copies(&self, scenario: &Scenario) -> bool;
    /// Everything in place before the idle reading: the source for skiff, the peer leading.
    fn ready(&mut self, cp: &ControlPlane, scenario: &Scenario);
    /// What starts the fan-out.
    fn trigger(&mut self, cp: &ControlPlane, scenario: &Scenario);
    fn converged(&mut self, cp: &ControlPlane, scenario: &Scenario) -> bool;
    /// Its source of `scenario`, in its source namespace.
    fn source(&self, scenario: &Scenario, edited: bool) -> Value;
    /// The `app.kubernetes.io/managed-by` value of its copies.
    fn manager(&self) -> &'static str;
    /// Removes the scenario's source and Mirror, so the next one starts from nothing.
    fn clean_up(&mut self, cp: &ControlPlane, scenario: &Scenario);
}

fn running(process: &mut Skiff, what: &str) -> u32 {
    assert!(
        process.is_running(),
        "{what} exited; log:\n{}",
        process.logs()
    );
    process.child.id()
}

/// skiff `binary`, leading on the control plane it was started on.
pub struct SkiffOperator {
    skiff: Skiff,
    _dir: TempDir,
}

impl SkiffOperator {
    pub fn start(cp: &ControlPlane, binary: &Path) -> SkiffOperator {
        let dir = TempDir::new("bigsource");
        let program = [binary.as_os_str().to_owned()];
        let log = dir.0.join("skiff.log");
        let flags: Vec<&str> = SKIFF_FLAGS.iter().chain(&QPS).copied().collect();
        let env = [("POD_NAME", "bigsource")];
        let mut skiff =
            Skiff::start_program(&program, &cp.operator_kubeconfig(), log, &flags, &env);
        let mut lease = LeaseReader::new(cp);
        let leading = eventually(LIMIT, || {
            running(&mut skiff, "skiff");
            lease
                .read()
                .is_some_and(|l| l.holder.starts_with("bigsource"))
        });
        assert!(leading, "skiff did not lead; log:\n{}", skiff.logs());
        SkiffOperator { skiff, _dir: dir }
    }

    pub fn stop(mut self) {
        self.skiff.terminate(Duration::from_secs(60));
    }

    fn synced(cp: &ControlPlane) -> Option<u64> {
        cp.object("mirror", OPERATOR_NAMESPACE, MIRROR)?["status"]["synced"].as_u64()
    }
}

impl Operator for SkiffOperator {
    fn pid(&mut self) -> u32 {
        running(&mut self.skiff, "skiff")
    }

    fn copies(&self, _: &Scenario) -> bool {
        true
    }

    fn ready(&mut self, cp: &ControlPlane, scenario: &Scenario) {
        world::create(cp, &self.source(scenario, false));
    }

    fn trigger(&mut self, cp: &ControlPlane, scenario: &Scenario) {
        let mirror = json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {"name": MIRROR, "namespace": OPERATOR_NAMESPACE},
            "spec": {"source": {"kind": scenario.kind, "name": SOURCE},
                     "namespaceSelector": {"matchLabels": {scenario.selector_key(): "yes"}}}});
        world::create(cp, &mirror);
    }

    fn converged(&mut self, cp: &ControlPlane, scenario: &Scenario) -> bool {
        Self::synced(cp) == Some(scenario.count as u64)
    }

    fn source(&self, scenario: &Scenario, edited: bool) -> Value {
        world::source(scenario.kind, OPERATOR_NAMESPACE, json!({}), edited)
    }

    fn manager(&self) -> &'static str {
        "skiff"
    }

    fn clean_up(&mut self, cp: &ControlPlane, scenario: &Scenario) {
        cp.kubectl_ok(&["delete", "mirror", MIRROR, "-n", OPERATOR_NAMESPACE]);
        let kind = scenario.kind.to_lowercase();
        cp.kubectl_ok(&["delete", &kind, SOURCE, "-n", OPERATOR_NAMESPACE]);
    }
}

/// The controller-runtime peer (`testbin/peer/`), as its own ServiceAccount; it copies
/// ConfigMaps only.
pub struct PeerOperator {
    binary: PathBuf,
    kubeconfig: PathBuf,
    dir: TempDir,
    process: Option<Skiff>,
}

impl PeerOperator {
    pub fn install(cp: &ControlPlane) -> PeerOperator {
        PeerOperator {
            binary: peer::binary(),
            kubeconfig: peer::install(cp),
            dir: TempDir::new("bigsource-peer"),
            process: None,
        }
    }

    /// The peer copying into `scenario`'s namespaces, leading.
    fn start(&mut self, cp: &ControlPlane, scenario: &Scenario) -> Skiff {
        let selector = format!("--namespace-selector={}=yes", scenario.selector_key());
        let source_label = format!("--source-label={PEER_SOURCE_LABEL}");
        let lease_namespace = format!("--leader-election-namespace={}", peer::NAMESPACE);
        let mut flags = vec![
            "--leader-elect=true",
            &lease_namespace,
            &selector,
            &source_label,
        ];
        flags.extend(QPS);
        let program = [self.binary.as_os_str().to_owned()];
        let log = self.dir.0.join(format!("peer-{}.log", scenario.count));
        let mut process = Skiff::start_program(&program, &self.kubeconfig, log, &flags, &[]);
        let leading = eventually(LIMIT, || {
            running(&mut process, "the peer");
            std::thread::sleep(Duration::from_millis(200));
            peer::leader(cp).is_some()
        });
        assert!(leading, "the peer did not lead; log:\n{}", process.logs());
        process
    }
}

impl Operator for PeerOperator {
    fn pid(&mut self) -> u32 {
        let process = self.process.as_mut().expect("the peer started (ready)");
        running(process, "the peer")
    }

    fn copies(&self, scenario: &Scenario) -> bool {
        scenario.kind == "ConfigMap"
    }

    fn ready(&mut self, cp: &ControlPlane, scenario: &Scenario) {
        self.process = Some(self.start(cp, scenario));
    }

    fn trigger(&mut self, cp: &ControlPlane, scenario: &Scenario) {
        world::create(cp, &self.source(scenario, false));
    }

    fn converged(&mut self, cp: &ControlPlane, scenario: &Scenario) -> bool {
        world::copy_versions(cp, scenario, self.manager()).len() == scenario.count
    }

    fn source(&self, scenario: &Scenario, edited: bool) -> Value {
        let labels = json!({PEER_SOURCE_LABEL: "true"});
        world::source(scenario.kind, peer::NAMESPACE, labels, edited)
    }

    fn manager(&self) -> &'static str {
        peer::MANAGER
    }

    /// Stops the peer, then deletes its source, its copies (it never deletes them itself) and
    /// the Lease a killed peer leaves held.
    fn clean_up(&mut self, cp: &ControlPlane, scenario: &Scenario) {
        self.process = None; // killed and reaped on drop
        cp.kubectl_ok(&["delete", "configmap", SOURCE, "-n", peer::NAMESPACE]);
        world::delete_copies(cp, scenario);
        cp.kubectl_ok(&["delete", "lease", peer::LEASE, "-n", peer::NAMESPACE]);
    }
}
