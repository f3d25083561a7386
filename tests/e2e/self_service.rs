//! e2e: self-service sharing between tenants, each consenting in its own namespace, on a real
//! API server with RBAC and the shipped ValidatingAdmissionPolicy enforced.
//!
//! Why: the two consents are guarded by the real authorizer, and only real identities show
//! it. Each tenant is a ServiceAccount with a token of its own, bound in its own namespace only
//! to ConfigMap and Secret rights (what `edit` grants) and to the shipped `skiff-tenant-edit`
//! role (the test binds them: there is no controller-manager here to aggregate them into
//! `edit`). skiff runs as its own ServiceAccount with `--self-service`, tenants sharing
//! ConfigMaps and Secrets named `app-tls` (the secret-targets component's one name, and its
//! RBAC, no more); team-a may offer (the admin labelled it), team-b, team-c and team-x receive
//! or not.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use crate::support::control_plane::{ControlPlane, OPERATOR_USER, require_e2e_binaries, say};
use crate::support::kubectl::Kubectl;
use crate::support::mirror_e2e::one_replica_at_a_time;
use crate::support::skiff::{Skiff, TempDir, eventually, write_kubeconfig};
use serde_json::Value;

const STEP_TIMEOUT: Duration = Duration::from_secs(20);
const FLAGS: [&str; 7] = [
    "--source-namespaces=skiff-system",
    "--self-service",
    "--self-service-kinds=configmaps,secrets",
    "--secret-target-names=app-tls",
    "--max-copies-per-tenant-mirror=10",
    "--health-probe-bind-address=127.0.0.1:0",
    "--metrics-bind-address=0",
];

/// The ConfigMap part of `edit`, which is empty here (nothing aggregates it).
const CONFIGMAPS: &str = "e2e-tenant-configmaps";
/// The Secret part of `edit`.
const SECRETS: &str = "e2e-tenant-secrets";

fn configmaps_role(cp: &ControlPlane) {
    for (role, resource) in [(CONFIGMAPS, "configmaps"), (SECRETS, "secrets")] {
        cp.apply(&format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {role}\nrules:\n- apiGroups: [\"\"]\n  resources: [{resource}]\n  verbs: [get, list, watch, create, update, patch, delete]\n"
        ));
    }
}

fn wait_until(what: &str, check: impl FnMut() -> bool) {
    assert!(eventually(STEP_TIMEOUT, check), "timed out: {what}");
}

/// A tenant: a ServiceAccount of `namespace` with its own token, and kubectl as it.
struct Tenant {
    kubectl: Kubectl,
    _dir: TempDir,
}

impl Tenant {
    /// The ServiceAccount `name` in `namespace`, bound to `roles` (ClusterRoles) there only.
    fn new(cp: &ControlPlane, namespace: &str, name: &str, roles: &[&str]) -> Tenant {
        cp.kubectl_ok(&["create", "serviceaccount", name, "-n", namespace]);
        bind(cp, namespace, &format!("{namespace}:{name}"), roles);
        let token = cp.kubectl_ok(&["create", "token", name, "-n", namespace]);
        let dir = TempDir::new(&format!("e2e-self-service-{namespace}-{name}"));
        let path: PathBuf = write_kubeconfig(
            &dir,
            cp.url(),
            Some(cp.ca_pem().as_bytes()),
            Some(token.trim()),
            namespace,
        );
        Tenant {
            kubectl: Kubectl::new(&path, cp.dir()),
            _dir: dir,
        }
    }

    /// `kubectl apply -f -` of `manifest` as this tenant; Err(stderr) when refused.
    fn apply(&self, manifest: &str) -> Result<(), String> {
        let output = self.kubectl.run_with_stdin(&["apply", "-f", "-"], manifest);
        match output.status.success() {
            true => Ok(()),
            false => Err(String::from_utf8_lossy(&output.stderr).into_owned()),
        }
    }

    /// Applies `manifest` as this tenant, which must be refused with a message saying `says`.
    fn refused(&self, manifest: &str, says: &str) {
        let refused = self.apply(manifest).expect_err(says);
        assert!(refused.contains(says), "{refused}");
    }

    fn ok(&self, args: &[&str]) -> String {
        self.kubectl.ok(args)
    }

    /// Creates a source (`kubectl create` with `create`), labels it offered and offers it in
    /// `namespace` as Mirror `mirror`, all as this tenant.
    fn offers_own(
        &self,
        namespace: &str,
        mirror: &str,
        source: (&str, &str, &str),
        create: &[&str],
    ) {
        let (kind, resource, name) = source;
        let mut args = vec!["create"];
        args.extend(create);
        self.ok(&args);
        self.ok(&["label", resource, name, "skiff.dev/offered=true"]);
        let offered = self.apply(&offer(namespace, mirror, kind, name));
        offered.unwrap_or_else(|e| panic!("offering {kind} {name}: {e}"));
    }
}

/// Binds the ServiceAccount `sa` (`namespace:name`) to `roles` in `namespace`.
fn bind(cp: &ControlPlane, namespace: &str, sa: &str, roles: &[&str]) {
    for role in roles {
        let binding = format!("{}-{role}", sa.replace(':', "-"));
        let args = ["create", "rolebinding", &binding, "-n", namespace];
        let mut all = args.to_vec();
        all.extend(["--clusterrole", role, "--serviceaccount", sa]);
        cp.kubectl_ok(&all);
    }
}

fn acceptance(namespace: &str, name: &str, from: &str, mirror: &str) -> String {
    format!(
        "apiVersion: skiff.dev/v1alpha1\nkind: MirrorAcceptance\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  from:\n    namespace: {from}\n    mirror: {mirror}\n"
    )
}

/// As [`acceptance`], of a copy of `kind`.
fn acceptance_of(kind: &str, namespace: &str, name: &str, from: &str, mirror: &str) -> String {
    acceptance(namespace, name, from, mirror) + &format!("  kind: {kind}\n")
}

fn offer(namespace: &str, name: &str, kind: &str, source: &str) -> String {
    format!(
        "apiVersion: skiff.dev/v1alpha1\nkind: Mirror\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  source:\n    kind: {kind}\n    name: {source}\n  namespaceSelector:\n    matchLabels:\n      shares-with-a: \"yes\"\n"
    )
}

/// The Events skiff posted on the acceptance `namespace/name`, as (type, reason, message).
fn acceptance_events(
    cp: &ControlPlane,
    namespace: &str,
    name: &str,
) -> Vec<(String, String, String)> {
    events_of(cp, "MirrorAcceptance", namespace, name)
}

/// The Events skiff posted on the object `kind` `namespace/name`, as (type, reason, message).
fn events_of(
    cp: &ControlPlane,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Vec<(String, String, String)> {
    let selector = format!("involvedObject.kind={kind},involvedObject.name={name}");
    let args = [
        "get",
        "events",
        "-n",
        namespace,
        "--field-selector",
        &selector,
        "-o",
        "json",
    ];
    let list: Value = serde_json::from_str(&cp.kubectl_ok(&args)).expect("an event list");
    let text = |e: &Value, field: &str| e[field].as_str().unwrap_or_default().to_owned();
    let items = list["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter(|e| e["reportingComponent"] == "skiff")
        .map(|e| (text(e, "type"), text(e, "reason"), text(e, "message")))
        .collect()
}

/// Waits for skiff's Event of `reason` on the acceptance `namespace/name`; its message.
fn event_on(cp: &ControlPlane, namespace: &str, name: &str, reason: &str) -> String {
    let mut found = None;
    wait_until(&format!("an Event {reason} on {namespace}/{name}"), || {
        let events = acceptance_events(cp, namespace, name);
        found = events.into_iter().find(|(_, r, _)| r == reason);
        found.is_some()
    });
    found.map(|(_, _, message)| message).unwrap_or_default()
}

/// The `Served` condition of the acceptance `namespace/name`.
fn served(cp: &ControlPlane, namespace: &str, name: &str) -> Option<Value> {
    let a = cp.object("mirroracceptance", namespace, name)?;
    let conditions = a["status"]["conditions"].as_array()?.clone();
    conditions.into_iter().find(|c| c["type"] == "Served")
}

fn reason_is(cp: &ControlPlane, namespace: &str, name: &str, reason: &str) -> bool {
    served(cp, namespace, name).is_some_and(|c| c["reason"] == reason)
}

fn copy_data(cp: &ControlPlane, namespace: &str) -> Option<Value> {
    copy_data_of(cp, namespace, "settings")
}

/// The data of skiff's copy `name` in `namespace`, if there is one.
fn copy_data_of(cp: &ControlPlane, namespace: &str, name: &str) -> Option<Value> {
    let cm = cp.object("configmap", namespace, name)?;
    let managed = cm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "skiff";
    managed.then(|| cm["data"].clone())
}

/// skiff's writes the server completed since `since`, as "VERB URI".
fn skiff_writes(cp: &ControlPlane, since: SystemTime) -> Vec<String> {
    cp.audit()
        .iter()
        .filter(|e| e.user == OPERATOR_USER && e.is_write() && e.received >= since)
        .filter(|e| e.stage == "ResponseComplete" && !e.is_lease() && !e.uri.contains("/events"))
        .map(|e| format!("{} {}", e.verb, e.uri))
        .collect()
}

/// skiff's requests since `since` whose URI contains `part`, as "VERB URI".
fn skiff_asked(cp: &ControlPlane, since: SystemTime, part: &str) -> Vec<String> {
    cp.audit()
        .iter()
        .filter(|e| e.user == OPERATOR_USER && e.received >= since && e.uri.contains(part))
        .map(|e| format!("{} {}", e.verb, e.uri))
        .collect()
}

struct World {
    a: String,
    b: String,
    c: String,
    x: String,
}

fn world(cp: &ControlPlane) -> World {
    let receiver = [("shares-with-a", "yes")];
    World {
        a: cp.create_namespace("team-a", &[("skiff.dev/may-offer", "true")]),
        b: cp.create_namespace("team-b", &receiver),
        c: cp.create_namespace("team-c", &receiver),
        x: cp.create_namespace("team-x", &[]),
    }
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn tenants_share_only_where_both_consent() {
    require_e2e_binaries();
    let cp = crate::support::mirror_e2e::control_plane();
    let _turn = one_replica_at_a_time();
    let w = world(cp);
    configmaps_role(cp);
    let tenant_roles = [CONFIGMAPS, SECRETS, "skiff-tenant-edit"];
    let a = Tenant::new(cp, &w.a, "tenant", &tenant_roles);
    let b = Tenant::new(cp, &w.b, "tenant", &tenant_roles);
    let c = Tenant::new(cp, &w.c, "tenant", &tenant_roles);
    let x = Tenant::new(cp, &w.x, "tenant", &tenant_roles);

    // A tenant cannot accept in a namespace it does not own: RBAC refuses it.
    let refused = b.apply(&acceptance(&w.c, "sneaky", &w.a, "share"));
    let refused = refused.expect_err("b accepting in team-c");
    assert!(refused.contains("forbidden"), "{refused}");

    // C owns an object of the copy's name before anything is shared.
    c.ok(&["create", "configmap", "settings", "--from-literal=mine=yes"]);

    let dir = TempDir::new("e2e-self-service-skiff");
    off_by_default(cp, &w, &a, &b, &dir);
    let log = dir.0.join("skiff.log");
    let mut skiff = Skiff::start(&cp.operator_kubeconfig(), log.clone(), &FLAGS);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_until("switched on, the early offer is served", || {
            copy_data_of(cp, &w.b, "early").is_some()
        });
        offer_and_accept(cp, &w, &a, &b, &c, &x);
        share_a_secret(cp, &w, &a, &b);
        guardrails(cp, &w);
        local_names(cp, &w, &b, &c);
    }));
    let restart = outcome.and_then(|()| {
        skiff.terminate(STEP_TIMEOUT);
        let since = SystemTime::now();
        skiff = Skiff::start(&cp.operator_kubeconfig(), dir.0.join("again.log"), &FLAGS);
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            restart_writes_nothing(cp, &w, since);
            revocations(cp, &w, &a, &b);
        }))
    });
    skiff.terminate(STEP_TIMEOUT);
    if let Err(panic) = restart {
        eprintln!("skiff log:\n{}", skiff.logs());
        std::panic::resume_unwind(panic);
    }
}

/// Without `--self-service` (the default) an offer and its acceptance make nothing: the Mirror
/// says `SourceNamespaceNotAllowed`, the acceptance is not even read.
fn off_by_default(cp: &ControlPlane, w: &World, a: &Tenant, b: &Tenant, dir: &TempDir) {
    let off: Vec<&str> = FLAGS
        .iter()
        .copied()
        .filter(|f| !f.contains("self-service"))
        .collect();
    let mut skiff = Skiff::start(&cp.operator_kubeconfig(), dir.0.join("off.log"), &off);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let create = ["configmap", "early", "--from-literal=k=v"];
        a.offers_own(&w.a, "early", ("ConfigMap", "configmap", "early"), &create);
        b.apply(&acceptance(&w.b, "early", &w.a, "early"))
            .expect("b accepts");
        wait_until("the offer is refused while self-service is off", || {
            let mirror = cp.object("mirror", &w.a, "early");
            let conditions = mirror.map(|m| m["status"]["conditions"].to_string());
            conditions.is_some_and(|c| c.contains("SourceNamespaceNotAllowed"))
        });
        assert!(cp.object("configmap", &w.b, "early").is_none());
        assert!(
            served(cp, &w.b, "early").is_none(),
            "an acceptance read while off"
        );
    }));
    skiff.terminate(STEP_TIMEOUT);
    if let Err(panic) = outcome {
        eprintln!("skiff log (off):\n{}", skiff.logs());
        std::panic::resume_unwind(panic);
    }
}

fn offer_and_accept(cp: &ControlPlane, w: &World, a: &Tenant, b: &Tenant, c: &Tenant, x: &Tenant) {
    let create = [
        "configmap",
        "settings",
        "--from-literal=url=https://a.example",
    ];
    a.offers_own(
        &w.a,
        "share",
        ("ConfigMap", "configmap", "settings"),
        &create,
    );

    let started = Instant::now();
    b.apply(&acceptance(&w.b, "from-a", &w.a, "share"))
        .expect("b accepts");
    wait_until("b's copy appears", || copy_data(cp, &w.b).is_some());
    say(&format!(
        "self-service: the copy appeared in team-b {} ms after the acceptance",
        started.elapsed().as_millis()
    ));
    assert_eq!(
        copy_data(cp, &w.b).expect("copy")["url"],
        "https://a.example"
    );
    wait_until("b's acceptance says Served", || {
        reason_is(cp, &w.b, "from-a", "Served")
    });
    let served_event = event_on(cp, &w.b, "from-a", "Served");
    assert!(served_event.contains(&w.a), "{served_event}");

    // C is offered to but did not accept (and holds its own object of that name); X accepts
    // but is not offered to; B accepts a Mirror that does not exist.
    x.apply(&acceptance(&w.x, "from-a", &w.a, "share"))
        .expect("x accepts");
    b.apply(&acceptance(&w.b, "ghost", &w.a, "no-such-mirror"))
        .expect("b accepts a ghost");
    wait_until("x is told NotAvailable", || {
        reason_is(cp, &w.x, "from-a", "NotAvailable")
    });
    event_on(cp, &w.x, "from-a", "NotAvailable");
    wait_until("the ghost is told NotAvailable", || {
        reason_is(cp, &w.b, "ghost", "NotAvailable")
    });
    assert!(cp.object("configmap", &w.x, "settings").is_none());
    let mirror = cp.object("mirror", &w.a, "share").expect("the offer");
    assert_eq!(
        mirror["status"]["selected"], 1,
        "only b's acceptance counts"
    );
    let mine = cp.object("configmap", &w.c, "settings").expect("c's own");
    assert_eq!(mine["data"]["mine"], "yes");

    // C accepts too: its own object is left alone and its acceptance says why.
    c.apply(&acceptance(&w.c, "from-a", &w.a, "share"))
        .expect("c accepts");
    wait_until("c is told Conflict", || {
        reason_is(cp, &w.c, "from-a", "Conflict")
    });
    let message = served(cp, &w.c, "from-a").expect("served")["message"].to_string();
    assert!(!message.contains(&w.b), "names another tenant: {message}");
    let event = event_on(cp, &w.c, "from-a", "Conflict");
    assert!(
        !event.contains(&w.b),
        "an Event names another tenant: {event}"
    );
    wait_until("a's offer counts the conflict without naming where", || {
        let mirror = cp.object("mirror", &w.a, "share").expect("the offer");
        mirror["status"]["conflicts"] == 1
    });
    let mirror = cp.object("mirror", &w.a, "share").expect("the offer");
    let status = mirror["status"].to_string();
    assert!(!status.contains(&w.c), "a's offer names c: {status}");
    let mut conflict = None;
    wait_until("a Conflict Event on a's offer", || {
        let events = events_of(cp, "Mirror", &w.a, "share");
        conflict = events
            .into_iter()
            .find(|(_, reason, _)| reason == "Conflict");
        conflict.is_some()
    });
    let (kind, _, message) = conflict.unwrap_or_default();
    assert_eq!(kind, "Warning");
    assert!(
        message.contains("1 accepting namespace") && !message.contains(&w.c),
        "a's offer's Conflict Event names where, or does not count it: {message}"
    );
    let mine = cp.object("configmap", &w.c, "settings").expect("c's own");
    assert_eq!(mine["data"]["mine"], "yes");
    assert!(mine["metadata"]["labels"]["app.kubernetes.io/managed-by"].is_null());
}

/// A tenant shares a Secret under a name the admin allows (`app-tls`), each end as itself: the
/// offer needs `get` on it, the acceptance of kind Secret `create` on Secrets.
fn share_a_secret(cp: &ControlPlane, w: &World, a: &Tenant, b: &Tenant) {
    let create = ["secret", "generic", "app-tls", "--from-literal=tls.key=k"];
    a.offers_own(&w.a, "tls", ("Secret", "secret", "app-tls"), &create);
    b.apply(&acceptance_of("Secret", &w.b, "tls-from-a", &w.a, "tls"))
        .expect("b accepts a Secret");
    wait_until("b's Secret copy appears", || {
        let copy = cp.object("secret", &w.b, "app-tls");
        copy.is_some_and(|s| s["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "skiff")
    });
    wait_until("b's Secret acceptance says Served", || {
        reason_is(cp, &w.b, "tls-from-a", "Served")
    });
    event_on(cp, &w.b, "tls-from-a", "Served");
    // A ConfigMap acceptance of the Secret offer is not served: it accepted another kind.
    b.apply(&acceptance(&w.b, "tls-as-configmap", &w.a, "tls"))
        .expect("b accepts a ConfigMap");
    wait_until("the other kind is told NotAvailable", || {
        reason_is(cp, &w.b, "tls-as-configmap", "NotAvailable")
    });
}

/// The admin's guardrails (the admin writes these: the policy keeps a tenant from offering what
/// it may not read): a tenant Secret outside `--secret-target-names` is never read or copied,
/// even to an allowed target name; a kind not in `--self-service-kinds` is refused; one offer
/// accepted by more namespaces than `--max-copies-per-tenant-mirror` (10) serves 10 of them.
fn guardrails(cp: &ControlPlane, w: &World) {
    let since = SystemTime::now();
    cp.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        &w.a,
        "--from-literal=k=v",
    ]);
    cp.kubectl_ok(&[
        "label",
        "secret",
        "creds",
        "-n",
        &w.a,
        "skiff.dev/offered=true",
    ]);
    let to_allowed_name = "  targetName: app-tls\n";
    cp.apply(&(offer(&w.a, "secret-share", "Secret", "creds") + to_allowed_name));
    cp.apply(&acceptance_of(
        "Secret",
        &w.c,
        "secret-from-a",
        &w.a,
        "secret-share",
    ));
    wait_until("the Secret offer is refused", || {
        let mirror = cp.object("mirror", &w.a, "secret-share");
        let conditions = mirror.map(|m| m["status"]["conditions"].clone());
        conditions.is_some_and(|c| c.to_string().contains("SecretTargetNotAllowed"))
    });
    wait_until("its acceptance says KindNotAllowed", || {
        reason_is(cp, &w.c, "secret-from-a", "KindNotAllowed")
    });
    event_on(cp, &w.c, "secret-from-a", "KindNotAllowed");
    assert!(cp.object("secret", &w.c, "app-tls").is_none());
    assert!(cp.object("secret", &w.c, "creds").is_none());
    let read = skiff_asked(cp, since, "creds");
    assert!(
        read.is_empty(),
        "skiff asked for a Secret not allowed:\n{}",
        read.join("\n")
    );

    cp.apply(&offer(&w.a, "limits", "LimitRange", "limits"));
    cp.apply(&acceptance_of(
        "LimitRange",
        &w.b,
        "limits-from-a",
        &w.a,
        "limits",
    ));
    wait_until("a kind tenants may not share is refused", || {
        reason_is(cp, &w.b, "limits-from-a", "KindNotAllowed")
    });
    let mirror = cp.object("mirror", &w.a, "limits").expect("the offer");
    assert!(
        mirror["status"].to_string().contains("KindNotAllowed"),
        "{mirror}"
    );

    let many = cp.create_namespaces("many", &[("shares-with-a", "yes")], 12);
    let acceptances: Vec<String> = many
        .iter()
        .map(|ns| acceptance(ns, "from-a", &w.a, "share"))
        .collect();
    cp.apply(&acceptances.join("---\n"));
    let copies = || many.iter().filter(|ns| copy_data(cp, ns).is_some()).count();
    wait_until("the offer serves up to its cap", || {
        let mirror = cp.object("mirror", &w.a, "share").expect("the offer");
        mirror["status"]["synced"] == 10 && copies() == 9
    });
    let pending = many
        .iter()
        .filter(|ns| reason_is(cp, ns, "from-a", "Pending"))
        .count();
    assert_eq!(pending, 3, "acceptances beyond the cap are told Pending");
    assert!(copy_data(cp, &w.b).is_some(), "b's copy kept its place");
    for ns in &many {
        cp.kubectl_ok(&["delete", "mirroracceptance", "from-a", "-n", ns]);
    }
    wait_until("the mass of copies goes with its acceptances", || {
        copies() == 0
    });
    wait_until("c is told Conflict again", || {
        reason_is(cp, &w.c, "from-a", "Conflict")
    });
}

/// C accepts under a local name (`spec.targetName`): its copy takes that name, its own object
/// of the usual name stays; a new name moves the copy; a name held by an object that is not
/// skiff's leaves it alone (Conflict); two acceptances of one offer in one namespace under
/// different names: the second by name is not served; a Secret under a name the admin does
/// not allow is neither read nor written; a name that is not an object name is refused.
fn local_names(cp: &ControlPlane, w: &World, b: &Tenant, c: &Tenant) {
    let named = |name: &str| acceptance(&w.c, "from-a", &w.a, "share") + &target_name(name);
    let started = Instant::now();
    c.apply(&named("a-settings"))
        .expect("c accepts as a-settings");
    wait_until("c's copy appears under its local name", || {
        copy_data_of(cp, &w.c, "a-settings").is_some()
    });
    say(&format!(
        "self-service: the renamed copy appeared in team-c {} ms after the acceptance",
        started.elapsed().as_millis()
    ));
    wait_until("c is told Served", || {
        reason_is(cp, &w.c, "from-a", "Served")
    });
    let message = served(cp, &w.c, "from-a").expect("served")["message"].to_string();
    assert!(message.contains("a-settings"), "{message}");
    let mine = cp.object("configmap", &w.c, "settings").expect("c's own");
    assert_eq!(mine["data"]["mine"], "yes");
    assert!(mine["metadata"]["labels"]["app.kubernetes.io/managed-by"].is_null());

    c.apply(&named("a-settings-2")).expect("c renames");
    wait_until("the copy moves to the new name", || {
        copy_data_of(cp, &w.c, "a-settings-2").is_some()
            && cp.object("configmap", &w.c, "a-settings").is_none()
    });

    c.ok(&["create", "configmap", "taken", "--from-literal=mine=yes"]);
    c.apply(&named("taken")).expect("c asks a name it holds");
    wait_until("c is told Conflict for its local name", || {
        reason_is(cp, &w.c, "from-a", "Conflict")
    });
    let message = served(cp, &w.c, "from-a").expect("served")["message"].to_string();
    assert!(
        message.contains("taken") && !message.contains(&w.b),
        "{message}"
    );
    wait_until("the old copy goes", || {
        cp.object("configmap", &w.c, "a-settings-2").is_none()
    });
    let taken = cp.object("configmap", &w.c, "taken").expect("c's own");
    assert_eq!(taken["data"], serde_json::json!({"mine": "yes"}));
    assert!(taken["metadata"]["labels"]["app.kubernetes.io/managed-by"].is_null());

    let second = acceptance(&w.b, "zz-second", &w.a, "share") + &target_name("other");
    b.apply(&second).expect("b accepts twice");
    wait_until("the second acceptance in b is told Conflict", || {
        reason_is(cp, &w.b, "zz-second", "Conflict")
    });
    let message = served(cp, &w.b, "zz-second").expect("served")["message"].to_string();
    assert!(message.contains("from-a"), "{message}");
    assert!(cp.object("configmap", &w.b, "other").is_none());
    assert!(reason_is(cp, &w.b, "from-a", "Served"));
    b.ok(&["delete", "mirroracceptance", "zz-second"]);

    let since = SystemTime::now();
    let secret = acceptance_of("Secret", &w.c, "tls-local", &w.a, "tls");
    c.apply(&(secret + &target_name("db-creds")))
        .expect("c accepts a Secret under a name not allowed");
    wait_until("a Secret under a name not allowed is refused", || {
        reason_is(cp, &w.c, "tls-local", "KindNotAllowed")
    });
    assert!(cp.object("secret", &w.c, "db-creds").is_none());
    let asked = skiff_asked(cp, since, "db-creds");
    assert!(asked.is_empty(), "skiff asked:\n{}", asked.join("\n"));

    c.refused(&named("Not_A_Name"), "DNS-1123 subdomain");
    c.apply(&named("a-settings"))
        .expect("c accepts as a-settings again");
    wait_until("c's copy is back under its local name", || {
        copy_data_of(cp, &w.c, "a-settings").is_some() && reason_is(cp, &w.c, "from-a", "Served")
    });
}

fn target_name(name: &str) -> String {
    format!("  targetName: {name}\n")
}

fn restart_writes_nothing(cp: &ControlPlane, w: &World, since: SystemTime) {
    wait_until(
        "the new skiff still serves b, and c under its local name",
        || {
            reason_is(cp, &w.b, "from-a", "Served")
                && copy_data(cp, &w.b).is_some()
                && copy_data_of(cp, &w.c, "a-settings").is_some()
        },
    );
    std::thread::sleep(Duration::from_secs(3));
    let writes = skiff_writes(cp, since);
    assert!(writes.is_empty(), "a restart wrote:\n{}", writes.join("\n"));
    let served = acceptance_events(cp, &w.b, "from-a");
    assert_eq!(
        served.len(),
        1,
        "b's acceptance has one Served Event, posted by the first skiff, none by the restart: {served:?}"
    );
    assert!(cp.object("secret", &w.b, "app-tls").is_some());
}

fn revocations(cp: &ControlPlane, w: &World, a: &Tenant, b: &Tenant) {
    let started = Instant::now();
    b.ok(&["delete", "mirroracceptance", "from-a"]);
    wait_until("b's copy goes with b's acceptance", || {
        cp.object("configmap", &w.b, "settings").is_none()
    });
    say(&format!(
        "self-service: b's copy went {} ms after b revoked",
        started.elapsed().as_millis()
    ));

    b.apply(&acceptance(&w.b, "from-a", &w.a, "share"))
        .expect("b accepts again");
    wait_until("b's copy is back", || copy_data(cp, &w.b).is_some());
    let started = Instant::now();
    a.ok(&["delete", "mirror", "share"]);
    wait_until("b's copy, and c's renamed one, go with a's offer", || {
        cp.object("configmap", &w.b, "settings").is_none()
            && cp.object("configmap", &w.c, "a-settings").is_none()
    });
    say(&format!(
        "self-service: b's copy went {} ms after a revoked",
        started.elapsed().as_millis()
    ));
    wait_until("b is told NotAvailable", || {
        reason_is(cp, &w.b, "from-a", "NotAvailable")
    });
    let mine = cp.object("configmap", &w.c, "settings").expect("c's own");
    assert_eq!(mine["data"]["mine"], "yes");
}

/// skiff's flags for the kit kind share: NetworkPolicies enabled and shared, no Secrets.
const KIT_FLAGS: [&str; 7] = [
    "--source-namespaces=skiff-system",
    "--self-service",
    "--self-service-kinds=configmaps,networkpolicies.networking.k8s.io",
    "--kinds=networkpolicies.networking.k8s.io",
    "--binding-namespace-label=skiff.dev/kit",
    "--health-probe-bind-address=127.0.0.1:0",
    "--metrics-bind-address=0",
];

/// The NetworkPolicy part of `edit`.
const NETWORK_POLICIES: &str = "e2e-tenant-networkpolicies";

/// A kit kind that `--kinds` enables (with the kinds component's RBAC) and
/// `--self-service-kinds` names is shared like a ConfigMap: A offers its NetworkPolicy, B, who
/// may create NetworkPolicies, accepts one and gets the copy; a tenant of B's namespace who may
/// not create NetworkPolicies cannot accept one (the admission policy).
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn tenants_share_a_kit_kind_the_admin_enables() {
    require_e2e_binaries();
    let cp = crate::support::mirror_e2e::control_plane().install_overlay("kinds");
    let _turn = one_replica_at_a_time();
    cp.apply(&format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {NETWORK_POLICIES}\nrules:\n- apiGroups: [networking.k8s.io]\n  resources: [networkpolicies]\n  verbs: [get, list, watch, create, update, patch, delete]\n"
    ));
    let src = cp.create_namespace("kit-a", &[("skiff.dev/may-offer", "true")]);
    // Kit copies go only where an admin labelled for them (the policy skiff-kit-namespaces).
    let dst = cp.create_namespace("kit-b", &[("shares-with-a", "yes"), ("skiff.dev/kit", "b")]);
    let roles = [NETWORK_POLICIES, "skiff-tenant-edit"];
    let a = Tenant::new(cp, &src, "tenant", &roles);
    let b = Tenant::new(cp, &dst, "tenant", &roles);
    let limited = Tenant::new(cp, &dst, "limited", &["skiff-tenant-edit"]);

    let accept = acceptance_of("NetworkPolicy", &dst, "policy-from-a", &src, "policy");
    limited.refused(&accept, "lets skiff create a NetworkPolicy");
    let policy = format!(
        "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: deny-ingress\n  namespace: {src}\n  labels:\n    skiff.dev/offered: \"true\"\nspec:\n  podSelector: {{}}\n  policyTypes: [Ingress]\n"
    );
    a.apply(&policy).expect("a creates its NetworkPolicy");
    // A kit kind's offer selects only namespaces an admin labelled for kit copies.
    let kit_offer = offer(&src, "policy", "NetworkPolicy", "deny-ingress").replace(
        "      shares-with-a: \"yes\"\n",
        "      shares-with-a: \"yes\"\n      skiff.dev/kit: b\n",
    );
    a.apply(&kit_offer).expect("a offers it");
    b.apply(&accept).expect("b accepts a NetworkPolicy");

    let dir = TempDir::new("e2e-self-service-kit");
    let mut skiff = Skiff::start(
        &cp.operator_kubeconfig(),
        dir.0.join("skiff.log"),
        &KIT_FLAGS,
    );
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_until("b's NetworkPolicy copy appears", || {
            let copy = cp.object("networkpolicy", &dst, "deny-ingress");
            copy.is_some_and(|p| {
                p["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "skiff"
                    && p["spec"]["policyTypes"][0] == "Ingress"
            })
        });
        wait_until("b's acceptance says Served", || {
            reason_is(cp, &dst, "policy-from-a", "Served")
        });
    }));
    skiff.terminate(STEP_TIMEOUT);
    if let Err(panic) = outcome {
        eprintln!("skiff log (kit):\n{}", skiff.logs());
        std::panic::resume_unwind(panic);
    }
}

/// The shipped ValidatingAdmissionPolicy: a tenant who may create Mirrors and acceptances but
/// may not read the source cannot offer it, and one who may not create ConfigMaps (or, for an
/// acceptance of a Secret, Secrets) in a namespace cannot accept there; the same requests pass
/// for a tenant who may.
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn no_tenant_gets_skiff_to_read_or_write_what_it_could_not() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    configmaps_role(cp);
    let src = cp.create_namespace("vap-a", &[("skiff.dev/may-offer", "true")]);
    let dst = cp.create_namespace("vap-b", &[]);
    cp.kubectl_ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        &src,
        "--from-literal=k=v",
    ]);
    let limited = Tenant::new(cp, &src, "limited", &["skiff-tenant-edit"]);
    bind(cp, &dst, &format!("{src}:limited"), &["skiff-tenant-edit"]);
    let full = Tenant::new(cp, &src, "full", &[CONFIGMAPS, "skiff-tenant-edit"]);
    bind(
        cp,
        &dst,
        &format!("{src}:full"),
        &[CONFIGMAPS, "skiff-tenant-edit"],
    );

    let offer_manifest = offer(&src, "share", "ConfigMap", "settings");
    limited.refused(&offer_manifest, "may offer only what its author may read");
    let accept_manifest = acceptance(&dst, "from-a", &src, "share");
    limited.refused(&accept_manifest, "lets skiff create a ConfigMap");
    assert!(cp.object("mirror", &src, "share").is_none());
    assert!(cp.object("mirroracceptance", &dst, "from-a").is_none());
    // Who may create ConfigMaps but not Secrets cannot accept a Secret.
    let secret = acceptance_of("Secret", &dst, "secret-from-a", &src, "share");
    full.refused(&secret, "lets skiff create a Secret");

    full.apply(&offer_manifest).expect("an offer with get");
    full.apply(&accept_manifest)
        .expect("an acceptance with create");
    // A change that leaves the spec alone is not checked (skiff's own finalizer and status
    // writes are such changes); a change of the spec is.
    limited.ok(&["label", "mirror", "share", "seen=yes"]);
    let other = offer(&src, "share", "ConfigMap", "other");
    limited.refused(&other, "may offer only what its author may read");
}

/// `kubectl explain` describes the acceptance from the CRD's schema, and its short name works.
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn kubectl_explains_the_acceptance() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    // `installed()` waited until the CRDs were Established; that comes before the API server
    // publishes the kind's OpenAPI schema, which `kubectl explain` reads: as `kubectl explain`
    // right after an install, try until it does.
    let published = eventually(Duration::from_secs(60), || {
        let explain = ["explain", "mirroracceptances.spec.from"];
        cp.kubectl(&explain).status.success()
    });
    assert!(published, "kubectl explain never found mirroracceptances");
    let explained = cp.kubectl_ok(&["explain", "mirroracceptances.spec.from"]);
    for words in ["The offering Mirror", "namespace", "mirror"] {
        assert!(explained.contains(words), "{words:?} missing:\n{explained}");
    }
    let named = cp.kubectl_ok(&["explain", "mirroracceptances.spec.targetName"]);
    for words in ["moves", "--secret-target-names", "KindNotAllowed"] {
        assert!(named.contains(words), "{words:?} missing:\n{named}");
    }
    let reasons = cp.kubectl_ok(&["explain", "mirroracceptances.status.conditions.reason"]);
    assert!(reasons.contains("NotAvailable"), "{reasons}");
    cp.kubectl_ok(&["get", "mirracc", "--all-namespaces"]);
}

/// A tenant publishes its CA's certificate as a ConfigMap, and leaves its copies behind when it
/// withdraws its offer, each only when the admin allows it: `--self-service-projections`
/// (tenants may share no Secret here) and `--self-service-orphan`. Until then the offer is
/// refused, naming the flag, and nothing is written.
#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn tenants_publish_certificates_and_leave_copies_only_when_the_admin_allows() {
    require_e2e_binaries();
    let cp = crate::support::mirror_e2e::control_plane();
    let _turn = one_replica_at_a_time();
    let w = world(cp);
    configmaps_role(cp);
    let roles = [CONFIGMAPS, SECRETS, "skiff-tenant-edit"];
    let a = Tenant::new(cp, &w.a, "tenant", &roles);
    let b = Tenant::new(cp, &w.b, "tenant", &roles);
    let pem = crate::support::pem::issued();
    let b64 = |text: &str| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(text)
    };
    let secret = serde_json::json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": "app-tls", "namespace": w.a, "labels": {"skiff.dev/offered": "true"}},
        "data": {"ca.crt": b64(&pem.ca), "tls.crt": b64(&pem.chain), "tls.key": b64(&pem.key)}});
    a.apply(&secret.to_string()).expect("a's CA Secret");
    let publish = "  source:\n    kind: Secret\n    name: app-tls\n    keys: [ca.crt]\n  target:\n    kind: ConfigMap\n  targetName: a-ca\n  deletionPolicy: Orphan\n";
    let offer = offer(&w.a, "certs", "Secret", "app-tls");
    let offer = offer.replace("  source:\n    kind: Secret\n    name: app-tls\n", publish);
    a.apply(&offer).expect("a offers its CA");
    b.apply(&acceptance(&w.b, "ca-from-a", &w.a, "certs"))
        .expect("b accepts a ConfigMap");
    let condition = || {
        let mirror = cp.object("mirror", &w.a, "certs");
        mirror
            .map(|m| m["status"]["conditions"].to_string())
            .unwrap_or_default()
    };
    let dir = TempDir::new("e2e-self-service-publish");
    let only = |extra: &[&'static str]| -> Vec<&'static str> { [&FLAGS[..], extra].concat() };
    let phases: [(&str, Vec<&str>, &str); 2] = [
        ("no projection", only(&[]), "--self-service-projections"),
        (
            "no orphan",
            only(&["--self-service-projections=secrets-as-configmaps"]),
            "OrphanNotAllowed",
        ),
    ];
    for (phase, flags, says) in phases {
        running(cp, &dir, phase, &flags, || {
            wait_until(&format!("{phase}: the offer refused"), || {
                condition().contains(says)
            });
            wait_until(&format!("{phase}: its acceptance told"), || {
                reason_is(cp, &w.b, "ca-from-a", "KindNotAllowed")
            });
            assert!(
                cp.object("configmap", &w.b, "a-ca").is_none(),
                "{phase}: written"
            );
        });
    }
    let both = only(&[
        "--self-service-projections=secrets-as-configmaps",
        "--self-service-orphan",
    ]);
    running(cp, &dir, "allowed", &both, || {
        wait_until("b holds a's CA certificate, and only it", || {
            copy_data_of(cp, &w.b, "a-ca") == Some(serde_json::json!({"ca.crt": pem.ca}))
        });
        wait_until("b's acceptance Served", || {
            reason_is(cp, &w.b, "ca-from-a", "Served")
        });
        a.ok(&["delete", "mirror", "certs", "--wait=false"]);
        wait_until("the offer gone once its copy is orphaned", || {
            cp.object("mirror", &w.a, "certs").is_none()
        });
        let copy = cp
            .object("configmap", &w.b, "a-ca")
            .expect("the copy stays");
        assert_eq!(copy["data"]["ca.crt"], pem.ca.as_str());
        let labels = copy["metadata"]["labels"].to_string();
        let annotations = copy["metadata"]["annotations"].to_string();
        assert!(
            !labels.contains("skiff") && !annotations.contains("skiff.dev/"),
            "{copy:#}"
        );
    });
}

/// Runs skiff with `flags` while `test` runs; its log is printed if `test` fails.
fn running(cp: &ControlPlane, dir: &TempDir, phase: &str, flags: &[&str], test: impl FnOnce()) {
    let log = dir.0.join(format!("{}.log", phase.replace(' ', "-")));
    let mut skiff = Skiff::start(&cp.operator_kubeconfig(), log, flags);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(test));
    skiff.terminate(STEP_TIMEOUT);
    if let Err(panic) = outcome {
        eprintln!("skiff log ({phase}):\n{}", skiff.logs());
        std::panic::resume_unwind(panic);
    }
}
