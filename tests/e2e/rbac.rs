//! e2e: the shipped RBAC gives skiff's ServiceAccount what the controller needs and no more.
//! This is the default install (`manifests/`), where skiff holds no right on any Secret;
//! `secret_targets` checks the opt-in component that adds Secret copies by name.
//!
//! Why: RBAC mistakes only show on a real authorizer, and too much is as wrong as too little.
//! Every check runs twice: as the admin impersonating the ServiceAccount (`--as`), and with the
//! ServiceAccount's own token, so the token file and the bindings are both exercised.

use crate::support::control_plane::{ControlPlane, OPERATOR_USER, require_e2e_binaries};
use skiff::kube::api::PodMeta;
use skiff::kube::{Client, load_kubeconfig_files};

/// `kubectl auth can-i VERB RESOURCE [-n NS | --all-namespaces] [--subresource=status]`
/// (`RESOURCE/NAME` names an object, not a subresource).
struct Check {
    verb: &'static str,
    resource: &'static str,
    /// None: all namespaces (cluster-wide).
    namespace: Option<&'static str>,
    /// The status subresource rather than the object.
    status: bool,
}

const fn check(verb: &'static str, resource: &'static str, ns: Option<&'static str>) -> Check {
    Check {
        verb,
        resource,
        namespace: ns,
        status: false,
    }
}

/// A check of `resource`'s status subresource.
const fn status(verb: &'static str, resource: &'static str, ns: Option<&'static str>) -> Check {
    Check {
        status: true,
        ..check(verb, resource, ns)
    }
}

const SKIFF: Option<&str> = Some("skiff-system");
const OTHER: Option<&str> = Some("team-a");
const ALL: Option<&str> = None;

/// What the controller, the elector and the event recorder do.
const MUST_ALLOW: &[Check] = &[
    check("watch", "mirrors.skiff.dev", ALL),
    check("list", "mirrors.skiff.dev", ALL),
    check("patch", "mirrors.skiff.dev", OTHER), // finalizer (a merge patch)
    status("update", "mirrors.skiff.dev", OTHER), // a PUT of the status
    // --self-service: acceptances are read, and their status is patched.
    check("list", "mirroracceptances.skiff.dev", ALL),
    check("watch", "mirroracceptances.skiff.dev", ALL),
    status("patch", "mirroracceptances.skiff.dev", OTHER),
    check("list", "namespaces", ALL),
    check("watch", "namespaces", ALL),
    check("create", "configmaps", OTHER),
    check("patch", "configmaps", OTHER),
    check("delete", "configmaps", OTHER),
    check("get", "configmaps", OTHER), // an object in the way of a copy
    check("watch", "configmaps", SKIFF),
    check("get", "leases.coordination.k8s.io/skiff-leader", SKIFF),
    check("patch", "pods", SKIFF), // --leader-elect-pod-deletion-cost
    check("get", "pods", SKIFF),   // --stop-on-pod-deletion
    check("watch", "pods", SKIFF), // --stop-on-pod-deletion
    check("update", "leases.coordination.k8s.io/skiff-leader", SKIFF),
    check("watch", "leases.coordination.k8s.io/skiff-leader", SKIFF),
    check("create", "leases.coordination.k8s.io", SKIFF),
    check("create", "events", SKIFF),
    check("create", "events", OTHER),
    // Secure /metrics: who is this token, and may they get /metrics?
    check("create", "tokenreviews.authentication.k8s.io", ALL),
    check("create", "subjectaccessreviews.authorization.k8s.io", ALL),
];

/// Everything a compromised or buggy skiff must still be refused.
const MUST_DENY: &[Check] = &[
    check("*", "*", ALL),
    // Granted once, never used by skiff's code (README, "Security"): dropped.
    check("get", "mirrors.skiff.dev", OTHER),
    check("update", "mirrors.skiff.dev", OTHER),
    status("get", "mirrors.skiff.dev", OTHER),
    status("patch", "mirrors.skiff.dev", OTHER),
    status("update", "mirroracceptances.skiff.dev", OTHER),
    check("get", "namespaces", ALL),
    check("update", "configmaps", OTHER),
    check("patch", "events", OTHER),
    check("create", "events.events.k8s.io", OTHER),
    check("patch", "events.events.k8s.io", OTHER),
    check("list", "leases.coordination.k8s.io/skiff-leader", SKIFF),
    check("delete", "namespaces", ALL),
    check("update", "namespaces", ALL),
    check("create", "mirrors.skiff.dev", OTHER),
    check("delete", "mirrors.skiff.dev", OTHER),
    check("create", "mirroracceptances.skiff.dev", OTHER),
    check("update", "mirroracceptances.skiff.dev", OTHER),
    check("patch", "mirroracceptances.skiff.dev", OTHER),
    check("delete", "mirroracceptances.skiff.dev", OTHER),
    // No Secret anywhere, not even in skiff's own namespace: Secret copies are opt-in.
    check("get", "secrets", SKIFF),
    check("list", "secrets", SKIFF),
    check("watch", "secrets", SKIFF),
    check("get", "secrets", OTHER),
    check("get", "secrets/app-tls", OTHER),
    check("list", "secrets", ALL),
    check("watch", "secrets", ALL),
    check("create", "secrets", OTHER),
    check("update", "secrets", OTHER),
    check("patch", "secrets", OTHER),
    check("delete", "secrets", OTHER),
    check("deletecollection", "secrets", OTHER),
    check("create", "leases.coordination.k8s.io", OTHER),
    check("update", "leases.coordination.k8s.io/skiff-leader", OTHER),
    check("get", "leases.coordination.k8s.io/other-controller", SKIFF),
    check(
        "update",
        "leases.coordination.k8s.io/other-controller",
        SKIFF,
    ),
    check("list", "leases.coordination.k8s.io", SKIFF), // only by name: see the next test
    check("delete", "leases.coordination.k8s.io/skiff-leader", SKIFF),
    check("create", "clusterroles.rbac.authorization.k8s.io", ALL),
    check("escalate", "clusterroles.rbac.authorization.k8s.io", ALL),
    check("bind", "clusterroles.rbac.authorization.k8s.io", ALL),
    check("bind", "roles.rbac.authorization.k8s.io", SKIFF),
    check("impersonate", "users", ALL),
    check("impersonate", "serviceaccounts", SKIFF),
    check("create", "serviceaccounts/token", SKIFF),
    check("get", "nodes", ALL),
    check("create", "pods", OTHER),
    check("patch", "pods", OTHER),
    check("get", "pods", OTHER),
    check("list", "pods", SKIFF),
    check("update", "pods", SKIFF),
    check("delete", "pods", SKIFF),
    check(
        "update",
        "customresourcedefinitions.apiextensions.k8s.io",
        ALL,
    ),
    check("update", "flowschemas.flowcontrol.apiserver.k8s.io", ALL),
    // The reviews are create-only; nothing else in their groups, and no access to Services or
    // NetworkPolicies (the metrics objects are installed, not managed, by skiff).
    check(
        "create",
        "localsubjectaccessreviews.authorization.k8s.io",
        OTHER,
    ),
    check(
        "create",
        "certificatesigningrequests.certificates.k8s.io",
        ALL,
    ),
    check("update", "networkpolicies.networking.k8s.io", SKIFF),
    check("update", "services", SKIFF),
    check(
        "bind",
        "clusterroles.rbac.authorization.k8s.io/skiff-metrics-reader",
        ALL,
    ),
];

#[derive(Clone, Copy, Debug)]
enum Identity {
    /// The admin with `--as=system:serviceaccount:skiff-system:skiff`.
    Impersonated,
    /// The ServiceAccount's token (operator.kubeconfig).
    OwnToken,
}

fn can_i(cp: &ControlPlane, identity: Identity, check: &Check) -> bool {
    let as_operator = format!("--as={OPERATOR_USER}");
    let mut args = vec!["auth", "can-i", check.verb, check.resource];
    match check.namespace {
        Some(ns) => args.extend(["-n", ns]),
        None => args.push("--all-namespaces"),
    }
    if check.status {
        args.push("--subresource=status");
    }
    let output = match identity {
        Identity::Impersonated => cp.kubectl(&[&args[..], &[as_operator.as_str()]].concat()),
        Identity::OwnToken => cp.kubectl_as_operator(&args),
    };
    match String::from_utf8_lossy(&output.stdout).trim() {
        "yes" => true,
        "no" => false,
        other => panic!(
            "can-i {args:?} as {identity:?}: unexpected {other:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

/// kubectl processes run at once: enough to overlap their waits, few enough for a shared machine.
const PARALLEL_CHECKS: usize = 8;

/// Each check that disagrees with `expected`, as `identity VERB RESOURCE NS`.
fn disagreements(cp: &ControlPlane, checks: &[Check], expected: bool) -> Vec<String> {
    let runs: Vec<(Identity, &Check)> = [Identity::Impersonated, Identity::OwnToken]
        .into_iter()
        .flat_map(|identity| checks.iter().map(move |check| (identity, check)))
        .collect();
    let disagrees = |(identity, check): &(Identity, &Check)| {
        (can_i(cp, *identity, check) != expected).then(|| {
            let ns = check.namespace.unwrap_or("(all namespaces)");
            let status = if check.status { " (status)" } else { "" };
            format!(
                "{identity:?} {} {}{status} {ns}",
                check.verb, check.resource
            )
        })
    };
    runs.chunks(PARALLEL_CHECKS)
        .flat_map(|batch| {
            std::thread::scope(|scope| {
                let threads: Vec<_> = batch
                    .iter()
                    .map(|run| scope.spawn(move || disagrees(run)))
                    .collect();
                let answers: Vec<_> = threads
                    .into_iter()
                    .map(|t| t.join().expect("can-i thread"))
                    .collect();
                answers
            })
        })
        .flatten()
        .collect()
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn operator_may_do_what_the_controller_needs() {
    require_e2e_binaries();
    let wrong = disagreements(ControlPlane::installed(), MUST_ALLOW, true);
    assert!(
        wrong.is_empty(),
        "refused but needed:\n{}",
        wrong.join("\n")
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn operator_is_refused_everything_else() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    // The same question as the admin is yes: a "no" below comes from RBAC, not a broken setup.
    assert_eq!(
        cp.kubectl_ok(&["auth", "can-i", "*", "*", "--all-namespaces"])
            .trim(),
        "yes"
    );
    let wrong = disagreements(cp, MUST_DENY, false);
    assert!(
        wrong.is_empty(),
        "allowed but not needed:\n{}",
        wrong.join("\n")
    );
}

/// skiff watches its Lease by name (a field selector) and never lists Leases: the watch by name
/// is allowed, a list is not, by name or not.
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn lease_may_be_watched_only_by_its_name_and_never_listed() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    let lease = r#"{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "skiff-leader", "namespace": "skiff-system"}, "spec": {}}"#;
    cp.apply(lease);
    let leases = "/apis/coordination.k8s.io/v1/namespaces/skiff-system/leases";
    let by_name = "fieldSelector=metadata.name%3Dskiff-leader";
    let token = cp.operator_token();
    let watch = cp.raw_get(
        &format!("{leases}?watch=1&timeoutSeconds=1&{by_name}"),
        token,
    );
    assert_eq!(
        watch.status, 200,
        "watching the Lease by name: {}",
        watch.body
    );
    assert!(watch.body.contains("skiff-leader"), "{}", watch.body);
    for query in [by_name, "", "watch=1&timeoutSeconds=1"] {
        let refused = cp.raw_get(&format!("{leases}?{query}"), token);
        assert_eq!(refused.status, 403, "?{query}: {}", refused.body);
    }
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn operator_token_is_the_service_account_and_cannot_grant_itself_more() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    let who = cp.kubectl_as_operator(&[
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]);
    assert_eq!(String::from_utf8_lossy(&who.stdout), OPERATOR_USER);
    let bind = cp.kubectl_as_operator(&[
        "create",
        "clusterrolebinding",
        "grab",
        "--clusterrole=cluster-admin",
        &format!("--user={OPERATOR_USER}"),
    ]);
    assert!(
        !bind.status.success(),
        "the operator bound itself cluster-admin"
    );
}

/// `patch` on pods cannot be narrowed by RBAC to skiff's own Pods; the shipped
/// ValidatingAdmissionPolicy lets skiff's ServiceAccount change only the deletion-cost
/// annotation, and only on Pods that run as that ServiceAccount.
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn the_operator_may_patch_only_the_deletion_cost_of_its_own_pods() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    let pod = |name: &str, account: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"skiff-system"}},
                "spec":{{"serviceAccountName":"{account}","containers":[{{"name":"c","image":"example.invalid/c"}}]}}}}"#
        )
    };
    cp.apply(&pod("rbac-skiff-pod", "skiff"));
    cp.apply(&pod("rbac-other-pod", "default"));
    // A merge PATCH as skiff sends it, with its own client and the ServiceAccount's token
    // (kubectl patch reads the Pod first, which skiff may not).
    let config = load_kubeconfig_files(&[cp.operator_kubeconfig()], None).expect("kubeconfig");
    let client = Client::new(config).expect("client");
    let patch = |name: &str, body: &str| {
        let body: serde_json::Value = serde_json::from_str(body).expect("a JSON patch");
        let sent = smol::block_on(client.patch_merge::<PodMeta>(Some("skiff-system"), name, &body));
        (
            sent.is_ok(),
            sent.err().map(|e| e.to_string()).unwrap_or_default(),
        )
    };
    let cost = |value: &str| {
        format!(
            r#"{{"metadata":{{"annotations":{{"controller.kubernetes.io/pod-deletion-cost":{value}}}}}}}"#
        )
    };
    for (what, value) in [("marking", r#""1000""#), ("unmarking", "null")] {
        let (ok, stderr) = patch("rbac-skiff-pod", &cost(value));
        assert!(ok, "{what} its own Pod: {stderr}");
    }
    let refused = [
        ("rbac-other-pod", cost(r#""1000""#)),
        (
            "rbac-skiff-pod",
            r#"{"metadata":{"annotations":{"other":"x"}}}"#.to_owned(),
        ),
        (
            "rbac-skiff-pod",
            r#"{"metadata":{"labels":{"app.kubernetes.io/name":"x"}}}"#.to_owned(),
        ),
        (
            "rbac-skiff-pod",
            r#"{"spec":{"activeDeadlineSeconds":5}}"#.to_owned(),
        ),
    ];
    for (name, body) in refused {
        let (ok, stderr) = patch(name, &body);
        assert!(
            !ok && stderr.contains("skiff may change only"),
            "{name} {body}: {stderr}"
        );
    }
    cp.kubectl_ok(&[
        "delete",
        "pod",
        "rbac-skiff-pod",
        "rbac-other-pod",
        "-n",
        "skiff-system",
        "--wait=false",
    ]);
}
