//! e2e: impersonation on a real API server. A kubeconfig user with `as`, `as-groups` and
//! `as-user-extra` makes skiff's requests run as that user: the server says so
//! (SelfSubjectReview), grants what that user may do, refuses what it may not, naming it; and
//! skiff launched with such a kubeconfig leads and mirrors with every request, both clients'
//! and the watches, audited as impersonated.
//!
//! Why: impersonation narrows a credential's rights. Only the real authenticator and
//! authorizer show that the headers are read as meant; the operator's ServiceAccount is
//! granted `impersonate` first, so a 403 can only come from the impersonated user's rights.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use skiff::kube::api::{ConfigMap, Namespace, ObjectMeta};
use skiff::kube::{Client, Error, ListParams, load_kubeconfig_files};

use crate::support::control_plane::{
    ControlPlane, E2E_REPLICA_FLAGS, OPERATOR_B_UID, OPERATOR_NAMESPACE, OPERATOR_USER,
    require_e2e_binaries,
};
use crate::support::skiff::{Skiff, TempDir, eventually};

const STEP_TIMEOUT: Duration = Duration::from_secs(30);
/// The user skiff's binary acts as; bound to the shipped roles, as its ServiceAccount is.
const STAND_IN: &str = "skiff-stand-in";

/// `authentication.k8s.io/v1` SelfSubjectReview (`kubectl auth whoami`): who the server
/// takes the request's sender for.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct SelfSubjectReview {
    api_version: String,
    kind: String,
    metadata: ObjectMeta,
    #[serde(skip_serializing)]
    status: Value,
}

skiff::impl_resource!(
    SelfSubjectReview,
    "authentication.k8s.io/v1",
    "SelfSubjectReview",
    "selfsubjectreviews",
    namespaced = false
);

/// Lets the operator's ServiceAccount impersonate any user, group, uid and extra (once per
/// control plane: the suite's tests run in parallel).
fn grant_impersonation(cp: &ControlPlane) {
    cp.once("e2e-impersonator", |cp| {
        cp.apply(&format!(
        r#"{{"apiVersion": "v1", "kind": "List", "items": [
          {{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {{"name": "e2e-impersonator"}},
            "rules": [
              {{"apiGroups": [""], "resources": ["users", "groups"], "verbs": ["impersonate"]}},
              {{"apiGroups": ["authentication.k8s.io"], "resources": ["*"], "verbs": ["impersonate"]}}]}},
          {{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {{"name": "e2e-impersonator"}},
            "roleRef": {{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "e2e-impersonator"}},
            "subjects": [{{"kind": "User", "name": "{OPERATOR_USER}"}}]}}]}}"#
        ));
    });
}

/// A kubeconfig for the control plane with `token` and the user lines `extra` (indented under
/// `user:`).
fn kubeconfig(dir: &TempDir, cp: &ControlPlane, token: &str, extra: &str) -> PathBuf {
    let ca = dir.0.join("ca.crt");
    std::fs::write(&ca, cp.ca_pem()).expect("write the CA");
    let text = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: {server}
    certificate-authority: {ca}
users:
- name: operator
  user:
    token: {token}
{extra}
contexts:
- name: e2e
  context: {{cluster: e2e, user: operator, namespace: {OPERATOR_NAMESPACE}}}
current-context: e2e
",
        server = cp.url(),
        ca = ca.display(),
    );
    let path = dir.0.join("kubeconfig");
    std::fs::write(&path, text).expect("write the kubeconfig");
    path
}

fn client(path: &PathBuf) -> Client {
    let config = load_kubeconfig_files(std::slice::from_ref(path), None).expect("load");
    Client::new(config).expect("client")
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_client_acting_as_jane_is_jane_to_the_api_server() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    grant_impersonation(cp);
    let ns = cp.create_namespace("impersonation", &[]);
    cp.apply(&format!(
        r#"{{"apiVersion": "v1", "kind": "List", "items": [
          {{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {{"name": "read-configmaps", "namespace": "{ns}"}},
            "rules": [{{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}}]}},
          {{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {{"name": "e2e-readers", "namespace": "{ns}"}},
            "roleRef": {{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-configmaps"}},
            "subjects": [{{"kind": "Group", "name": "e2e-readers"}}]}}]}}"#
    ));
    let dir = TempDir::new("e2e-impersonation");
    let as_jane = "    as: jane\n    as-groups: [e2e-readers]\n    as-user-extra:\n      example.com/scopes: [view]";
    let jane = client(&kubeconfig(&dir, cp, cp.operator_token(), as_jane));
    let operator = client(&kubeconfig(&dir, cp, cp.operator_token(), ""));

    smol::block_on(async {
        let review = jane
            .create(&SelfSubjectReview::default())
            .await
            .expect("SelfSubjectReview");
        let who = &review.status["userInfo"];
        assert_eq!(who["username"], "jane", "{who}");
        let groups = who["groups"].as_array().cloned().unwrap_or_default();
        assert!(groups.contains(&"e2e-readers".into()), "{who}");
        assert_eq!(who["extra"]["example.com/scopes"][0], "view", "{who}");

        // What jane may do (through the group she is given) succeeds.
        jane.list::<ConfigMap>(Some(&ns), &ListParams::default())
            .await
            .expect("jane's group may list configmaps there");
        // What she may not is refused, naming her, though the credential alone may do it.
        operator
            .list::<Namespace>(None, &ListParams::default())
            .await
            .expect("the operator may list namespaces");
        match jane.list::<Namespace>(None, &ListParams::default()).await {
            Err(Error::Api {
                code: 403, message, ..
            }) => {
                assert!(message.contains("User \"jane\""), "{message}")
            }
            other => panic!("expected 403 naming jane, got {other:?}"),
        }
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn skiff_launched_as_another_user_leads_and_mirrors_with_every_request_impersonated() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    grant_impersonation(cp);
    cp.apply(&format!(
        r#"{{"apiVersion": "v1", "kind": "List", "items": [
          {{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {{"name": "e2e-stand-in"}},
            "roleRef": {{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "skiff"}},
            "subjects": [{{"kind": "User", "name": "{STAND_IN}"}}]}},
          {{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {{"name": "e2e-stand-in", "namespace": "{OPERATOR_NAMESPACE}"}},
            "roleRef": {{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "skiff-leader-election"}},
            "subjects": [{{"kind": "User", "name": "{STAND_IN}"}}]}}]}}"#
    ));
    let dir = TempDir::new("e2e-impersonating-skiff");
    // The second operator token: its uid tells this replica's requests apart in the audit log.
    let path = kubeconfig(
        &dir,
        cp,
        cp.operator_b_token(),
        &format!("    as: {STAND_IN}"),
    );
    let name = "stand-in";
    let mut skiff = Skiff::start_with_env(
        &path,
        dir.0.join("skiff.log"),
        &E2E_REPLICA_FLAGS,
        &[("POD_NAME", name)],
    );
    let held = eventually(STEP_TIMEOUT, || {
        cp.object("lease", OPERATOR_NAMESPACE, "skiff-leader")
            .and_then(|lease| lease["spec"]["holderIdentity"].as_str().map(str::to_owned))
            .is_some_and(|holder| holder.starts_with(&format!("{name}_")))
    });
    assert!(held, "never held the Lease; log:\n{}", skiff.logs());
    let target = cp.create_namespace("impersonated", &[("impersonation-e2e", "yes")]);
    cp.apply(&format!(
        r#"{{"apiVersion": "v1", "kind": "List", "items": [
          {{"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {{"name": "stand-in", "namespace": "{OPERATOR_NAMESPACE}"}}, "data": {{"k": "v"}}}},
          {{"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {{"name": "stand-in", "namespace": "{OPERATOR_NAMESPACE}"}},
            "spec": {{"source": {{"kind": "ConfigMap", "name": "stand-in"}},
                      "namespaceSelector": {{"matchLabels": {{"impersonation-e2e": "yes"}}}}}}}}]}}"#
    ));
    let mirrored = eventually(STEP_TIMEOUT, || {
        cp.object("configmap", &target, "stand-in").is_some()
    });
    assert!(mirrored, "no copy in {target}; log:\n{}", skiff.logs());
    skiff.terminate(STEP_TIMEOUT);

    let events: Vec<_> = cp
        .audit()
        .into_iter()
        .filter(|e| e.uid == OPERATOR_B_UID)
        .collect();
    let not_as_stand_in: Vec<_> = events
        .iter()
        .filter(|e| e.impersonated.as_deref() != Some(STAND_IN))
        .collect();
    assert!(not_as_stand_in.is_empty(), "{not_as_stand_in:#?}");
    let seen = |what: &str, found: bool| assert!(found, "no {what} among {events:#?}");
    seen("watch", events.iter().any(|e| e.verb == "watch"));
    seen(
        "lease update",
        events.iter().any(|e| e.is_lease() && e.verb == "update"),
    );
    seen(
        "copy create",
        events
            .iter()
            .any(|e| e.verb == "create" && e.uri.contains(&target)),
    );
}
