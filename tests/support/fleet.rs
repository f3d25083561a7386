//! A fleet of real control planes for the cross-cluster e2e suite: a hub and its members, each
//! an etcd and a kube-apiserver of its own, and the hub admin's half of registering a member.
//!
//! Why: a member's rights on the hub are what a stolen member token gets, so they must be shown
//! by a real authorizer with the member's own identity: a ServiceAccount token the hub issues
//! (TokenRequest), confined by a RoleBinding to the member's namespace on the hub. Members are
//! whole control planes, not namespaces of one, so nothing a member does can reach another
//! member's cluster except through the hub, as in a real fleet.
//!
//! The hub is the suite's shared control plane (`ControlPlane::shared`), so the fleet suite
//! takes its turn like any other suite; the members are the caller's and stop when the
//! [`Fleet`] is dropped. They start side by side, so a fleet is ready in about the time one
//! control plane takes.
//!
//! A member's admission ([`Fleet::admit`]) is what the hub admin does and nothing more: the
//! member's namespace (named after the cluster, labelled `skiff.dev/member=<cluster>` and the
//! cluster's own labels), a ServiceAccount and a RoleBinding to [`MEMBER_ROLE`] there, the
//! heartbeat Lease (so the member needs no `create`), and a token. What it hands the member
//! admin is a directory shaped like the Secret a member mounts: `kubeconfig` naming the hub,
//! its CA and `tokenFile: token`, and `token` beside it, so a rotated token is a rewrite of one
//! file that the reader picks up without a restart.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use skiff::kube::api::ObjectMeta;
use skiff::kube::{Client, load_kubeconfig_files};

use super::control_plane::{ControlPlane, say};
use super::kubectl::{Kubectl, succeeded};

/// The label that makes a hub namespace a member cluster's; its value is the cluster's name.
pub const MEMBER_LABEL: &str = "skiff.dev/member";
/// The member's identity on the hub, one per member namespace.
pub const MEMBER_SERVICE_ACCOUNT: &str = "skiff-member";
/// The member's heartbeat, created by the admission in the member's namespace.
pub const HEARTBEAT_LEASE: &str = "skiff-member";
/// The label the hub's skiff finds heartbeats by, across member namespaces.
pub const HEARTBEAT_LABEL: (&str, &str) = ("skiff.dev/heartbeat", "member");
/// The ClusterRole each member is bound to, in its own namespace only.
pub const MEMBER_ROLE: &str = "skiff-fleet-member";
/// How long a member token minted by [`Fleet::admit`] lives: longer than any test.
const TOKEN_DURATION: &str = "2h";

/// What a member may do on the hub, each rule with its reason. Bound by a RoleBinding in the
/// member's own namespace, so every rule stops at that namespace.
pub const MEMBER_ROLE_YAML: &str = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: skiff-fleet-member
rules:
# What is placed for this member: read only.
- apiGroups: [skiff.dev]
  resources: [placements]
  verbs: [get, list, watch]
# Its report on each placement: the status only, never the spec, so it cannot change what it
# is asked to hold.
- apiGroups: [skiff.dev]
  resources: [placements/status]
  verbs: [patch, update]
# Secrets placed for it travel as Secrets (encrypted at rest like any other): read only.
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, list, watch]
# Its heartbeat: the one Lease its admission created; no create, no other Lease.
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  resourceNames: [skiff-member]
  verbs: [get, update, patch]
"#;

/// A stand-in for the Placement CRD until the repository ships one: what the hub places in a
/// member's namespace, with the status subresource the member reports through.
pub const PLACEMENT_CRD_YAML: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: placements.skiff.dev
spec:
  group: skiff.dev
  names: {kind: Placement, listKind: PlacementList, plural: placements, singular: placement}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"#;

/// A Placement as the e2e suite reads and writes it: its spec and status as JSON.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Placement {
    pub metadata: ObjectMeta,
    pub spec: Value,
    #[serde(skip_serializing_if = "Value::is_null")]
    pub status: Value,
}

skiff::impl_resource!(
    Placement,
    "skiff.dev/v1alpha1",
    "Placement",
    "placements",
    namespaced = true
);

/// A hub and its members.
pub struct Fleet {
    pub hub: &'static ControlPlane,
    pub members: Vec<ControlPlane>,
}

impl Fleet {
    /// The suite's hub, with the member role and the Placement CRD installed, and `members`
    /// control planes of the caller's own, started side by side with it.
    pub fn start(members: usize) -> Fleet {
        let started = std::time::Instant::now();
        let (hub, members) = std::thread::scope(|scope| {
            let starting: Vec<_> = (0..members)
                .map(|_| scope.spawn(ControlPlane::start))
                .collect();
            let hub = ControlPlane::shared();
            let members: Vec<ControlPlane> = starting
                .into_iter()
                .map(|member| member.join().expect("a member control plane starts"))
                .collect();
            (hub, members)
        });
        hub.once("fleet hub", |hub| {
            hub.apply(MEMBER_ROLE_YAML);
            hub.apply(PLACEMENT_CRD_YAML);
            let crd = "customresourcedefinition/placements.skiff.dev";
            hub.kubectl_ok(&["wait", "--for=condition=Established", crd, "--timeout=60s"]);
        });
        say(&format!(
            "fleet: a hub and {} members ready in {:.1} s",
            members.len(),
            started.elapsed().as_secs_f64()
        ));
        Fleet { hub, members }
    }

    /// Admits the member cluster `cluster` on the hub, labelled `labels`, as the hub admin
    /// does; returns what the member admin is handed.
    pub fn admit(&self, cluster: &str, labels: &[(&str, &str)]) -> Admission {
        let mut namespace_labels = serde_json::Map::new();
        namespace_labels.insert(MEMBER_LABEL.into(), cluster.into());
        for (key, value) in labels {
            namespace_labels.insert((*key).into(), (*value).into());
        }
        self.hub
            .apply(&admission_objects(cluster, namespace_labels).to_string());
        let token = self.hub.kubectl_ok(&[
            "create",
            "token",
            MEMBER_SERVICE_ACCOUNT,
            "-n",
            cluster,
            &format!("--duration={TOKEN_DURATION}"),
        ]);
        let dir = self.hub.dir().join("members").join(cluster);
        std::fs::create_dir_all(&dir).expect("create the member's Secret dir");
        let admission = Admission {
            cluster: cluster.to_owned(),
            token: token.trim().to_owned(),
            dir,
        };
        admission.write_secret(self.hub);
        admission
    }

    /// Places `spec` for `member` as the Placement `name` in its hub namespace, as the hub's
    /// skiff will, and a Secret `secret` beside it holding `data` (base64 values).
    pub fn place(&self, member: &Admission, name: &str, spec: Value, secret: (&str, Value)) {
        let (secret_name, data) = secret;
        let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "skiff.dev/v1alpha1", "kind": "Placement",
             "metadata": {"name": name, "namespace": member.cluster}, "spec": spec},
            {"apiVersion": "v1", "kind": "Secret",
             "metadata": {"name": secret_name, "namespace": member.cluster}, "data": data},
        ]});
        self.hub.apply(&objects.to_string());
    }
}

/// The hub objects that admit `cluster`: its namespace, its identity, the binding that confines
/// that identity to the namespace, and its heartbeat Lease.
fn admission_objects(cluster: &str, labels: serde_json::Map<String, Value>) -> Value {
    let subject =
        json!({"kind": "ServiceAccount", "name": MEMBER_SERVICE_ACCOUNT, "namespace": cluster});
    json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": cluster, "labels": labels}},
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": MEMBER_SERVICE_ACCOUNT, "namespace": cluster}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": MEMBER_ROLE, "namespace": cluster},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": MEMBER_ROLE},
         "subjects": [subject]},
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
         "metadata": {"name": HEARTBEAT_LEASE, "namespace": cluster,
                      "labels": {HEARTBEAT_LABEL.0: HEARTBEAT_LABEL.1}},
         "spec": {"leaseDurationSeconds": 180}},
    ]})
}

/// What the hub admin hands the member admin: the member's identity on the hub.
pub struct Admission {
    /// The member cluster's name, which is also its namespace on the hub.
    pub cluster: String,
    /// A bound ServiceAccount token of the member's identity (TokenRequest).
    pub token: String,
    /// The member's hub Secret as mounted: `kubeconfig` and `token`.
    pub dir: PathBuf,
}

impl Admission {
    /// The kubeconfig the member's skiff is started with (`--hub-kubeconfig`).
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    /// The hub as this member sees it, through the in-repo client reading the kubeconfig.
    pub fn client(&self) -> Client {
        let config = load_kubeconfig_files(&[self.kubeconfig()], None)
            .unwrap_or_else(|e| panic!("{}: {e}", self.kubeconfig().display()));
        Client::new(config).expect("a client for the hub")
    }

    /// kubectl on the hub as this member.
    pub fn kubectl(&self) -> Kubectl {
        Kubectl::new(&self.kubeconfig(), &self.dir)
    }

    /// `kubectl auth whoami` on the hub as this member: the username the hub authenticated.
    pub fn whoami(&self) -> String {
        let args = [
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ];
        succeeded(&args, self.kubectl().run(&args))
    }

    /// Writes the member's hub Secret: the token, and a kubeconfig that reads it from the file
    /// beside it (relative, as a mounted Secret's keys are).
    fn write_secret(&self, hub: &ControlPlane) {
        write(&self.dir.join("token"), &self.token);
        write(&self.kubeconfig(), &member_kubeconfig(hub, &self.cluster));
    }
}

/// A kubeconfig naming the hub and its CA, authenticating with the token in the file `token`
/// beside it, in the member's namespace.
fn member_kubeconfig(hub: &ControlPlane, cluster: &str) -> String {
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(hub.ca_pem());
    format!(
        "apiVersion: v1\nkind: Config\n\
         clusters:\n- name: hub\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\n\
         users:\n- name: {cluster}\n  user:\n    tokenFile: token\n\
         contexts:\n- name: hub\n  context:\n    cluster: hub\n    user: {cluster}\n    namespace: {cluster}\n\
         current-context: hub\n",
        hub.url()
    )
}

fn write(path: &Path, contents: &str) {
    std::fs::write(path, contents).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}
