//! The memory benchmark on a real control plane (the e2e harness's etcd and kube-apiserver):
//! real objects carry managedFields, the `kubernetes.io/metadata.name` label and a status, which
//! the fake server's minimal objects do not. skiff runs as leader under the shipped RBAC.
//!
//! Scenarios, in order on one control plane: idle with 1,000 namespaces; a Mirror converging
//! over those 1,000 (the peak is the fan-out's), then deleted (skiff deletes its copies); the
//! same with labels and annotations on the copies and one key of two picked;
//! idle with 5,000 namespaces; with `SKIFF_BENCH_LARGE=1`, a Mirror over the 1,000 with
//! 10,000 namespaces in the cluster.

pub mod footprint;

pub use footprint::Footprint;

use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE};
use crate::support::lease::LeaseReader;
use crate::support::skiff::{Skiff, TempDir, eventually};
use serde_json::json;
use std::time::Duration;

/// The label the Mirror selects namespaces by.
const SELECT_LABEL: &str = "footprint";
const SOURCE: &str = "app-ca";
const MIRROR: &str = "ca";
/// Namespaces created per `kubectl create` call.
const BATCH: usize = 500;
const STEP_LIMIT: Duration = Duration::from_secs(300);
/// Fast enough that a 1,000-copy fan-out takes seconds, not the default bucket's 50 s.
const FLAGS: [&str; 5] = [
    "--leader-elect",
    "--leader-election-namespace=skiff-system",
    "--source-namespaces=skiff-system",
    "--kube-api-qps=200",
    "--kube-api-burst=200",
];

/// A control plane with the manifests applied and namespaces counted by this benchmark.
pub struct Cluster {
    cp: ControlPlane,
    namespaces: usize,
}

impl Cluster {
    pub fn start() -> Cluster {
        let cp = ControlPlane::start();
        cp.install_manifests();
        Cluster { cp, namespaces: 0 }
    }

    /// Namespaces `bench-NNNNN` up to `total`; the first `selected` carry the Mirror's label.
    pub fn grow_to(&mut self, total: usize, selected: usize) {
        while self.namespaces < total {
            let end = total.min(self.namespaces + BATCH);
            let items: Vec<_> = (self.namespaces..end)
                .map(|i| {
                    let labels = if i < selected {
                        json!({ SELECT_LABEL: "yes" })
                    } else {
                        json!({})
                    };
                    json!({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": format!("bench-{i:05}"), "labels": labels}})
                })
                .collect();
            let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
            let out = self
                .cp
                .kubectl_stdin(&["create", "-f", "-", "-o", "name"], &list.to_string());
            assert!(
                out.status.success(),
                "creating namespaces: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            self.namespaces = end;
        }
    }

    /// skiff as leader; returns once it holds the Lease.
    pub fn leader(&self, tag: &str) -> Leader {
        let dir = TempDir::new(tag);
        let skiff = Skiff::start_with_env(
            &self.cp.operator_kubeconfig(),
            dir.0.join("skiff.log"),
            &FLAGS,
            &[("POD_NAME", tag)],
        );
        let mut lease = LeaseReader::new(&self.cp);
        let mut leader = Leader { skiff, _dir: dir };
        let leading = eventually(STEP_LIMIT, || {
            leader.assert_running();
            lease.read().is_some_and(|l| l.holder.starts_with(tag))
        });
        assert!(leading, "{tag} did not lead; log:\n{}", leader.skiff.logs());
        leader
    }

    pub fn add_mirror(&self) {
        self.cp.apply(
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": SOURCE, "namespace": OPERATOR_NAMESPACE},
                "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n"}})
            .to_string(),
        );
        self.cp.apply(
            &json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
                "metadata": {"name": MIRROR, "namespace": OPERATOR_NAMESPACE},
                "spec": {"source": {"kind": "ConfigMap", "name": SOURCE},
                         "namespaceSelector": {"matchLabels": { SELECT_LABEL: "yes" }}}})
            .to_string(),
        );
    }

    /// As [`Cluster::add_mirror`], with every copy carrying labels and annotations of the
    /// Mirror's and a label of the source's, and one of the source's two keys: the copy cache
    /// then keeps a record of skiff's keys per copy.
    pub fn add_mirror_with_metadata(&self) {
        self.cp.apply(
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": SOURCE, "namespace": OPERATOR_NAMESPACE,
                             "labels": {"cnpg.io/reload": "true", "app.kubernetes.io/instance": "platform"}},
                "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n",
                         "internal": "not copied"}})
            .to_string(),
        );
        self.cp.apply(
            &json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
                "metadata": {"name": MIRROR, "namespace": OPERATOR_NAMESPACE},
                "spec": {"source": {"kind": "ConfigMap", "name": SOURCE, "keys": ["ca.crt"],
                                    "copyLabels": ["cnpg.io/*"]},
                         "target": {"metadata": {
                             "labels": {"team": "payments", "argocd.argoproj.io/secret-type": "repository"},
                             "annotations": {"reloader.stakater.com/match": "true"}}},
                         "namespaceSelector": {"matchLabels": { SELECT_LABEL: "yes" }}}})
            .to_string(),
        );
    }

    /// Waits until the Mirror reports `count` copies synced.
    pub fn wait_synced(&self, leader: &mut Leader, count: usize) {
        let synced = || {
            self.cp
                .object("mirror", OPERATOR_NAMESPACE, MIRROR)
                .and_then(|m| m["status"]["synced"].as_u64())
        };
        let done = eventually(STEP_LIMIT, || {
            leader.assert_running();
            synced() == Some(count as u64)
        });
        assert!(
            done,
            "Mirror synced {:?} of {count}; log:\n{}",
            synced(),
            leader.skiff.logs()
        );
    }

    /// Deletes the Mirror and waits until skiff has deleted its copies and let it go.
    pub fn delete_mirror(&self, leader: &mut Leader) {
        self.cp.kubectl_ok(&[
            "delete",
            "mirror",
            MIRROR,
            "-n",
            OPERATOR_NAMESPACE,
            "--wait=false",
        ]);
        let gone = eventually(STEP_LIMIT, || {
            leader.assert_running();
            self.cp
                .object("mirror", OPERATOR_NAMESPACE, MIRROR)
                .is_none()
        });
        assert!(gone, "Mirror not deleted; log:\n{}", leader.skiff.logs());
    }
}

/// A leading skiff process; SIGTERM and exit 0 on [`Leader::stop`].
pub struct Leader {
    pub skiff: Skiff,
    _dir: TempDir,
}

impl Leader {
    pub fn pid(&self) -> u32 {
        self.skiff.child.id()
    }

    pub fn assert_running(&mut self) {
        assert!(
            self.skiff.is_running(),
            "skiff exited; log:\n{}",
            self.skiff.logs()
        );
    }

    pub fn stop(mut self) {
        self.skiff.signal("TERM");
        let code = self.skiff.wait_exit(Duration::from_secs(30));
        assert_eq!(code, Some(0), "skiff exit; log:\n{}", self.skiff.logs());
    }
}
