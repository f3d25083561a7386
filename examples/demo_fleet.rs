//! `make demo-fleet`: across clusters on this machine. A hub and a member cluster (two control
//! planes), the member admitted with `hack/hub-admit.sh`, a skiff process on each side, and a
//! fleet Mirror on the hub whose copies appear in the member, follow an edit, and are counted
//! on the hub, explained as it happens. Ctrl-C stops everything; nothing is left running.
//!
//! Usage: `demo_fleet <path to the skiff binary> [--no-wait]` (`--no-wait` ends after the tour
//! instead of waiting for Ctrl-C).

#[path = "../tests/support/mod.rs"]
mod support;
#[path = "common/tour.rs"]
mod tour;

use serde_json::json;
use std::path::Path;
use std::time::Duration;
use support::control_plane::{ControlPlane, OPERATOR_NAMESPACE};
use support::fleet::{Admission, Fleet};
use support::watchdog::Supervised;
use tour::{Clock, indent};

/// The member cluster's name (its namespace on the hub) and the labels the hub admin gives it.
const CLUSTER: &str = "eu-1";
const LABELS: &str = "region=eu";
/// The hub's name as the member knows it (`--hub-name`).
const HUB_NAME: &str = "hub-demo";
const SOURCE: &str = "app-ca";
const WAIT: Duration = Duration::from_secs(60);

struct Demo {
    clock: Clock,
    fleet: Fleet,
}

impl Demo {
    fn hub(&self) -> &ControlPlane {
        self.fleet.hub
    }

    fn member(&self) -> &ControlPlane {
        &self.fleet.members[0]
    }

    /// `kubectl ARGS` on the hub as its admin, its output indented.
    fn show_on_hub(&self, args: &[&str]) -> String {
        indent(self.hub().kubectl_ok(args).trim_end())
    }

    /// The content of the member's copy in `namespace`, if it holds one from the hub.
    fn copy_value(&self, namespace: &str) -> Option<String> {
        let copy = self.member().object("configmap", namespace, SOURCE)?;
        (copy["metadata"]["labels"]["skiff.dev/hub"] == HUB_NAME).then(|| {
            copy["data"]["ca.crt"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
    }

    /// The hub Mirror's count of clusters holding its current version, once the member's
    /// report on its Placement echoes that version.
    fn current(&self) -> Option<u64> {
        let mirror = self.hub().object("mirror", OPERATOR_NAMESPACE, SOURCE)?;
        let placement = format!("{OPERATOR_NAMESPACE}.{SOURCE}");
        let placement = self.hub().object("placement", CLUSTER, &placement)?;
        let status = &mirror["status"];
        let echoed = placement["status"]["observedHash"] == status["sourceHash"];
        status["clusters"]["current"].as_u64().filter(|_| echoed)
    }
}

fn main() {
    let (skiff, no_wait) = tour::arguments("demo_fleet");
    tour::watch_for_ctrl_c();
    println!(
        "skiff fleet demo: a hub and a member cluster, both on this machine; everything is removed when the demo ends.\n"
    );
    let clock = Clock::start();
    clock.say(&format!(
        "Starting two control planes (etcd and kube-apiserver each): the hub, and the member cluster {CLUSTER} ..."
    ));
    let demo = Demo {
        clock,
        fleet: Fleet::start(1),
    };
    let mut skiffs = Vec::new();
    let result = tour_of(&demo, &skiff, &mut skiffs, no_wait);
    if let Err(e) = &result {
        demo.clock.say(&format!("demo stopped: {e}"));
    }
    demo.clock
        .say("Stopping both skiffs and both control planes; removing their temp dirs.");
    drop(skiffs);
    demo.fleet.hub.stop();
    drop(demo);
    if result.is_err() {
        std::process::exit(1);
    }
}

fn tour_of(
    demo: &Demo,
    skiff: &Path,
    skiffs: &mut Vec<Supervised>,
    no_wait: bool,
) -> Result<(), String> {
    demo.clock.say(&format!(
        "Hub ready at {}; {CLUSTER} ready at {}.",
        demo.hub().url(),
        demo.member().url()
    ));
    demo.clock.say("Installed skiff on both: on the hub with deploy/fleet-hub (the Placement CRD, the hub skiff's rights on");
    demo.clock.say("  Placements and heartbeats, the role a member is bound to); in the member, skiff alone: nothing of the hub's.");
    let admission = admit(demo);
    skiffs.push(start_skiff(demo, skiff, Side::Hub)?);
    skiffs.push(start_skiff(demo, skiff, Side::Member(&admission))?);
    for (namespace, labels) in [
        ("team-a", json!({"team": "payments"})),
        ("team-b", json!({"team": "payments"})),
        ("team-c", json!({})),
    ] {
        demo.member().apply(
            &json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": namespace, "labels": labels}})
            .to_string(),
        );
    }
    demo.clock.say(&format!(
        "In {CLUSTER}: namespaces team-a and team-b labelled team=payments, team-c not."
    ));
    place(demo);
    let took = demo.wait_for_copies(&["team-a", "team-b"], "v1")?;
    demo.clock.say(&format!(
        "  {CLUSTER}'s skiff copied it: app-ca appeared in team-a and team-b of {CLUSTER} {} ms after the Mirror was applied.",
        took.as_millis()
    ));
    if demo.copy_value("team-c").is_some() {
        return Err("team-c holds a copy, yet its labels are not selected".into());
    }
    demo.clock
        .say("  team-c has none: it does not match the namespaceSelector.");
    demo.clock.say(&format!(
        "On the hub, the Mirror's copy is a Placement in {CLUSTER}'s namespace (kubectl get placements -A):\n{}",
        demo.show_on_hub(&["get", "placements", "-A"])
    ));
    let reported = demo
        .clock
        .wait_for(WAIT, "the hub counts the member current", || {
            demo.current() == Some(1)
        })?;
    demo.clock.say(&format!(
        "{CLUSTER} reported its copies on its Placement; {} ms later the hub's Mirror counts it CURRENT (kubectl get mirror -n {OPERATOR_NAMESPACE}):\n{}",
        reported.as_millis(),
        demo.show_on_hub(&["get", "mirror", SOURCE, "-n", OPERATOR_NAMESPACE])
    ));
    edit(demo)?;
    confinement(demo, &admission);
    if no_wait {
        return Ok(());
    }
    println!("\nThe demo keeps running so you can look around:");
    println!(
        "  the hub:     export KUBECONFIG={}",
        demo.hub().admin_kubeconfig().display()
    );
    println!(
        "  the member:  export KUBECONFIG={}",
        demo.member().admin_kubeconfig().display()
    );
    println!(
        "  bin/kubectl get mirrors,placements -A (hub); bin/kubectl get configmaps -A -l skiff.dev/hub={HUB_NAME} (member)"
    );
    println!(
        "  skiff's logs: {}/hub-skiff.log and {}/member-skiff.log",
        demo.hub().dir().display(),
        demo.member().dir().display()
    );
    println!("Press Ctrl-C to stop; everything is removed.\n");
    tour::until_stopped();
    Ok(())
}

/// The hub admin's half of the registration, by the script `make hub-admit` runs.
fn admit(demo: &Demo) -> Admission {
    demo.clock.say(&format!(
        "Admitting {CLUSTER} on the hub: hack/hub-admit.sh {CLUSTER} {LABELS} (make hub-admit CLUSTER={CLUSTER} LABELS={LABELS}) ..."
    ));
    let admission = demo.fleet.admit(CLUSTER, &[("region", "eu")]);
    demo.clock.say(&format!(
        "  it made namespace {CLUSTER} on the hub, labelled (kubectl get namespace {CLUSTER} --show-labels):\n{}",
        demo.show_on_hub(&["get", "namespace", CLUSTER, "--show-labels"])
    ));
    demo.clock.say(&format!(
        "  a ServiceAccount skiff-member bound to the role skiff-fleet-member in {CLUSTER} only, the member's heartbeat"
    ));
    demo.clock.say(&format!(
        "  Lease, and a token; it printed the Secret skiff-hub for {CLUSTER}'s admin: a kubeconfig for the hub"
    ));
    demo.clock.say(&format!(
        "  (namespace {CLUSTER}, tokenFile: token) and the token, mounted here as {}.",
        admission.dir.display()
    ));
    admission
}

enum Side<'a> {
    Hub,
    Member(&'a Admission),
}

/// A skiff leading on its side: the hub's with `--fleet-hub`, the member's reading its hub
/// with the Secret its admin was handed.
fn start_skiff(demo: &Demo, skiff: &Path, side: Side) -> Result<Supervised, String> {
    let (cp, name, extra) = match side {
        Side::Hub => (demo.hub(), "hub-skiff", vec!["--fleet-hub".to_owned()]),
        Side::Member(admission) => (
            demo.member(),
            "member-skiff",
            vec![
                format!("--hub-kubeconfig={}", admission.kubeconfig().display()),
                format!("--hub-name={HUB_NAME}"),
            ],
        ),
    };
    let process = tour::leading_skiff(name, skiff, cp, &extra)?;
    let flags = extra.join(" ");
    let on = match name {
        "hub-skiff" => "on the hub".to_owned(),
        _ => format!("in {CLUSTER}"),
    };
    demo.clock.say(&format!(
        "Started skiff {on}: skiff --leader-elect {flags} (its log: {name}.log in {}).",
        cp.dir().display()
    ));
    Ok(process)
}

/// The source and the fleet Mirror on the hub.
fn place(demo: &Demo) {
    demo.hub().apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": SOURCE, "namespace": OPERATOR_NAMESPACE},
                "data": {"ca.crt": "v1"}})
        .to_string(),
    );
    demo.hub().apply(
        &json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
                "metadata": {"name": SOURCE, "namespace": OPERATOR_NAMESPACE},
                "spec": {"source": {"kind": "ConfigMap", "name": SOURCE},
                         "clusterSelector": {"matchLabels": {"region": "eu"}},
                         "namespaceSelector": {"matchLabels": {"team": "payments"}}}})
        .to_string(),
    );
    demo.clock.say(&format!(
        "On the hub: ConfigMap {OPERATOR_NAMESPACE}/{SOURCE} and a fleet Mirror of it: clusterSelector region=eu (the"
    ));
    demo.clock.say(&format!(
        "  clusters), namespaceSelector team=payments (inside each). {CLUSTER} pulls; the hub holds no credential of it."
    ));
}

/// Edits the source on the hub and follows the edit into the member and back to the count.
fn edit(demo: &Demo) -> Result<(), String> {
    demo.hub().kubectl_ok(&[
        "-n",
        OPERATOR_NAMESPACE,
        "patch",
        "configmap",
        SOURCE,
        "--type=merge",
        "-p",
        r#"{"data":{"ca.crt":"v2"}}"#,
    ]);
    let took = demo.wait_for_copies(&["team-a", "team-b"], "v2")?;
    demo.clock.say(&format!(
        "Edited the source on the hub: both copies in {CLUSTER} hold the new content {} ms later.",
        took.as_millis()
    ));
    demo.clock.wait_for(WAIT, "the member current again", || {
        demo.current() == Some(1)
    })?;
    demo.clock.say(&format!(
        "  and the hub counts {CLUSTER} CURRENT again, on the new version:\n{}",
        demo.show_on_hub(&["get", "mirror", SOURCE, "-n", OPERATOR_NAMESPACE])
    ));
    Ok(())
}

/// What the member's own token may read on the hub: its share, nothing else.
fn confinement(demo: &Demo, admission: &Admission) {
    let own = admission
        .kubectl()
        .run(&["get", "placements", "-n", CLUSTER]);
    let others = admission.kubectl().run(&["get", "namespaces"]);
    demo.clock.say(&format!(
        "As {CLUSTER} on the hub (its own token): kubectl get placements -n {CLUSTER} {}; kubectl get namespaces {}.",
        if own.status.success() { "lists its Placement" } else { "FAILS" },
        if others.status.success() {
            "SUCCEEDS"
        } else {
            "is forbidden: a member learns nothing of the others"
        }
    ));
}

impl Demo {
    /// Waits until each of `namespaces` in the member holds a copy with `value`.
    fn wait_for_copies(&self, namespaces: &[&str], value: &str) -> Result<Duration, String> {
        self.clock
            .wait_for(WAIT, &format!("the member's copies hold {value}"), || {
                namespaces
                    .iter()
                    .all(|ns| self.copy_value(ns).as_deref() == Some(value))
            })
    }
}
