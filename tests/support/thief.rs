//! A thief with skiff's token: the writes its RBAC allows on objects skiff does not manage, as
//! raw requests (one each, as a script would send them), and what the API server answers.
//!
//! Why: RBAC names kinds, not objects, so only the real API server with the shipped admission
//! policies (`skiff-writes`, `skiff-kit-namespaces`, `skiff-rolebindings`) shows what a stolen
//! token can still do. The e2e suite `policy` asserts that every attempt is refused, by RBAC or
//! by a policy of skiff's; `cargo bench --bench policy` counts how many get through with the
//! policy and without it, per install mode.

use serde_json::Value;

use super::control_plane::{ControlPlane, OPERATOR_NAMESPACE, OPERATOR_USER};
use super::helm::{Helm, chart_dir};
use super::kubectl::{RawRequest, RawResponse, https_request};

/// The labels a copy of the Mirror `skiff-system/thief` carries (what skiff's token may create).
const SKIFF_LABELS: &str = r#"{"app.kubernetes.io/managed-by": "skiff",
    "skiff.dev/mirror-namespace": "skiff-system", "skiff.dev/mirror-name": "thief"}"#;
/// The Mirror that objects are handed to with `skiff.dev/adopt` in the scene.
pub const HANDED_TO: &str = "skiff-system/thief";

/// Where an attempt aims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    KubeSystem,
    /// A team's namespace, not labelled for kit copies.
    Team,
    /// A namespace an admin labelled for kit copies (`skiff.dev/kit`).
    Kit,
    /// Where the scene's Mirror lives.
    Mirrors,
}

/// The request of an attempt.
#[derive(Debug, Clone, Copy)]
pub enum Act {
    /// A JSON merge patch of the named object.
    Patch(&'static str),
    Delete,
    /// A create of this object (its namespace is filled in).
    Create(&'static str),
}

/// One write a thief tries.
#[derive(Debug)]
pub struct Attempt {
    pub what: &'static str,
    /// Among the 11 of issue 42, the attempts every install mode let through before the policy.
    pub headline: bool,
    /// The resource (plural); its API group is [`group_version`]'s.
    pub resource: &'static str,
    pub place: Place,
    pub name: &'static str,
    pub act: Act,
}

const fn attempt(
    what: &'static str,
    headline: bool,
    resource: &'static str,
    place: Place,
    name: &'static str,
    act: Act,
) -> Attempt {
    Attempt {
        what,
        headline,
        resource,
        place,
        name,
        act,
    }
}

/// Everything the thief tries: the issue's 11 first, then the same for each kind.
pub const ATTEMPTS: &[Attempt] = &[
    attempt(
        "overwrite kube-system/coredns (the cluster's DNS)",
        true,
        "configmaps",
        Place::KubeSystem,
        "coredns",
        Act::Patch(r#"{"data": {"Corefile": ".:53 { forward . 203.0.113.53 }"}}"#),
    ),
    attempt(
        "delete kube-system/coredns",
        true,
        "configmaps",
        Place::KubeSystem,
        "coredns",
        Act::Delete,
    ),
    attempt(
        "overwrite a team's app-tls Secret",
        true,
        "secrets",
        Place::Team,
        "app-tls",
        Act::Patch(r#"{"data": {"tls.key": "dGhpZWY="}}"#),
    ),
    attempt(
        "delete a team's app-tls Secret",
        true,
        "secrets",
        Place::Team,
        "app-tls",
        Act::Delete,
    ),
    attempt(
        "delete a team's default-deny NetworkPolicy",
        true,
        "networkpolicies",
        Place::Team,
        "default-deny",
        Act::Delete,
    ),
    attempt(
        "lift a team's LimitRange",
        true,
        "limitranges",
        Place::Team,
        "limits",
        Act::Patch(r#"{"spec": {"limits": [{"type": "Container", "max": {"cpu": "64"}}]}}"#),
    ),
    attempt(
        "raise a team's quota",
        true,
        "resourcequotas",
        Place::Team,
        "quota",
        Act::Patch(r#"{"spec": {"hard": {"pods": "10000"}}}"#),
    ),
    attempt(
        "add a pull Secret to a team's ServiceAccount",
        true,
        "serviceaccounts",
        Place::Team,
        "app",
        Act::Patch(r#"{"imagePullSecrets": [{"name": "thief-registry"}]}"#),
    ),
    attempt(
        "delete a RoleBinding in kube-system",
        true,
        "rolebindings",
        Place::KubeSystem,
        "system-reader",
        Act::Delete,
    ),
    attempt(
        "re-aim a Secret Mirror at every namespace",
        true,
        "mirrors",
        Place::Mirrors,
        "thief",
        Act::Patch(r#"{"spec": {"namespaceSelector": {"matchLabels": null}}}"#),
    ),
    attempt(
        "take another controller's finalizer off a Mirror",
        true,
        "mirrors",
        Place::Mirrors,
        "thief",
        Act::Patch(r#"{"metadata": {"finalizers": null}}"#),
    ),
    attempt(
        "create an unlabelled ConfigMap in kube-system (coredns-custom, which CoreDNS imports)",
        false,
        "configmaps",
        Place::KubeSystem,
        "coredns-custom",
        Act::Create(
            r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "coredns-custom"},
            "data": {"thief.server": "example.com:53 { forward . 203.0.113.53 }"}}"#,
        ),
    ),
    attempt(
        "turn an object handed to one Mirror into another Mirror's copy",
        false,
        "configmaps",
        Place::Team,
        "handed",
        Act::Patch(
            r#"{"metadata": {"labels": {"app.kubernetes.io/managed-by": "skiff",
            "skiff.dev/mirror-namespace": "skiff-system", "skiff.dev/mirror-name": "elsewhere"}}}"#,
        ),
    ),
    attempt(
        "create an unlabelled Secret",
        false,
        "secrets",
        Place::Kit,
        "app-tls",
        Act::Create(
            r#"{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "app-tls"},
            "stringData": {"tls.crt": "x"}}"#,
        ),
    ),
    attempt(
        "create a labelled token Secret for another ServiceAccount, under a name skiff may read",
        false,
        "secrets",
        Place::Kit,
        "app-tls",
        Act::Create(
            r#"{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {"name": "app-tls", "labels": SKIFF_LABELS,
                "annotations": {"kubernetes.io/service-account.name": "app"}}}"#,
        ),
    ),
    attempt(
        "open a team's default-deny NetworkPolicy to all",
        false,
        "networkpolicies",
        Place::Team,
        "default-deny",
        Act::Patch(r#"{"spec": {"ingress": [{}]}}"#),
    ),
    attempt(
        "create a labelled allow-all NetworkPolicy in a team's namespace",
        false,
        "networkpolicies",
        Place::Team,
        "allow-all",
        Act::Create(
            r#"{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "allow-all", "labels": SKIFF_LABELS},
            "spec": {"podSelector": {}, "ingress": [{}]}}"#,
        ),
    ),
    attempt(
        "delete a team's LimitRange",
        false,
        "limitranges",
        Place::Team,
        "limits",
        Act::Delete,
    ),
    attempt(
        "create a labelled LimitRange in a team's namespace",
        false,
        "limitranges",
        Place::Team,
        "squeeze",
        Act::Create(
            r#"{"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "squeeze", "labels": SKIFF_LABELS},
            "spec": {"limits": [{"type": "Container", "max": {"memory": "1Mi"}}]}}"#,
        ),
    ),
    attempt(
        "delete a team's quota",
        false,
        "resourcequotas",
        Place::Team,
        "quota",
        Act::Delete,
    ),
    attempt(
        "create a labelled zero quota in a team's namespace",
        false,
        "resourcequotas",
        Place::Team,
        "zero",
        Act::Create(
            r#"{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "zero", "labels": SKIFF_LABELS},
            "spec": {"hard": {"pods": "0"}}}"#,
        ),
    ),
    attempt(
        "delete a team's ServiceAccount",
        false,
        "serviceaccounts",
        Place::Team,
        "app",
        Act::Delete,
    ),
    attempt(
        "make a namespace's default ServiceAccount, handed over, a copy",
        false,
        "serviceaccounts",
        Place::Team,
        "default",
        Act::Patch(
            r#"{"metadata": {"labels": {"app.kubernetes.io/managed-by": "skiff",
            "skiff.dev/mirror-namespace": "skiff-system", "skiff.dev/mirror-name": "thief"}},
            "imagePullSecrets": [{"name": "thief-registry"}]}"#,
        ),
    ),
    attempt(
        "add a subject to a RoleBinding in kube-system",
        false,
        "rolebindings",
        Place::KubeSystem,
        "system-reader",
        Act::Patch(
            r#"{"subjects": [{"kind": "Group", "name": "thieves", "apiGroup": "rbac.authorization.k8s.io"}]}"#,
        ),
    ),
    attempt(
        "create a labelled RoleBinding to edit in kube-system",
        false,
        "rolebindings",
        Place::KubeSystem,
        "thief-edit",
        Act::Create(
            r#"{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "thief-edit", "labels": SKIFF_LABELS},
            "subjects": [{"kind": "Group", "name": "thieves", "apiGroup": "rbac.authorization.k8s.io"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}}"#,
        ),
    ),
    attempt(
        "label a Mirror",
        false,
        "mirrors",
        Place::Mirrors,
        "thief",
        Act::Patch(r#"{"metadata": {"labels": {"stolen": "yes"}}}"#),
    ),
];

/// The issue's 11.
pub fn headline() -> impl Iterator<Item = &'static Attempt> {
    ATTEMPTS.iter().filter(|a| a.headline)
}

/// The namespaces and objects the attempts aim at, made by the admin: fresh namespaces per
/// scene, the same names in kube-system.
pub struct Scene {
    pub team: String,
    pub kit: String,
    /// Where the Mirror `thief` is.
    pub mirrors: String,
}

impl Scene {
    /// The scene in new namespaces tagged `tag`, the kube-system objects made again, and the
    /// Mirror `thief` in `mirrors` (which must exist).
    pub fn set_up(cp: &ControlPlane, tag: &str, mirrors: &str) -> Scene {
        let team = cp.create_namespace(&format!("{tag}-team"), &[("team", "payments")]);
        let kit = cp.create_namespace(&format!("{tag}-kit"), &[("skiff.dev/kit", "team")]);
        let kube_system = [
            "configmap/coredns",
            "configmap/coredns-custom",
            "rolebinding/system-reader",
            "rolebinding/thief-edit",
        ];
        cp.kubectl(&["create", "namespace", "kube-system"]);
        let mut delete = vec!["delete", "-n", "kube-system", "--ignore-not-found"];
        delete.extend(kube_system);
        cp.kubectl_ok(&delete);
        cp.apply(&objects(&team, mirrors));
        Scene {
            team,
            kit,
            mirrors: mirrors.to_owned(),
        }
    }

    pub fn namespace(&self, place: Place) -> &str {
        match place {
            Place::KubeSystem => "kube-system",
            Place::Team => &self.team,
            Place::Kit => &self.kit,
            Place::Mirrors => &self.mirrors,
        }
    }

    /// The raw request of `attempt`: method, path, body.
    pub fn request(&self, attempt: &Attempt) -> (&'static str, String, Option<String>) {
        let ns = self.namespace(attempt.place);
        let collection = format!(
            "{}/namespaces/{ns}/{}",
            api_prefix(attempt.resource),
            attempt.resource
        );
        match attempt.act {
            Act::Patch(body) => (
                "PATCH",
                format!("{collection}/{}", attempt.name),
                Some(body.to_owned()),
            ),
            Act::Delete => ("DELETE", format!("{collection}/{}", attempt.name), None),
            Act::Create(body) => {
                let mut object: Value =
                    serde_json::from_str(&body.replace("SKIFF_LABELS", SKIFF_LABELS))
                        .unwrap_or_else(|e| panic!("{}: not JSON: {e}", attempt.what));
                object["metadata"]["namespace"] = ns.into();
                ("POST", collection, Some(object.to_string()))
            }
        }
    }

    /// Sends `attempt` with `token`, as a dry run (`dryRun=All`: RBAC and admission decide as
    /// for the write, nothing is stored) when `dry_run`; what the API server answered.
    pub fn try_with(
        &self,
        cp: &ControlPlane,
        token: &str,
        attempt: &Attempt,
        dry_run: bool,
    ) -> Answer {
        let (method, mut path, body) = self.request(attempt);
        if dry_run {
            path.push_str("?dryRun=All");
        }
        let media_type = match method {
            "PATCH" => "application/merge-patch+json",
            _ => "application/json",
        };
        let request = RawRequest {
            method,
            path: &path,
            accept: "application/json",
            body: body.as_deref().map(|b| (media_type, b)),
        };
        let response = https_request(cp.url(), cp.ca_pem(), Some(token), &request)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        Answer::of(&response)
    }
}

/// The admin's objects of a scene: what a team and the cluster have that skiff does not manage.
fn objects(team: &str, mirrors: &str) -> String {
    let items = serde_json::json!([
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "coredns", "namespace": "kube-system"},
         "data": {"Corefile": ".:53 { forward . /etc/resolv.conf }"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "system-reader", "namespace": "kube-system"},
         "subjects": [{"kind": "Group", "name": "auditors", "apiGroup": "rbac.authorization.k8s.io"}],
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}},
        {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
         "metadata": {"name": "app-tls", "namespace": team},
         "data": {"tls.crt": "Y3J0", "tls.key": "a2V5"}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "handed", "namespace": team, "annotations": {"skiff.dev/adopt": HANDED_TO}},
         "data": {"ca.crt": "theirs"}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
         "metadata": {"name": "default-deny", "namespace": team},
         "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}},
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits", "namespace": team},
         "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}}]}},
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "quota", "namespace": team},
         "spec": {"hard": {"pods": "10"}}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "app", "namespace": team}},
        // As the controller-manager makes it, and handed over (ill-advised, and still refused).
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": "default", "namespace": team, "annotations": {"skiff.dev/adopt": HANDED_TO}}},
        {"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
         "metadata": {"name": "thief", "namespace": mirrors, "finalizers": ["example.com/keep"]},
         "spec": {"source": {"kind": "Secret", "name": "app-tls"},
                  "namespaceSelector": {"matchLabels": {"thief-scene": team}}}},
    ]);
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
}

/// The API group and version of `resource`, "" for the core group.
fn group_version(resource: &str) -> (&'static str, &'static str) {
    match resource {
        "networkpolicies" => ("networking.k8s.io", "v1"),
        "rolebindings" => ("rbac.authorization.k8s.io", "v1"),
        "mirrors" => ("skiff.dev", "v1alpha1"),
        _ => ("", "v1"),
    }
}

/// The path of `resource`'s group.
fn api_prefix(resource: &str) -> String {
    match group_version(resource) {
        ("", version) => format!("/api/{version}"),
        (group, version) => format!("/apis/{group}/{version}"),
    }
}

/// What `kubectl auth can-i` asks RBAC for an attempt: its verb and `resource.group/name`.
fn rbac_question(attempt: &Attempt) -> (&'static str, String) {
    let resource = match group_version(attempt.resource) {
        ("", _) => attempt.resource.to_owned(),
        (group, _) => format!("{}.{group}", attempt.resource),
    };
    match attempt.act {
        Act::Patch(_) => ("patch", format!("{resource}/{}", attempt.name)),
        Act::Delete => ("delete", format!("{resource}/{}", attempt.name)),
        Act::Create(_) => ("create", resource),
    }
}

/// What the API server answered an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// It got through (2xx).
    LetThrough,
    /// 403 from one of skiff's admission policies (its name).
    Policy(String),
    /// 403 from RBAC: the install grants no such right.
    Rbac,
    /// Anything else: the status and message.
    Other(u16, String),
}

impl Answer {
    fn of(response: &RawResponse) -> Answer {
        let message = serde_json::from_str::<Value>(&response.body)
            .ok()
            .and_then(|status| status["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| response.body.clone());
        match response.status {
            200..=299 => Answer::LetThrough,
            403 => policy_named(&message).map_or(Answer::Rbac, Answer::Policy),
            code => Answer::Other(code, message),
        }
    }

    pub fn is_let_through(&self) -> bool {
        *self == Answer::LetThrough
    }
}

/// The name of the admission policy that denied a request, from its message:
/// `ValidatingAdmissionPolicy 'skiff-writes' with binding 'skiff-writes' denied request: ...`.
fn policy_named(message: &str) -> Option<String> {
    let (_, rest) = message.split_once("ValidatingAdmissionPolicy '")?;
    let (name, rest) = rest.split_once('\'')?;
    rest.contains("denied request: ").then(|| name.to_owned())
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Answer::LetThrough => f.write_str("let through"),
            Answer::Policy(name) => write!(f, "403, policy {name}"),
            Answer::Rbac => f.write_str("403, RBAC"),
            Answer::Other(code, message) => write!(f, "{code}: {message}"),
        }
    }
}

/// skiff's token in one install mode.
pub struct Thief {
    /// The install mode.
    pub name: &'static str,
    /// Who the token authenticates as, and the token.
    pub user: String,
    pub token: String,
    /// The prefix of the names of the mode's policies.
    pub policies: &'static str,
    /// Where the scene's Mirror goes.
    pub mirrors: &'static str,
}

impl Thief {
    /// In a mode installed from `manifests/` (and `deploy/`): skiff's ServiceAccount.
    pub fn of_manifests(cp: &ControlPlane, name: &'static str) -> Thief {
        Thief {
            name,
            user: OPERATOR_USER.to_owned(),
            token: cp.operator_token().to_owned(),
            policies: "skiff-",
            mirrors: OPERATOR_NAMESPACE,
        }
    }

    /// The chart installed as release `thief` in `thief-system`, every kind and Secret copies
    /// on: its ServiceAccount `thief-skiff`, with a token from the TokenRequest API.
    fn of_chart(cp: &ControlPlane) -> Thief {
        let helm = Helm::with_kubeconfig(&cp.admin_kubeconfig());
        let chart = chart_dir().display().to_string();
        helm.ok(&[
            "install",
            "thief",
            &chart,
            "-n",
            "thief-system",
            "--create-namespace",
            "--set",
            "crd.enable=false",
            "--set",
            "kinds={networkpolicies.networking.k8s.io,limitranges,resourcequotas,rolebindings.rbac.authorization.k8s.io,serviceaccounts}",
            "--set",
            "bindableRoles={edit,view}",
            "--set",
            "secretTargetNames={app-tls}",
        ]);
        let args = ["create", "token", "thief-skiff", "-n", "thief-system"];
        Thief {
            name: "chart",
            user: "system:serviceaccount:thief-system:thief-skiff".to_owned(),
            token: cp.kubectl_ok(&args).trim().to_owned(),
            policies: "thief-skiff-",
            mirrors: "thief-system",
        }
    }

    /// Whether RBAC lets this token make `attempt` in `scene` (`kubectl auth can-i`, as the
    /// admin asking for the thief's user).
    pub fn may(&self, cp: &ControlPlane, scene: &Scene, attempt: &Attempt) -> bool {
        let (verb, resource) = rbac_question(attempt);
        let namespace = scene.namespace(attempt.place);
        let user = format!("--as={}", self.user);
        let out = cp.kubectl(&["auth", "can-i", verb, &resource, "-n", namespace, &user]);
        String::from_utf8_lossy(&out.stdout).trim() == "yes"
    }

    /// The mode's bindings of the policies this change added (skiff-writes and
    /// skiff-kit-namespaces): what "without the policy" removes.
    pub fn new_bindings(&self) -> [String; 2] {
        ["writes", "kit-namespaces"].map(|p| format!("{}{p}", self.policies))
    }
}

/// Installs each mode, one after another, on `cp` (a control plane of the caller's own) and hands
/// `visit` the thief of each: default (`manifests/`), Secret targets (`deploy/secret-targets`),
/// kit kinds (`deploy/kinds`, the Secret rights removed first), and the chart with everything on.
pub fn each_install_mode(cp: &ControlPlane, mut visit: impl FnMut(&Thief)) {
    cp.install_manifests();
    visit(&Thief::of_manifests(cp, "default"));
    cp.install_overlay("secret-targets");
    visit(&Thief::of_manifests(cp, "secret targets"));
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let secret_rbac = repo.join("manifests/components/secret-targets/rbac.yaml");
    cp.kubectl_ok(&["delete", "-f", &secret_rbac.display().to_string()]);
    cp.install_overlay("kinds");
    visit(&Thief::of_manifests(cp, "kit"));
    visit(&Thief::of_chart(cp));
}

/// Whether the API server denies `token` a dry-run create of a ConfigMap without skiff's labels
/// in `namespace`, by an admission policy: what `--require-write-policy` asks at start.
pub fn unlabelled_create_denied(cp: &ControlPlane, token: &str, namespace: &str) -> bool {
    let path = format!("/api/v1/namespaces/{namespace}/configmaps?dryRun=All");
    let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "unlabelled"}})
    .to_string();
    let request = RawRequest {
        method: "POST",
        path: &path,
        accept: "application/json",
        body: Some(("application/json", &body)),
    };
    let response = https_request(cp.url(), cp.ca_pem(), Some(token), &request)
        .unwrap_or_else(|e| panic!("POST {path}: {e}"));
    matches!(Answer::of(&response), Answer::Policy(_))
}
