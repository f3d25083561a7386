//! e2e: one Mirror on a hub, its copies in every member cluster it selects: a hub and two
//! members, each a real control plane, each skiff run as a process with its own identity.
//!
//! Why: what crosses clusters must be shown on real API servers, with each side's own
//! credentials: the hub's skiff writes only on the hub, a member's skiff reads only its own
//! share of the hub and writes only in its own cluster, and a member copies only what its own
//! admin allows. Each test pins one property: the fan-out with its status by cluster, what a
//! member's limits refuse, a Secret travelling as a carrier, withdrawal by tombstone only, and
//! a hub cut off that changes nothing in its members.

use std::time::{Duration, Instant};

use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, require_e2e_binaries};
use crate::support::fault_proxy::{FaultProxy, kubeconfig_through};
use crate::support::fleet::{Admission, Fleet};
use crate::support::mirror_e2e::{Replica, has_event, one_replica_at_a_time};
use crate::support::scrape::{scrape, sum_samples};
use serde_json::{Value, json};

/// The hub's name as its members know it (`--hub-name`).
const HUB: &str = "hub-eu";
/// How long a member is given to reflect a hub change: a liveness bound, about 10 times what a
/// change takes on a loaded machine (the speed goals are in `benches/fleet.rs`).
const CONVERGE: Duration = Duration::from_secs(60);

/// A member's skiff, reading its hub with the Secret its admin was handed.
fn member_skiff(member: &ControlPlane, admission: &Admission, extra: &[&str]) -> Replica {
    let hub = format!("--hub-kubeconfig={}", admission.kubeconfig().display());
    let mut flags = vec![hub.as_str(), "--hub-name=hub-eu"];
    flags.extend_from_slice(extra);
    Replica::start_with(member, &admission.cluster, &flags)
}

/// The namespaces `team-a` (labelled `team=a`) and `team-b` in `member`.
fn team_namespaces(member: &ControlPlane) {
    for (ns, labels) in [("team-a", json!({"team": "a"})), ("team-b", json!({}))] {
        member.apply(
            &json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": ns, "labels": labels}})
            .to_string(),
        );
    }
}

/// A fleet Mirror `name` on the hub of the source `kind`/`source`, selecting `clusters` and,
/// inside each, `team=a`.
fn fleet_mirror(hub: &ControlPlane, name: &str, (kind, source): (&str, &str), clusters: Value) {
    hub.apply(
        &json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
        "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE},
        "spec": {"source": {"kind": kind, "name": source},
                 "clusterSelector": clusters,
                 "namespaceSelector": {"matchLabels": {"team": "a"}}}})
        .to_string(),
    );
}

fn configmap(hub: &ControlPlane, name: &str, value: &str) {
    hub.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE},
        "data": {"ca.crt": value}})
        .to_string(),
    );
}

/// The copy `kind`/`name` in `member`'s namespace `ns`, if skiff holds one there for the hub.
fn copy(member: &ControlPlane, kind: &str, ns: &str, name: &str) -> Option<Value> {
    let copy = member.object(kind, ns, name)?;
    (copy["metadata"]["labels"]["skiff.dev/hub"] == HUB).then_some(copy)
}

fn holds(member: &ControlPlane, name: &str, value: &str) -> bool {
    copy(member, "configmap", "team-a", name).is_some_and(|c| c["data"]["ca.crt"] == value)
}

/// The hub Mirror's status.
fn status(hub: &ControlPlane, name: &str) -> Value {
    let mirror = hub.object("mirror", OPERATOR_NAMESPACE, name);
    mirror.map_or(Value::Null, |m| m["status"].clone())
}

fn ready(hub: &ControlPlane, name: &str) -> (Value, Value) {
    let status = status(hub, name);
    let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
    let ready = conditions
        .into_iter()
        .find(|c| c["type"] == "Ready")
        .unwrap_or_default();
    (ready["reason"].clone(), status["clusters"].clone())
}

fn until(what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(
            started.elapsed() < CONVERGE,
            "not within {CONVERGE:?}: {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Runs `test` with a hub skiff and a skiff in each member (with `extra` flags each); prints
/// every log if it fails.
fn with_fleet(fleet: &Fleet, members: &[(&Admission, &[&str])], test: impl FnOnce(&[Replica])) {
    // One hub skiff at a time: the tests of this suite share the hub and its leader Lease.
    let _turn = one_replica_at_a_time();
    let hub = Replica::start_with(fleet.hub, "hub", &["--fleet-hub"]);
    let skiffs: Vec<Replica> = (fleet.members.iter().zip(members))
        .map(|(cp, (admission, extra))| member_skiff(cp, admission, extra))
        .collect();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(&skiffs)));
    if outcome.is_err() {
        let shown = fleet
            .hub
            .kubectl(&["get", "mirrors,placements", "-A", "-o", "yaml"]);
        eprintln!("on the hub:\n{}", String::from_utf8_lossy(&shown.stdout));
        eprintln!("hub skiff log:\n{}", hub.skiff.logs());
        for skiff in &skiffs {
            eprintln!("member skiff log:\n{}", skiff.skiff.logs());
        }
    }
    for skiff in skiffs {
        skiff.stop();
    }
    hub.stop();
    outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn one_hub_mirror_reaches_every_member_it_selects_and_the_hub_counts_them() {
    require_e2e_binaries();
    let fleet = Fleet::start(2);
    let (west, east) = (
        fleet.admit("west-1", &[("region", "west"), ("test", "reach")]),
        fleet.admit("east-1", &[("region", "east"), ("test", "reach")]),
    );
    for member in &fleet.members {
        team_namespaces(member);
    }
    configmap(fleet.hub, "app-ca", "v1");
    // Each test selects its own clusters: the tests of this suite share the hub.
    let reach = json!({"matchLabels": {"test": "reach"}});
    fleet_mirror(fleet.hub, "app-ca", ("ConfigMap", "app-ca"), reach);
    let none: &[&str] = &[];
    with_fleet(&fleet, &[(&west, none), (&east, none)], |_| {
        let (w, e) = (&fleet.members[0], &fleet.members[1]);
        until("a copy in team-a of both members", || {
            holds(w, "app-ca", "v1") && holds(e, "app-ca", "v1")
        });
        assert!(
            copy(w, "configmap", "team-b", "app-ca").is_none(),
            "team-b is not selected"
        );
        until("both clusters current on the hub", || {
            let (reason, clusters) = ready(fleet.hub, "app-ca");
            reason == "Synced" && clusters["current"] == 2
        });
        // What travelled is inert: a Placement, no live ConfigMap in the member's namespace.
        let placement = fleet
            .hub
            .object("placement", "west-1", "skiff-system.app-ca");
        let placement = placement.expect("a Placement in west-1's namespace on the hub");
        assert_eq!(placement["spec"]["content"]["data"]["ca.crt"], "v1");
        assert_eq!(
            placement["status"]["observedHash"],
            placement["spec"]["hash"]
        );
        assert!(fleet.hub.object("configmap", "west-1", "app-ca").is_none());
        let shown = fleet
            .hub
            .kubectl_ok(&["get", "mirror", "app-ca", "-n", OPERATOR_NAMESPACE]);
        assert!(
            shown.contains("CURRENT") && shown.contains("SILENT"),
            "{shown}"
        );

        let edited = Instant::now();
        configmap(fleet.hub, "app-ca", "v2");
        until("the edit in both members", || {
            holds(w, "app-ca", "v2") && holds(e, "app-ca", "v2")
        });
        eprintln!(
            "fleet: a hub edit reached both members in {:?}",
            edited.elapsed()
        );

        // The Mirror no longer selects east: its Placement is withdrawn by tombstone, east
        // deletes its copy and acknowledges, the hub deletes the Placement; west keeps its.
        fleet_mirror(
            fleet.hub,
            "app-ca",
            ("ConfigMap", "app-ca"),
            json!({"matchLabels": {"region": "west"}}),
        );
        until("east's copy withdrawn and its Placement gone", || {
            copy(e, "configmap", "team-a", "app-ca").is_none()
                && fleet
                    .hub
                    .object("placement", "east-1", "skiff-system.app-ca")
                    .is_none()
        });
        assert!(holds(w, "app-ca", "v2"), "west keeps its copy");
        until("one cluster selected and current", || {
            let (reason, clusters) = ready(fleet.hub, "app-ca");
            reason == "Synced"
                && clusters["current"] == 1
                && status(fleet.hub, "app-ca")["selected"] == 1
        });
    });
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_member_copies_only_the_kinds_its_own_admin_allows_and_a_secret_travels_as_a_carrier() {
    require_e2e_binaries();
    let fleet = Fleet::start(2);
    let limits = [("test", "limits")];
    let (plain, open) = (
        fleet.admit("plain-1", &limits),
        fleet.admit("open-1", &limits),
    );
    for member in &fleet.members {
        team_namespaces(member);
    }
    fleet.hub.apply(&json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "app-tls", "namespace": OPERATOR_NAMESPACE, "labels": {"source-only": "yes"}},
        "type": "kubernetes.io/tls", "data": {"tls.crt": "Y2VydA==", "tls.key": "a2V5"}}).to_string());
    let limits = json!({"matchLabels": {"test": "limits"}});
    fleet_mirror(fleet.hub, "app-tls", ("Secret", "app-tls"), limits);
    let takes_secrets: &[&str] = &["--hub-kinds=configmaps,secrets"];
    let configmaps_only: &[&str] = &[];
    with_fleet(
        &fleet,
        &[(&plain, configmaps_only), (&open, takes_secrets)],
        |_| {
            let (plain_cp, open_cp) = (&fleet.members[0], &fleet.members[1]);
            until(
                "the Secret copied where its admin takes Secrets from the hub",
                || {
                    copy(open_cp, "secret", "team-a", "app-tls").is_some_and(|s| {
                        s["type"] == "kubernetes.io/tls" && s["data"]["tls.key"] == "a2V5"
                    })
                },
            );
            // On the hub the data travelled as a carrier: the member's own, of a type no controller
            // acts on, with none of the source's labels.
            let carrier = fleet
                .hub
                .object("secret", "open-1", "app-tls")
                .expect("a carrier");
            assert_eq!(carrier["type"], "skiff.dev/placed");
            assert!(
                carrier["metadata"]["labels"].get("source-only").is_none(),
                "{carrier}"
            );
            let placement = fleet
                .hub
                .object("placement", "open-1", "skiff-system.app-tls");
            let placement = placement.expect("a Placement");
            assert!(
                placement["spec"].get("content").is_none(),
                "no Secret data in a Placement"
            );
            // The member whose admin takes only ConfigMaps refuses it, and the hub names it.
            until("plain-1 refuses and the hub counts it failing", || {
                let (reason, clusters) = ready(fleet.hub, "app-tls");
                reason == "ClustersFailing" && clusters["failing"] == 1
            });
            let (_, clusters) = ready(fleet.hub, "app-tls");
            assert_eq!(clusters["current"], 1, "{clusters}");
            let refused = fleet
                .hub
                .object("placement", "plain-1", "skiff-system.app-tls");
            let refused = refused.expect("its Placement");
            let conditions = refused["status"]["conditions"].to_string();
            assert!(
                conditions.contains("KindNotAllowed") && conditions.contains("--hub-kinds"),
                "{conditions}"
            );
            assert!(copy(plain_cp, "secret", "team-a", "app-tls").is_none());

            // A second fleet Mirror whose copy takes the same name meets the first one's
            // carrier: a conflict on the hub, never an overwrite.
            fleet.hub.apply(
                &json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "other-tls", "namespace": OPERATOR_NAMESPACE},
                "data": {"tls.key": "b3RoZXI="}})
                .to_string(),
            );
            fleet.hub.apply(
                &json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
                "metadata": {"name": "other-tls", "namespace": OPERATOR_NAMESPACE},
                "spec": {"source": {"kind": "Secret", "name": "other-tls"},
                         "targetName": "app-tls",
                         "clusterSelector": {"matchLabels": {"test": "limits"}},
                         "namespaceSelector": {"matchLabels": {"team": "a"}}}})
                .to_string(),
            );
            until("the second Mirror reports the conflict", || {
                let (reason, _) = ready(fleet.hub, "other-tls");
                reason == "Conflict" && status(fleet.hub, "other-tls")["conflicts"] == 2
            });
            let carrier = fleet.hub.object("secret", "open-1", "app-tls");
            let carrier = carrier.expect("the first Mirror's carrier");
            assert_eq!(carrier["data"]["tls.key"], "a2V5", "carrier kept");
            assert_eq!(
                carrier["metadata"]["labels"]["skiff.dev/mirror-name"], "app-tls",
                "{carrier}"
            );
        },
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_hub_cut_off_changes_nothing_in_its_member_and_the_member_resumes_without_a_relist() {
    // The hub cannot hear a member it is cut off from either: it shows the member silent (its
    // status, a Warning Event and a metric naming it) and well again once it reports.
    require_e2e_binaries();
    let fleet = Fleet::start(1);
    let cut = fleet.admit("cut-1", &[("test", "cut")]);
    let member = &fleet.members[0];
    team_namespaces(member);
    configmap(fleet.hub, "bundle", "v1");
    let only_cut = json!({"matchLabels": {"test": "cut"}});
    fleet_mirror(fleet.hub, "bundle", ("ConfigMap", "bundle"), only_cut);
    // The member reaches its hub through a proxy that can partition them.
    let proxy = FaultProxy::start(fleet.hub.url().trim_start_matches("https://"));
    let through = cut.dir.join("kubeconfig-proxied");
    kubeconfig_through(&cut.kubeconfig(), &proxy.address(), &through);
    let proxied = Admission {
        cluster: cut.cluster.clone(),
        token: cut.token.clone(),
        dir: cut.dir.clone(),
    };
    let _turn = one_replica_at_a_time();
    // Silent after 8 s without a heartbeat, renewed every 2 s: the cut shows within the test.
    let hub_flags = ["--fleet-hub", "--member-silence-after=8s"];
    let hub = Replica::start_with(fleet.hub, "hub", &hub_flags);
    let flag = format!("--hub-kubeconfig={}", through.display());
    let member_flags = [
        flag.as_str(),
        "--hub-name=hub-eu",
        "--hub-heartbeat-period=2s",
    ];
    let skiff = Replica::start_with(member, "cut-1", &member_flags);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        until("the copy", || holds(member, "bundle", "v1"));
        until("the member current on the hub", || {
            let (reason, clusters) = ready(fleet.hub, "bundle");
            reason == "Synced" && clusters["current"] == 1
        });
        let heard = "skiff_fleet_member_heartbeat_timestamp_seconds";
        let heard_at = || sum_samples(&scrape(hub.metrics_port), heard, &[("cluster", "cut-1")]);
        assert!(
            heard_at() > 0.0,
            "the hub's metric names the member it heard"
        );
        let before = member
            .object("configmap", "team-a", "bundle")
            .expect("the copy");
        let writes = skiff.writes();
        let relists_before = member_relists(fleet.hub, &proxied.cluster);
        proxy.partition();
        let cut_at = Instant::now();
        configmap(fleet.hub, "bundle", "v2");
        until("the hub shows the member silent, naming it", || {
            let (reason, clusters) = ready(fleet.hub, "bundle");
            reason == "ClustersSilent" && clusters["silent"] == 1
        });
        let said = "no heartbeat lately from cut-1";
        assert!(has_event(
            fleet.hub,
            "bundle",
            "Warning",
            "ClustersSilent",
            said
        ));
        let last_heard = heard_at();
        // Longer than the watch idle timeout and a deafness check: the hub's silence must make
        // the member neither write nor step down.
        let cut_for = Duration::from_secs(25);
        std::thread::sleep(cut_for.saturating_sub(cut_at.elapsed()));
        assert_eq!(heard_at(), last_heard, "nothing heard while cut off");
        let after = member
            .object("configmap", "team-a", "bundle")
            .expect("the copy is kept");
        assert_eq!(
            after["metadata"]["resourceVersion"],
            before["metadata"]["resourceVersion"]
        );
        assert_eq!(
            skiff.writes(),
            writes,
            "the member wrote while its hub was cut off"
        );
        assert!(
            !skiff.skiff.logs().contains("stepping down"),
            "silence from the hub is not deafness"
        );
        proxy.heal();
        until("the edit once the hub is back", || {
            holds(member, "bundle", "v2")
        });
        until("the member current again on the hub, and said so", || {
            let (reason, clusters) = ready(fleet.hub, "bundle");
            let back = "cut-1 heard from and well again";
            reason == "Synced"
                && clusters["current"] == 1
                && has_event(fleet.hub, "bundle", "Normal", "ClustersBack", back)
        });
        assert!(heard_at() > last_heard, "heard again");
        assert_eq!(
            member_relists(fleet.hub, &proxied.cluster),
            relists_before,
            "a watch resumed from its resourceVersion: no relist after the partition"
        );
    }));
    if outcome.is_err() {
        eprintln!(
            "hub skiff log:\n{}\nmember log:\n{}",
            hub.skiff.logs(),
            skiff.skiff.logs()
        );
    }
    skiff.stop();
    hub.stop();
    outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
}

/// The LISTs the member `cluster`'s identity made on the hub.
fn member_relists(hub: &ControlPlane, cluster: &str) -> usize {
    let user = format!("system:serviceaccount:{cluster}:skiff-member");
    (hub.audit().iter())
        .filter(|e| e.user == user && e.is_relist() && e.stage == "ResponseComplete")
        .count()
}
