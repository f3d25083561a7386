//! `make demo`: a local control plane, two skiff replicas, a Mirror at work, and a handover,
//! explained as it happens. Ctrl-C stops everything; nothing is left running.
//!
//! Usage: `demo <path to the skiff binary> [--no-wait]` (`make demo` passes both the binary
//! and nothing else; `--no-wait` ends after the tour instead of waiting for Ctrl-C).

#[path = "../tests/support/mod.rs"]
mod support;
#[path = "common/tour.rs"]
mod tour;

use std::path::Path;
use std::time::{Duration, Instant};
use support::control_plane::ControlPlane;
use support::watchdog::Supervised;
use tour::{Clock, indent};

const LEASE: &str = "lease/skiff-leader";
const NS: &str = "skiff-system";

struct Demo {
    clock: Clock,
    cp: ControlPlane,
}

impl Demo {
    fn say(&self, text: &str) {
        self.clock.say(text);
    }

    fn kubectl(&self, args: &[&str]) -> String {
        self.cp.kubectl_ok(args)
    }

    fn try_kubectl(&self, args: &[&str]) -> Option<String> {
        let out = self.cp.kubectl(args);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    fn holder(&self) -> String {
        self.try_kubectl(&[
            "-n",
            NS,
            "get",
            LEASE,
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ])
        .unwrap_or_default()
    }

    fn copy_value(&self, ns: &str) -> Option<String> {
        self.try_kubectl(&[
            "-n",
            ns,
            "get",
            "configmap",
            "app-ca",
            "-o",
            "jsonpath={.data.ca\\.crt}",
        ])
    }

    fn wait_for(
        &self,
        limit: Duration,
        what: &str,
        check: impl FnMut() -> bool,
    ) -> Result<Duration, String> {
        self.clock.wait_for(limit, what, check)
    }
}

struct Replica {
    name: &'static str,
    process: Supervised,
}

fn main() {
    let (skiff, no_wait) = tour::arguments("demo");
    tour::watch_for_ctrl_c();
    println!("skiff demo: everything runs on this machine and is removed when the demo ends.\n");
    println!(
        "[  0.0s] Starting a local control plane: etcd and kube-apiserver v1.36.3 with RBAC ..."
    );
    let demo = Demo {
        clock: Clock::start(),
        cp: ControlPlane::start(),
    };
    let result = tour(&demo, &skiff, no_wait);
    if let Err(e) = &result {
        demo.say(&format!("demo stopped: {e}"));
    }
    demo.say("Stopping the replicas and the control plane; removing the temp dir.");
    drop(demo);
    if result.is_err() {
        std::process::exit(1);
    }
}

fn tour(demo: &Demo, skiff: &Path, no_wait: bool) -> Result<(), String> {
    demo.say(&format!("Control plane ready at {}.", demo.cp.url()));
    demo.say("Installing skiff: kubectl apply -k manifests/ (CRD, namespace, ServiceAccount, RBAC, FlowSchema, Deployment, PDB).");
    demo.cp.install_manifests();
    demo.say(
        "  This control plane has no nodes, so the Deployment's pods never start: the two replicas",
    );
    demo.say("  run here as processes, authenticated as the skiff ServiceAccount, so the shipped RBAC applies.");
    for (ns, label) in [
        ("team-a", Some("team=payments")),
        ("team-b", Some("team=payments")),
        ("team-c", None),
    ] {
        demo.kubectl(&["create", "namespace", ns]);
        if let Some(label) = label {
            demo.kubectl(&["label", "namespace", ns, label]);
        }
    }
    demo.say(
        "Created namespaces team-a and team-b (labelled team=payments) and team-c (no label).",
    );

    let mut replicas = vec![start_replica(demo, skiff, "replica-a")?];
    demo.wait_for(Duration::from_secs(20), "replica-a holds the lease", || {
        demo.holder().starts_with("replica-a")
    })?;
    replicas.push(start_replica(demo, skiff, "replica-b")?);
    demo.say(&format!(
        "replica-a holds the Lease {NS}/skiff-leader ({}); replica-b watches it and stands by.",
        demo.holder()
    ));

    let sample = support::control_plane::manifests_dir().join("samples/configmap-mirror.yaml");
    demo.kubectl(&["apply", "-f", &sample.display().to_string()]);
    demo.say("Applied manifests/samples/configmap-mirror.yaml: a Mirror copying ConfigMap skiff-system/app-ca");
    demo.say("  into every namespace labelled team=payments.");
    for ns in ["team-a", "team-b"] {
        demo.wait_for(Duration::from_secs(20), "a copy exists", || {
            demo.copy_value(ns).is_some()
        })?;
        demo.say(&format!("  a copy of app-ca appeared in {ns}"));
    }
    demo.wait_for(Duration::from_secs(10), "team-c has no copy", || {
        demo.copy_value("team-c").is_none()
    })?;
    demo.say("  team-c has none: it does not match the selector.");
    demo.wait_for(Duration::from_secs(10), "the Mirror is Ready", || {
        mirror_row(demo).contains("True")
    })?;
    demo.say(&format!(
        "kubectl get mirror -n {NS}:\n{}",
        indent(&demo.kubectl(&["get", "mirror", "-n", NS]))
    ));

    demo.kubectl(&["label", "namespace", "team-c", "team=payments"]);
    let took = demo.wait_for(Duration::from_secs(20), "team-c has a copy", || {
        demo.copy_value("team-c").is_some()
    })?;
    demo.say(&format!(
        "Labelled team-c team=payments: its copy appeared {} ms later.",
        took.as_millis()
    ));

    demo.kubectl(&[
        "-n",
        "team-a",
        "patch",
        "configmap",
        "app-ca",
        "--type=merge",
        "-p",
        r#"{"data":{"ca.crt":"edited by hand"}}"#,
    ]);
    let restored = || {
        demo.copy_value("team-a")
            .is_some_and(|v| v != "edited by hand")
    };
    let took = demo.wait_for(Duration::from_secs(20), "the hand edit is undone", restored)?;
    demo.say(&format!(
        "Edited the copy in team-a by hand: skiff restored it {} ms later.",
        took.as_millis()
    ));

    handover(demo, &mut replicas)?;

    demo.kubectl(&[
        "-n",
        NS,
        "patch",
        "configmap",
        "app-ca",
        "--type=merge",
        "-p",
        r#"{"data":{"ca.crt":"rotated"}}"#,
    ]);
    let everywhere = || {
        ["team-a", "team-b", "team-c"]
            .iter()
            .all(|ns| demo.copy_value(ns).as_deref() == Some("rotated"))
    };
    let took = demo.wait_for(
        Duration::from_secs(20),
        "every copy holds the new content",
        everywhere,
    )?;
    demo.say(&format!(
        "Changed the source: replica-b, now the leader, updated all three copies in {} ms.",
        took.as_millis()
    ));

    if no_wait {
        return Ok(());
    }
    println!("\nThe demo keeps running so you can look around:");
    println!(
        "  export KUBECONFIG={}",
        demo.cp.admin_kubeconfig().display()
    );
    println!(
        "  bin/kubectl get mirrors -A; bin/kubectl get configmaps -A -l app.kubernetes.io/managed-by=skiff"
    );
    println!("  skiff's logs: {}/replica-*.log", demo.cp.dir().display());
    println!("Press Ctrl-C to stop; everything is removed.\n");
    tour::until_stopped();
    drop(replicas);
    Ok(())
}

/// SIGTERM to the leader, as a rolling update would send; then how long until the standby leads.
fn handover(demo: &Demo, replicas: &mut [Replica]) -> Result<(), String> {
    let leader = &mut replicas[0];
    let pid = (leader.process.program_id()).ok_or("cannot find replica-a's process")?;
    demo.say(&format!(
        "Sending SIGTERM to the leader, {} (as a rolling update would) ...",
        leader.name
    ));
    let sent = Instant::now();
    signal(pid, "TERM");
    let mut exited = None;
    let mut took_over = None;
    while sent.elapsed() < Duration::from_secs(20) && (exited.is_none() || took_over.is_none()) {
        if exited.is_none() && !alive(pid) {
            exited = Some(sent.elapsed());
        }
        if took_over.is_none() && demo.holder().starts_with("replica-b") {
            took_over = Some(sent.elapsed());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let exited = exited.ok_or("replica-a did not exit")?;
    let took_over = took_over.ok_or("replica-b did not take over")?;
    let log = std::fs::read_to_string(demo.cp.dir().join("replica-a.log")).unwrap_or_default();
    let released = log.contains("released lease");
    demo.say(&format!(
        "  replica-a stopped its controller, {} and exited {} ms after SIGTERM.",
        if released {
            "released the lease"
        } else {
            "(did not release the lease)"
        },
        exited.as_millis()
    ));
    demo.say(&format!(
        "  replica-b leads {} ms after SIGTERM (without the release it would have waited out the 15 s lease).",
        took_over.as_millis()
    ));
    Ok(())
}

fn start_replica(demo: &Demo, skiff: &Path, name: &'static str) -> Result<Replica, String> {
    let process = tour::leading_skiff(name, skiff, &demo.cp, &[])?;
    demo.say(&format!(
        "Started {name}: skiff --leader-elect (its log: {name}.log in the demo dir)."
    ));
    Ok(Replica { name, process })
}

fn mirror_row(demo: &Demo) -> String {
    demo.try_kubectl(&["get", "mirror", "-n", NS, "--no-headers"])
        .unwrap_or_default()
}

/// Whether `pid` is still running (an exited child waiting to be reaped counts as gone).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

fn signal(pid: u32, name: &str) {
    let _ = std::process::Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status();
}
