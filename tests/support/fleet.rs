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
/// The same in seconds, for the TokenRequest API.
const TOKEN_SECONDS: u64 = 2 * 60 * 60;

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
        install_hub(hub);
        for member in &members {
            member.install_manifests().install_overlay("secret-targets");
        }
        say(&format!(
            "fleet: a hub and {} members ready in {:.1} s",
            members.len(),
            started.elapsed().as_secs_f64()
        ));
        Fleet { hub, members }
    }

    /// Admits the member cluster `cluster` on the hub, labelled `labels`, as the hub admin
    /// does (`make hub-admit`, its script run as is); returns what the member admin is handed.
    pub fn admit(&self, cluster: &str, labels: &[(&str, &str)]) -> Admission {
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("hack/hub-admit.sh");
        let output = std::process::Command::new(script)
            .args([cluster, &labels.join(","), TOKEN_DURATION])
            .env("KUBECONFIG", self.hub.admin_kubeconfig())
            .env("KUBECTL", super::control_plane::bin_dir().join("kubectl"))
            .output()
            .expect("run hack/hub-admit.sh");
        let printed = super::kubectl::output_ok("hack/hub-admit.sh", output);
        let secret = self.hub.kubectl_stdin(
            &["create", "--dry-run=client", "-o", "json", "-f", "-"],
            &printed,
        );
        let secret: Value = serde_json::from_slice(&secret.stdout).expect("the printed Secret");
        let dir = self.hub.dir().join("members").join(cluster);
        std::fs::create_dir_all(&dir).expect("create the member's Secret dir");
        let data = &secret["stringData"];
        let token = data["token"].as_str().expect("a token").to_owned();
        write(&dir.join("token"), &token);
        write(
            &dir.join("kubeconfig"),
            data["kubeconfig"].as_str().expect("a kubeconfig"),
        );
        Admission {
            cluster: cluster.to_owned(),
            token,
            dir,
        }
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

/// Installs skiff on `hub` as a fleet's hub (`deploy/fleet-hub`, with Secret copies of
/// `app-tls`), once per control plane, and waits until the Placement CRD is served.
pub fn install_hub(hub: &ControlPlane) {
    hub.install_manifests()
        .install_overlay("secret-targets")
        .install_overlay("fleet-hub")
        .once("placements", |hub| {
            hub.wait_established(&["customresourcedefinition/placements.skiff.dev"]);
        });
}

/// Admits every cluster of `clusters` on `hub` at once, labelled `labels`, with what
/// `hack/hub-admit.sh` makes for each (the namespace, the ServiceAccount, the RoleBinding, the
/// heartbeat Lease, a token) and the Secret it prints, written into `dir/<cluster>`.
///
/// Why not the script: it runs five kubectl processes per member, about a second of CPU each
/// member; a benchmark admitting hundreds of members applies them in one request per batch and
/// asks the TokenRequest API directly. The e2e suite and the demo admit through the script.
pub fn admit_in_bulk(
    hub: &ControlPlane,
    clusters: &[String],
    labels: &[(&str, &str)],
    dir: &Path,
) -> Vec<Admission> {
    const BATCH: usize = 250;
    for batch in clusters.chunks(BATCH) {
        let items: Vec<Value> = batch
            .iter()
            .flat_map(|cluster| admission_objects(cluster, labels))
            .collect();
        let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
        hub.apply(&list.to_string());
    }
    clusters
        .iter()
        .map(|cluster| {
            let token = request_token(hub, cluster);
            let dir = dir.join(cluster);
            std::fs::create_dir_all(&dir).expect("create the member's Secret dir");
            write(&dir.join("token"), &token);
            write(&dir.join("kubeconfig"), &member_kubeconfig(hub, cluster));
            Admission {
                cluster: cluster.clone(),
                token,
                dir,
            }
        })
        .collect()
}

/// The objects `hack/hub-admit.sh` applies for `cluster`.
fn admission_objects(cluster: &str, labels: &[(&str, &str)]) -> [Value; 4] {
    let mut namespace_labels = serde_json::Map::new();
    namespace_labels.insert(MEMBER_LABEL.to_owned(), cluster.into());
    for (key, value) in labels {
        namespace_labels.insert((*key).to_owned(), (*value).into());
    }
    let (heartbeat_key, heartbeat_value) = HEARTBEAT_LABEL;
    [
        json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": cluster, "labels": namespace_labels}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": MEMBER_SERVICE_ACCOUNT, "namespace": cluster}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": MEMBER_ROLE, "namespace": cluster},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": MEMBER_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": MEMBER_SERVICE_ACCOUNT,
                          "namespace": cluster}]}),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": HEARTBEAT_LEASE, "namespace": cluster,
                         "labels": {heartbeat_key: heartbeat_value}},
            "spec": {"leaseDurationSeconds": 180}}),
    ]
}

/// A token of `cluster`'s member identity, from the TokenRequest API (as `kubectl create
/// token` asks it).
fn request_token(hub: &ControlPlane, cluster: &str) -> String {
    let path =
        format!("/api/v1/namespaces/{cluster}/serviceaccounts/{MEMBER_SERVICE_ACCOUNT}/token");
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": TOKEN_SECONDS}})
    .to_string();
    let request = super::kubectl::RawRequest {
        method: "POST",
        path: &path,
        accept: "application/json",
        body: Some(("application/json", &body)),
    };
    let response =
        super::kubectl::https_request(hub.url(), hub.ca_pem(), Some(hub.admin_token()), &request)
            .unwrap_or_else(|e| panic!("POST {path}: {e}"));
    assert_eq!(response.status, 201, "POST {path}: {}", response.body);
    let answer: Value = serde_json::from_str(&response.body).expect("a TokenRequest");
    let token = answer["status"]["token"].as_str();
    token
        .expect("a token in the TokenRequest's status")
        .to_owned()
}

/// The kubeconfig `hack/hub-admit.sh` prints for `cluster`: the hub, its CA, the member's
/// namespace, and the token read from the file `token` beside it.
fn member_kubeconfig(hub: &ControlPlane, cluster: &str) -> String {
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(hub.ca_pem());
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n  - name: hub\n    cluster:\n      \
         server: {}\n      certificate-authority-data: {ca}\nusers:\n  - name: {cluster}\n    \
         user:\n      tokenFile: token\ncontexts:\n  - name: hub\n    context: {{cluster: hub, \
         user: {cluster}, namespace: {cluster}}}\ncurrent-context: hub\n",
        hub.url()
    )
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
}

fn write(path: &Path, contents: &str) {
    std::fs::write(path, contents).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}
