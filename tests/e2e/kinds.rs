//! e2e: Mirrors of the namespace kit kinds (`--kinds`), on a real API server with RBAC enforced
//! and skiff run as a process with its flags and the RBAC of `deploy/kinds`.
//!
//! Why: what the server defaults (a NetworkPolicy's `policyTypes` and port protocols, a
//! LimitRange's defaults, a ResourceQuota's canonical quantities and its `status.used`, a
//! RoleBinding subject's `apiGroup`) only the real server does, and a default taken for drift
//! would make skiff write forever. Per kind: the copy is created, a hand edit is restored, a
//! namespace relabelled out loses its copy, a settled replica and a restarted one write nothing,
//! and deleting the Mirror deletes the copies. And skiff refuses, before any write, a RoleBinding
//! to a role the admin did not name (`cluster-admin`) and a kind `--kinds` does not enable.

use std::path::Path;
use std::time::Duration;

use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, require_e2e_binaries};
use crate::support::mirror_e2e::{
    Replica, SELECT_LABEL, absent, mirror, one_replica_at_a_time, ready_says, wait_until,
};
use serde_json::{Value, json};

/// How long a settled replica is watched for writes.
const QUIET: Duration = Duration::from_secs(4);
/// The flags of `deploy/kinds`: every kit kind, two bindable ClusterRoles, and the label
/// that namespaces receiving RoleBindings carry (the policy `skiff-rolebindings` requires it).
const KIT_FLAGS: [&str; 3] = [
    "--kinds=networkpolicies.networking.k8s.io,limitranges,resourcequotas,rolebindings.rbac.authorization.k8s.io,serviceaccounts",
    "--bindable-roles=edit,view",
    "--binding-namespace-label=skiff.dev/kit",
];
/// The label `--binding-namespace-label` names in `deploy/kinds`.
const KIT_LABEL: &str = "skiff.dev/kit";

/// The Mirror e2e control plane plus the kinds component's RBAC, once.
fn control_plane() -> &'static ControlPlane {
    crate::support::mirror_e2e::control_plane().install_overlay("kinds")
}

/// One kit kind as the test drives it.
struct Kit {
    /// The Mirror's `spec.source.kind`, and the kubectl resource.
    kind: &'static str,
    resource: &'static str,
    api_version: &'static str,
    /// The source's content members, written as a user would (the server defaults the rest).
    content: &'static str,
    /// The fields a copy carries.
    fields: &'static [&'static str],
    /// A merge patch a hand edit of a copy makes.
    drift: &'static str,
}

const NETWORK_POLICY: Kit = Kit {
    kind: "NetworkPolicy",
    resource: "networkpolicies",
    api_version: "networking.k8s.io/v1",
    content: r#""spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}]}"#,
    fields: &["spec"],
    drift: r#"{"spec": {"podSelector": {"matchLabels": {"hand": "edit"}}}}"#,
};

const LIMIT_RANGE: Kit = Kit {
    kind: "LimitRange",
    resource: "limitranges",
    api_version: "v1",
    content: r#""spec": {"limits": [{"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}}]}"#,
    fields: &["spec"],
    drift: r#"{"spec": {"limits": [{"type": "Container", "max": {"cpu": "3"}}]}}"#,
};

const RESOURCE_QUOTA: Kit = Kit {
    kind: "ResourceQuota",
    resource: "resourcequotas",
    api_version: "v1",
    content: r#""spec": {"hard": {"pods": "10", "requests.cpu": "1000m"}}"#,
    fields: &["spec"],
    drift: r#"{"spec": {"hard": {"pods": "99"}}}"#,
};

const ROLE_BINDING: Kit = Kit {
    kind: "RoleBinding",
    resource: "rolebindings",
    api_version: "rbac.authorization.k8s.io/v1",
    content: r#""subjects": [{"kind": "Group", "name": "team-a"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}"#,
    fields: &["subjects", "roleRef"],
    drift: r#"{"subjects": [{"kind": "Group", "name": "intruder",
        "apiGroup": "rbac.authorization.k8s.io"}]}"#,
};

/// The source holds no `automountServiceAccountToken`, so restoring the hand edit, which sets
/// it, removes it from the copy.
const SERVICE_ACCOUNT: Kit = Kit {
    kind: "ServiceAccount",
    resource: "serviceaccounts",
    api_version: "v1",
    content: r#""imagePullSecrets": [{"name": "registry-pull"}]"#,
    fields: &["imagePullSecrets", "automountServiceAccountToken"],
    drift: r#"{"imagePullSecrets": [{"name": "intruder"}], "automountServiceAccountToken": true}"#,
};

fn source(cp: &ControlPlane, kit: &Kit, name: &str, content: &str) {
    cp.apply(&format!(
        r#"{{"apiVersion": "{}", "kind": "{}",
            "metadata": {{"name": "{name}", "namespace": "{OPERATOR_NAMESPACE}"}}, {content}}}"#,
        kit.api_version, kit.kind
    ));
}

/// A Mirror of `kind`/`source` selecting the namespaces labelled both `mirror-e2e: <label>`
/// and `skiff.dev/kit: <label>`, as a RoleBinding Mirror's selector must.
fn kit_mirror(cp: &ControlPlane, name: &str, kind: &str, source: &str, label: &str) {
    cp.apply(&format!(
        r#"{{"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {{"name": "{name}", "namespace": "{OPERATOR_NAMESPACE}"}},
            "spec": {{"source": {{"kind": "{kind}", "name": "{source}"}},
                      "namespaceSelector": {{"matchLabels": {{"{SELECT_LABEL}": "{label}",
                                                               "{KIT_LABEL}": "{label}"}}}}}}}}"#
    ));
}

/// `count` namespaces a kit Mirror labelled `label` selects.
fn kit_namespaces(cp: &ControlPlane, label: &str, count: usize) -> Vec<String> {
    cp.create_namespaces(label, &[(SELECT_LABEL, label), (KIT_LABEL, label)], count)
}

/// The fields a copy carries, as the server holds them on `object`.
fn content(kit: &Kit, object: &Value) -> Value {
    kit.fields
        .iter()
        .map(|f| ((*f).to_owned(), object[*f].clone()))
        .collect()
}

/// Whether `namespace` holds skiff's copy with the source's content.
fn copied(cp: &ControlPlane, kit: &Kit, name: &str, namespace: &str) -> bool {
    let Some(source) = cp.object(kit.resource, OPERATOR_NAMESPACE, name) else {
        return false;
    };
    cp.object(kit.resource, namespace, name)
        .is_some_and(|copy| {
            copy["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "skiff"
                && content(kit, &copy) == content(kit, &source)
        })
}

/// PATCH, PUT and DELETE the replica sent (POST is also the leader's Event).
fn updates(replica: &Replica) -> f64 {
    let writes = replica.writes();
    writes
        .iter()
        .filter(|(m, _)| *m != "POST")
        .map(|(_, n)| n)
        .sum()
}

fn versions(cp: &ControlPlane, kit: &Kit, name: &str, namespaces: &[String]) -> Vec<Value> {
    namespaces
        .iter()
        .map(|ns| {
            cp.object(kit.resource, ns, name).map_or(Value::Null, |o| {
                json!([o["metadata"]["uid"], o["metadata"]["resourceVersion"]])
            })
        })
        .collect()
}

/// Runs `test` while a replica named `name` with `flags` leads and reconciles; stops it after
/// (exit 0 expected), printing its log first if `test` panicked.
fn running<T>(
    cp: &ControlPlane,
    name: &str,
    flags: &[&str],
    test: impl FnOnce(&Replica) -> T,
) -> T {
    let replica = Replica::start_with(cp, name, flags);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_until("the replica reconciles", || {
            replica
                .skiff
                .logs()
                .contains("mirror caches filled; reconciling")
        });
        test(&replica)
    }));
    if outcome.is_err() {
        eprintln!("skiff log:\n{}", replica.skiff.logs());
    }
    replica.stop();
    outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// A whole lifecycle of one kit kind's Mirror; `settle` runs on a settled cluster (a status
/// the server or a controller writes, say) and must not make skiff write.
fn lifecycle(kit: &Kit, settle: impl Fn(&ControlPlane, &str, &[String])) {
    require_e2e_binaries();
    let _turn = one_replica_at_a_time();
    let cp = control_plane();
    let name = format!("kit-{}", kit.resource);
    let label = name.as_str();
    let namespaces = kit_namespaces(cp, label, 2);
    let before = running(cp, &format!("{name}-a"), &KIT_FLAGS, |replica| {
        source(cp, kit, &name, kit.content);
        kit_mirror(cp, &name, kit.kind, &name, label);
        wait_until("a copy in each namespace, Ready", || {
            namespaces.iter().all(|ns| copied(cp, kit, &name, ns))
                && ready_says(cp, &name, "Synced", "2 of 2")
        });
        let writes = updates(replica);
        std::thread::sleep(QUIET);
        settle(cp, &name, &namespaces);
        std::thread::sleep(QUIET);
        assert_eq!(
            updates(replica),
            writes,
            "a steady state wrote: {:?}",
            replica.writes()
        );
        let (ns0, ns1) = (&namespaces[0], &namespaces[1]);
        cp.kubectl_ok(&[
            "patch",
            kit.resource,
            &name,
            "-n",
            ns0,
            "--type=merge",
            "-p",
            kit.drift,
        ]);
        wait_until("the hand edit is undone", || copied(cp, kit, &name, ns0));
        cp.kubectl_ok(&[
            "label",
            "namespace",
            ns1,
            &format!("{SELECT_LABEL}=elsewhere"),
            "--overwrite",
        ]);
        wait_until("the copy leaves the namespace relabelled out", || {
            absent(cp, kit.resource, ns1, &name)
        });
        versions(cp, kit, &name, &namespaces[..1])
    });

    running(cp, &format!("{name}-b"), &KIT_FLAGS, |replica| {
        std::thread::sleep(QUIET);
        assert_eq!(
            updates(replica),
            0.0,
            "writes on a restart: {:?}",
            replica.writes()
        );
        assert_eq!(
            versions(cp, kit, &name, &namespaces[..1]),
            before,
            "the restart changed a copy"
        );
        cp.kubectl_ok(&[
            "delete",
            "mirror",
            &name,
            "-n",
            OPERATOR_NAMESPACE,
            "--wait=false",
        ]);
        wait_until("deleting the Mirror deletes its copy", || {
            absent(cp, kit.resource, &namespaces[0], &name)
                && absent(cp, "mirror", OPERATOR_NAMESPACE, &name)
        });
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_network_policy_is_copied_and_its_server_defaults_are_no_drift() {
    lifecycle(&NETWORK_POLICY, |cp, name, namespaces| {
        let copy = cp
            .object("networkpolicies", &namespaces[0], name)
            .expect("copy");
        assert_eq!(
            copy["spec"]["policyTypes"],
            json!(["Ingress"]),
            "defaulted: {copy:#}"
        );
        assert_eq!(copy["spec"]["ingress"][0]["ports"][0]["protocol"], "TCP");
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_limit_range_is_copied_and_its_server_defaults_are_no_drift() {
    lifecycle(&LIMIT_RANGE, |cp, name, namespaces| {
        let copy = cp
            .object("limitranges", &namespaces[0], name)
            .expect("copy");
        assert_eq!(
            copy["spec"]["limits"][0]["default"]["cpu"], "2",
            "defaulted: {copy:#}"
        );
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_resource_quota_is_copied_and_its_status_updates_are_no_drift() {
    lifecycle(&RESOURCE_QUOTA, |cp, name, namespaces| {
        let copy = cp
            .object("resourcequotas", &namespaces[0], name)
            .expect("copy");
        assert_eq!(
            copy["spec"]["hard"]["requests.cpu"], "1",
            "canonical: {copy:#}"
        );
        // What the quota controller does on every pod: a new status.used, a new version.
        for ns in [namespaces[0].as_str(), OPERATOR_NAMESPACE] {
            let used = r#"{"status": {"hard": {"pods": "10"}, "used": {"pods": "3"}}}"#;
            cp.kubectl_ok(&[
                "patch",
                "resourcequota",
                name,
                "-n",
                ns,
                "--subresource=status",
                "--type=merge",
                "-p",
                used,
            ]);
        }
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_role_binding_is_copied_and_a_new_role_ref_replaces_its_copies() {
    lifecycle(&ROLE_BINDING, |cp, name, namespaces| {
        let copy = cp
            .object("rolebindings", &namespaces[0], name)
            .expect("copy");
        assert_eq!(copy["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
    });
    // A roleRef cannot change, on the source either: it is deleted and created anew, and skiff
    // replaces each copy (a patch would be refused), conditional on the uid it read.
    require_e2e_binaries();
    let _turn = one_replica_at_a_time();
    let cp = control_plane();
    let (kit, name) = (&ROLE_BINDING, "kit-rolebinding-edit");
    let namespaces = kit_namespaces(cp, name, 1);
    running(cp, name, &KIT_FLAGS, |_| {
        source(cp, kit, name, kit.content);
        kit_mirror(cp, name, kit.kind, name, name);
        wait_until("a copy binding view", || {
            copied(cp, kit, name, &namespaces[0])
        });
        let uid = versions(cp, kit, name, &namespaces)[0][0].clone();
        cp.kubectl_ok(&["delete", "rolebinding", name, "-n", OPERATOR_NAMESPACE]);
        source(cp, kit, name, &kit.content.replace("\"view\"", "\"edit\""));
        wait_until("the copy binds edit, replaced", || {
            copied(cp, kit, name, &namespaces[0])
                && cp
                    .object("rolebindings", &namespaces[0], name)
                    .is_some_and(|c| c["roleRef"]["name"] == "edit" && c["metadata"]["uid"] != uid)
        });
        // The status is written after the copies, so it may still show the source missing.
        let mut mirror = Value::Null;
        wait_until("the status counts a replacement", || {
            mirror = cp
                .object("mirror", OPERATOR_NAMESPACE, name)
                .expect("Mirror");
            !mirror["status"]["replaced"].is_null()
        });
        assert_eq!(mirror["status"]["replaced"], 1, "{mirror:#}");
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_service_account_is_copied_without_its_secrets_and_they_are_no_drift() {
    lifecycle(&SERVICE_ACCOUNT, |cp, name, namespaces| {
        // What a token controller does: `secrets` filled in, on the source and on a copy.
        let secrets = r#"{"secrets": [{"name": "token-by-the-controller"}]}"#;
        for ns in [namespaces[0].as_str(), OPERATOR_NAMESPACE] {
            cp.kubectl_ok(&[
                "patch",
                "serviceaccount",
                name,
                "-n",
                ns,
                "--type=merge",
                "-p",
                secrets,
            ]);
        }
        let copy = cp
            .object("serviceaccounts", &namespaces[1], name)
            .expect("copy");
        assert!(copy.get("secrets").is_none(), "secrets copied: {copy:#}");
    });
}

/// A copy may not take a name the controller-manager keeps in every namespace: the
/// ServiceAccount `default` (every Pod that names none runs as it) and the ConfigMap
/// `kube-root-ca.crt` (the cluster's root CA). Refused before any write, with the reason
/// `NameReserved`, whether or not the namespace holds one yet: this control plane runs no
/// controller-manager, so one namespace holds a hand-made `default` and the other holds none,
/// and neither gains or changes one.
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_copy_may_not_take_a_name_the_controller_manager_keeps_in_every_namespace() {
    require_e2e_binaries();
    let _turn = one_replica_at_a_time();
    let cp = control_plane();
    let label = "kit-default";
    let namespaces = kit_namespaces(cp, label, 2);
    let ns = namespaces[0].as_str();
    cp.apply(&format!(
        r#"{{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {{"name": "default", "namespace": "{ns}"}}}}"#
    ));
    let before = versions(cp, &SERVICE_ACCOUNT, "default", &namespaces);
    assert!(
        before[1].is_null(),
        "the second namespace holds no default yet"
    );
    source(cp, &SERVICE_ACCOUNT, "default", SERVICE_ACCOUNT.content);
    cp.apply(&format!(
        r#"{{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {{"name": "root-ca", "namespace": "{OPERATOR_NAMESPACE}"}}, "data": {{"ca.crt": "x"}}}}"#
    ));
    let root_ca = "kit-root-ca";
    running(cp, label, &KIT_FLAGS, |_| {
        kit_mirror(cp, label, "ServiceAccount", "default", label);
        let renamed = r#""targetName": "kube-root-ca.crt","#;
        mirror(cp, root_ca, "ConfigMap", "root-ca", renamed, label);
        wait_until("both Mirrors report the name reserved", || {
            ready_says(cp, label, "NameReserved", "default")
                && ready_says(cp, root_ca, "NameReserved", "kube-root-ca.crt")
        });
        std::thread::sleep(QUIET);
        let after = versions(cp, &SERVICE_ACCOUNT, "default", &namespaces);
        assert_eq!(after, before, "skiff made or changed a namespace's default");
        for ns in &namespaces {
            assert!(
                absent(cp, "configmaps", ns, "kube-root-ca.crt"),
                "skiff wrote kube-root-ca.crt in {ns}"
            );
        }
        for name in [label, root_ca] {
            cp.kubectl_ok(&["delete", "mirror", name, "-n", OPERATOR_NAMESPACE]);
        }
    });
}

/// Refused before any write, each with its reason: a RoleBinding to `cluster-admin` (not in
/// `--bindable-roles`), RoleBindings the policy `skiff-rolebindings` would deny (one granting
/// skiff's own ServiceAccount, one whose selector does not require the namespace label, one
/// selecting a `kube-*` namespace), and a kind `--kinds` does not enable. skiff's log shows no
/// 403 and no admission denial: it never asked.
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn role_bindings_rbac_or_the_policy_would_deny_and_a_kind_not_enabled_are_refused_before_any_write()
{
    require_e2e_binaries();
    let _turn = one_replica_at_a_time();
    let cp = control_plane();
    let label = "kit-refused";
    let namespaces = kit_namespaces(cp, label, 1);
    let kube = cp.create_namespace(
        "kube-kit",
        &[(SELECT_LABEL, "kit-kube"), (KIT_LABEL, "kit-kube")],
    );
    let admin = ROLE_BINDING
        .content
        .replace("\"view\"", "\"cluster-admin\"");
    source(cp, &ROLE_BINDING, "kit-admin", &admin);
    let own = format!(
        r#""subjects": [{{"kind": "ServiceAccount", "name": "skiff", "namespace": "{OPERATOR_NAMESPACE}"}}],
            "roleRef": {{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}}"#
    );
    source(cp, &ROLE_BINDING, "kit-self", &own);
    source(cp, &ROLE_BINDING, "kit-team", ROLE_BINDING.content);
    source(cp, &NETWORK_POLICY, "kit-off", NETWORK_POLICY.content);
    // Only RoleBindings enabled: NetworkPolicies are not.
    let flags = [
        "--kinds=rolebindings.rbac.authorization.k8s.io",
        "--bindable-roles=edit,view",
        "--binding-namespace-label=skiff.dev/kit",
    ];
    let refused = [
        ("kit-admin", "RoleNotBindable", "cluster-admin"),
        ("kit-self", "BindingNotAllowed", "ServiceAccount skiff"),
        (
            "kit-anywhere",
            "NamespaceNotLabelled",
            "does not require that label",
        ),
        ("kit-kube", "BindingNotAllowed", kube.as_str()),
        (
            "kit-off",
            "KindNotEnabled",
            "networkpolicies.networking.k8s.io",
        ),
    ];
    running(cp, label, &flags, |replica| {
        kit_mirror(cp, "kit-admin", "RoleBinding", "kit-admin", label);
        kit_mirror(cp, "kit-self", "RoleBinding", "kit-self", label);
        mirror(cp, "kit-anywhere", "RoleBinding", "kit-team", "", label);
        kit_mirror(cp, "kit-kube", "RoleBinding", "kit-team", "kit-kube");
        mirror(cp, "kit-off", "NetworkPolicy", "kit-off", "", label);
        for (name, reason, naming) in refused {
            wait_until(&format!("{name} refused: {reason}"), || {
                ready_says(cp, name, reason, naming)
            });
        }
        for (name, _, _) in refused {
            let resource = if name == "kit-off" {
                "networkpolicies"
            } else {
                "rolebindings"
            };
            let target = if name == "kit-anywhere" || name == "kit-kube" {
                "kit-team"
            } else {
                name
            };
            for ns in [&namespaces[0], &kube] {
                assert!(absent(cp, resource, ns, target), "{name}: a copy in {ns}");
            }
        }
        let log = replica.skiff.logs().to_ascii_lowercase();
        assert!(
            !log.contains("forbidden") && !log.contains("denied"),
            "skiff met a 403 or a denial instead of refusing first:\n{log}"
        );
        for (name, _, _) in refused {
            cp.kubectl_ok(&["delete", "mirror", name, "-n", OPERATOR_NAMESPACE]);
        }
    });
}

/// A kind taken out of `--kinds` after its copies exist: they stay as they are (skiff no
/// longer watches the kind and, once its RBAC is removed too, may not touch it), the Mirror
/// reports `KindNotEnabled`, deleting the Mirror leaves the copy, and README's cleanup command
/// removes it.
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn copies_of_a_kind_no_longer_enabled_stay_until_the_documented_command_deletes_them() {
    require_e2e_binaries();
    let _turn = one_replica_at_a_time();
    let cp = control_plane();
    let (kit, name) = (&LIMIT_RANGE, "kit-disabled");
    let namespaces = kit_namespaces(cp, name, 1);
    running(cp, &format!("{name}-a"), &KIT_FLAGS, |_| {
        source(cp, kit, name, kit.content);
        kit_mirror(cp, name, kit.kind, name, name);
        wait_until("the copy", || copied(cp, kit, name, &namespaces[0]));
    });
    let before = versions(cp, kit, name, &namespaces);
    let flags = [
        "--kinds=networkpolicies.networking.k8s.io",
        "--binding-namespace-label=skiff.dev/kit",
    ];
    running(cp, &format!("{name}-b"), &flags, |_| {
        wait_until("the Mirror reports KindNotEnabled", || {
            ready_says(cp, name, "KindNotEnabled", "limitranges")
        });
        std::thread::sleep(QUIET);
        assert_eq!(
            versions(cp, kit, name, &namespaces),
            before,
            "the copy changed"
        );
        cp.kubectl_ok(&["delete", "mirror", name, "-n", OPERATOR_NAMESPACE]);
        std::thread::sleep(QUIET);
        assert_eq!(
            versions(cp, kit, name, &namespaces),
            before,
            "the copy changed"
        );
    });
    // README, "A kind disabled after its copies exist".
    let selector = format!(
        "app.kubernetes.io/managed-by=skiff,skiff.dev/mirror-namespace={OPERATOR_NAMESPACE},skiff.dev/mirror-name={name}"
    );
    cp.kubectl_ok(&["delete", "limitranges", "-A", "-l", &selector]);
    assert!(absent(cp, kit.resource, &namespaces[0], name));
    assert!(
        cp.object(kit.resource, OPERATOR_NAMESPACE, name).is_some(),
        "the source went too"
    );
}

/// The policy `skiff-rolebindings` of `deploy/kinds`, met with skiff's own token as a thief
/// would use it: RBAC lets that token create RoleBindings to `edit` anywhere, the policy lets
/// it write only what a kit copy is. (Switch the binding to Audit and this fails.)
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_stolen_skiff_token_cannot_bind_edit_to_skiff_nor_outside_the_labelled_namespaces() {
    require_e2e_binaries();
    // The bindings below carry a Mirror's labels (of no Mirror): a replica running meanwhile
    // would delete them as copies of a gone Mirror, and its writes would count in another test.
    let _turn = one_replica_at_a_time();
    let cp = control_plane();
    let labelled = cp.create_namespace("kit-vap", &[(KIT_LABEL, "team")]);
    let bare = cp.create_namespace("kit-vap-bare", &[]);
    let sa = format!("--serviceaccount={OPERATOR_NAMESPACE}:skiff");
    // Labelled as a kit copy is, so that this policy alone decides (skiff-writes refuses skiff's
    // token any unlabelled object anyway).
    let create = |ns: &str, name: &str, subject: &str, dry: bool| {
        let binding = [
            "create",
            "rolebinding",
            name,
            "--clusterrole=edit",
            subject,
            "-n",
            ns,
            "--dry-run=client",
            "-o",
            "json",
        ];
        let mut binding: Value =
            serde_json::from_str(&cp.kubectl_ok(&binding)).expect("a RoleBinding");
        binding["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "skiff",
            "skiff.dev/mirror-namespace": OPERATOR_NAMESPACE, "skiff.dev/mirror-name": "kit-vap"});
        let mut args = vec!["create", "-f", "-"];
        if dry {
            args.push("--dry-run=server");
        }
        cp.operator().run_with_stdin(&args, &binding.to_string())
    };
    // The policy is read by the API server a moment after it is created.
    wait_until("the policy denies skiff's token in kube-system", || {
        !create("kube-system", "grab", &sa, true).status.success()
    });
    let own_user = format!("--user=system:serviceaccount:{OPERATOR_NAMESPACE}:skiff");
    let denied = [
        ("kube-system", sa.as_str(), "in kube-system"),
        ("kube-public", "--group=team-a", "in kube-public"),
        (OPERATOR_NAMESPACE, "--group=team-a", "its own namespace"),
        (
            bare.as_str(),
            "--group=team-a",
            "only in namespaces labelled skiff.dev/kit",
        ),
        (
            labelled.as_str(),
            sa.as_str(),
            "include skiff's own ServiceAccount",
        ),
        (
            labelled.as_str(),
            own_user.as_str(),
            "include skiff's own ServiceAccount",
        ),
        (
            labelled.as_str(),
            "--group=system:serviceaccounts",
            "include skiff's own",
        ),
        (
            labelled.as_str(),
            "--group=system:authenticated",
            "include skiff's own",
        ),
    ];
    for (ns, subject, why) in denied {
        let out = create(ns, "grab", subject, false);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success()
                && stderr.contains("ValidatingAdmissionPolicy 'skiff-rolebindings'")
                && stderr.contains(why),
            "{subject} in {ns} was not denied by the policy ({why}): {stderr}"
        );
        assert!(absent(cp, "rolebindings", ns, "grab"), "{ns}: created");
    }
    let out = create(&labelled, "team-edit", "--group=team-a", false);
    assert!(
        out.status.success(),
        "a kit binding: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // An update is held to the same: adding skiff to a binding it wrote.
    let add = format!(
        r#"[{{"op": "add", "path": "/subjects/-", "value": {{"kind": "ServiceAccount", "name": "skiff", "namespace": "{OPERATOR_NAMESPACE}"}}}}]"#
    );
    let out = cp.kubectl_as_operator(&[
        "patch",
        "rolebinding",
        "team-edit",
        "-n",
        &labelled,
        "--type=json",
        "-p",
        &add,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("include skiff's own ServiceAccount"),
        "adding skiff to a binding: {stderr}"
    );
    // Gone before the next replica starts: no later test meets a copy of no Mirror.
    cp.kubectl_ok(&["delete", "rolebinding", "team-edit", "-n", &labelled]);
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn the_namespace_kit_sample_stamps_its_four_objects_into_a_labelled_namespace() {
    use crate::support::control_plane::E2E_REPLICA_FLAGS;
    use crate::support::skiff::{Skiff, TempDir};
    require_e2e_binaries();
    let _turn = one_replica_at_a_time();
    let cp = control_plane();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/namespace-kit.yaml");
    cp.kubectl_ok(&["apply", "-f", &sample.display().to_string()]);
    let team = cp.create_namespace("kit-team", &[("skiff.dev/kit", "team")]);
    // The sample's install: skiff-kit among the source namespaces.
    let mut flags: Vec<&str> = E2E_REPLICA_FLAGS
        .iter()
        .copied()
        .filter(|f| !f.starts_with("--source-namespaces"))
        .collect();
    flags.extend([
        "--source-namespaces=skiff-system,skiff-kit",
        "--metrics-bind-address=0",
    ]);
    flags.extend(KIT_FLAGS);
    let dir = TempDir::new("e2e-kinds-sample");
    let mut skiff = Skiff::start_with_env(
        &cp.operator_kubeconfig(),
        dir.0.join("skiff.log"),
        &flags,
        &[("POD_NAME", "kit-sample")],
    );
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let kit = [
            ("networkpolicies", "default-deny-ingress"),
            ("limitranges", "defaults"),
            ("resourcequotas", "team-quota"),
            ("rolebindings", "team-edit"),
        ];
        wait_until("the four objects in the labelled namespace", || {
            kit.iter()
                .all(|(resource, name)| cp.object(resource, &team, name).is_some())
        });
        let binding = cp
            .object("rolebindings", &team, "team-edit")
            .expect("RoleBinding");
        assert_eq!(binding["roleRef"]["name"], "edit");
    }));
    skiff.signal("TERM");
    let code = skiff.wait_exit(Duration::from_secs(20));
    if outcome.is_err() {
        eprintln!("skiff log:\n{}", skiff.logs());
    }
    cp.kubectl(&[
        "delete",
        "-f",
        &sample.display().to_string(),
        "--wait=false",
    ]);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    assert_eq!(code, Some(0), "skiff exit; log:\n{}", skiff.logs());
}
