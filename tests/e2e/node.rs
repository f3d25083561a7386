//! e2e on a real kubelet: skiff's image in Pods, deployed as users deploy it (`make deploy`,
//! `helm install`), and what the kubelet, the ReplicaSet and the Lease make of it.
//!
//! Why: skiff exists for what happens to a leader in a Pod: SIGTERM from the kubelet in a
//! rollout, a 64 Mi memory limit, probes, a read-only root filesystem. The other suites run the
//! binary as a process beside a control plane without a kubelet; only here does its image run
//! where those things happen.
//!
//! Ignored by `cargo test`: it needs root and a node. `make test-node` sets one up
//! (`hack/node/node.sh`: kubelet, containerd, kube-proxy and the control plane in namespaces of
//! their own) and runs this suite inside it, one test at a time (one kubelet a machine).
//! `NODE_ROUNDS` sets how many leader deletions and rollouts the `make deploy` test measures (10),
//! `NODE_FANOUT` how many namespaces its Mirror selects (1,000).
//!
//! Real time, under a real kubelet: the test asserts what the kubelet and the Lease show (no
//! failed probe, a release before each handover, one handover per rollout); how soon a Pod is
//! Ready and how fast a handover is are printed, and recorded in BENCHMARKS.md ("In Pods, under
//! a real kubelet"). Each wait is a liveness bound.

use std::thread;
use std::time::{Duration, Instant};

use crate::support::node::{
    LeaseWatch, Node, container_memory, container_pid, handovers, https_get_unverified, median_max,
    pod_of,
};
use crate::support::skiff::eventually;
use serde_json::Value;

const NAMESPACE: &str = "skiff-system";
const SELECTOR: &str = "app.kubernetes.io/name=skiff";
const LEASE: &str = "skiff-leader";
/// How long a rollout or a replacement Pod may take to be Ready on a loaded 2-core machine.
const READY_TIMEOUT: &str = "--timeout=180s";
/// How long a handover after the leader's deletion may take: a liveness bound, 30× the
/// fraction of a second it takes. Only the release tells a handover from the 15 s expiry of a
/// dead leader's Lease, so each round asserts the release was seen before the new holder.
const HANDOVER_LIVENESS: Duration = Duration::from_secs(30);
const MEMORY_LIMIT: u64 = 64 << 20;
const MIB: f64 = (1 << 20) as f64;

#[test]
#[ignore = "needs root and a kubelet: make test-node"]
fn make_deploy_runs_skiff_in_pods() {
    let node = Node::from_env();
    let _teardown = Teardown(|| {
        node.make(&["undeploy"]);
    });
    node.make(&["deploy", &format!("IMG={}", node.image)]);
    check_install(
        &node,
        "deploy",
        setting("NODE_ROUNDS", 10),
        setting("NODE_FANOUT", 1000),
    );
}

#[test]
#[ignore = "needs root and a kubelet: make test-node"]
fn helm_install_runs_skiff_in_pods() {
    let node = Node::from_env();
    let helm = node.helm();
    let _teardown = Teardown(|| {
        helm.ok(&["uninstall", "skiff", "-n", NAMESPACE, "--wait"]);
    });
    let (repository, tag) = node.image.rsplit_once(':').expect("NODE_IMG is name:tag");
    helm.ok(&[
        "install",
        "skiff",
        &crate::support::helm::chart_dir().display().to_string(),
        "-n",
        NAMESPACE,
        "--create-namespace",
        &format!("--set=image.repository={repository}"),
        &format!("--set=image.tag={tag}"),
    ]);
    check_install(&node, "helm", 1, 100);
}

/// A count from the environment, else `default`.
fn setting(name: &str, default: usize) -> usize {
    let value = std::env::var(name).ok();
    value.map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a count"))
    })
}

/// Everything the node checks of an installed skiff, in an order that keeps the timing
/// measurements away from the fan-out's load. `tag` tells this install's fan-out namespaces
/// from another's.
fn check_install(node: &Node, tag: &str, rounds: usize, fanout: usize) {
    let started = Instant::now();
    wait_ready(node);
    eprintln!(
        "node: both replicas Ready {:.1?} after the install",
        started.elapsed()
    );
    // A speed figure (BENCHMARKS.md): what must hold is that no probe failed on the way.
    for pod in node.pods(NAMESPACE, SELECTOR) {
        eprintln!(
            "node: {} Ready {} s after its container started",
            pod["metadata"]["name"],
            ready_after_start(&pod)
        );
    }
    assert_probes_never_failed(node);
    assert_security_context(node);
    let lease = LeaseWatch::start(node, NAMESPACE, LEASE);
    assert_only_the_leader_is_marked(node, &current_holder(node, &lease));
    assert_metrics_through_the_service(node);
    measure_leader_deletes(node, &lease, rounds);
    measure_rollouts(node, &lease, rounds);
    assert_drain_held_by_the_pdb(node, &lease);
    assert_mirror_copies(node, tag, fanout);
    assert_no_restarts(node);
}

/// Runs its closure when dropped: the teardown of an install, also when a check panics.
struct Teardown<F: FnMut()>(F);

impl<F: FnMut()> Drop for Teardown<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// Waits until the Deployment has exactly two Pods, both Ready and none being deleted.
fn wait_ready(node: &Node) {
    let is_ready = |p: &Value| {
        let conditions = p["status"]["conditions"].as_array();
        p["metadata"]["deletionTimestamp"].is_null()
            && conditions.is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
    };
    let mut pods = Vec::new();
    let ready = eventually(Duration::from_secs(180), || {
        pods = all_pods(node);
        pods.len() == 2 && pods.iter().all(is_ready)
    });
    assert!(ready, "not two Ready skiff Pods after 180 s: {pods:#?}");
}

/// The Deployment's Pods, those being deleted too.
fn all_pods(node: &Node) -> Vec<Value> {
    let pods = node.get(&["pods", "-n", NAMESPACE, "-l", SELECTOR]);
    pods["items"].as_array().cloned().unwrap_or_default()
}

/// Seconds from the container's start to the Pod's Ready condition (the API's timestamps are
/// whole seconds).
fn ready_after_start(pod: &Value) -> u64 {
    let time = |v: &Value| {
        let text = v.as_str().unwrap_or_default();
        skiff::time::parse_rfc3339(text).unwrap_or_else(|| panic!("a timestamp: {v}"))
    };
    let started = time(&pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]);
    let conditions = pod["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ready = conditions
        .iter()
        .find(|c| c["type"] == "Ready")
        .expect("a Ready condition");
    let ready = time(&ready["lastTransitionTime"]);
    ready.duration_since(started).unwrap_or_default().as_secs()
}

/// Zero failed probes as the kubelet counts them (startup, readiness, liveness), and no
/// `Unhealthy` event: the listener answers before the first probe.
fn assert_probes_never_failed(node: &Node) {
    let pods: Vec<String> = node
        .pods(NAMESPACE, SELECTOR)
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    let failed = node.failed_probes(NAMESPACE, &pods);
    let events = node.unhealthy_events(NAMESPACE, &pods);
    eprintln!(
        "node: failed probes {failed}, Unhealthy events {}",
        events.len()
    );
    assert_eq!(
        failed, 0,
        "the kubelet counted failed probes; events: {events:#?}"
    );
    assert!(events.is_empty(), "Unhealthy events: {events:#?}");
}

/// The securityContext as the kernel applied it, read from /proc of each container's process.
fn assert_security_context(node: &Node) {
    for pod in node.pods(NAMESPACE, SELECTOR) {
        let pid = container_pid(&pod);
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
                .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/status"))
        };
        assert_eq!(field("Uid:"), "65532 65532 65532 65532");
        assert_eq!(field("Gid:"), "65532 65532 65532 65532");
        for caps in ["CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"] {
            assert_eq!(field(caps), "0000000000000000", "{caps} of skiff");
        }
        assert_eq!(field("NoNewPrivs:"), "1", "allowPrivilegeEscalation: false");
        assert_eq!(
            field("Seccomp:"),
            "2",
            "seccomp RuntimeDefault (filter mode)"
        );
        let mounts = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).expect("mountinfo");
        let root = mounts
            .lines()
            .rfind(|l| l.split(' ').nth(4) == Some("/"))
            .expect("a root mount");
        let options = root.split(' ').nth(5).unwrap_or_default();
        assert!(
            options.split(',').any(|o| o == "ro"),
            "root filesystem not read-only: {root}"
        );
    }
    eprintln!(
        "node: securityContext applied (uid/gid 65532, no capabilities, no_new_privs, seccomp, ro root)"
    );
}

/// A Mirror copying a ConfigMap into `count` labelled namespaces, with the leader's cgroup
/// memory sampled throughout against the 64 Mi limit.
fn assert_mirror_copies(node: &Node, tag: &str, count: usize) {
    let namespaces: Vec<String> = (0..count)
        .map(|i| {
            format!(
                r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"fanout-{tag}-{i:04}","labels":{{"skiff-node-fanout":"{tag}"}}}}}}"#
            )
        })
        .collect();
    let list = format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
        namespaces.join(",")
    );
    node.create(&list);
    let leader = leader_pod(node);
    let before = container_memory(&leader);
    node.apply(
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fanout","namespace":"skiff-system"},"data":{"ca.crt":"a CA"}}"#,
    );
    let start = Instant::now();
    node.apply(
        r#"{"apiVersion":"skiff.dev/v1alpha1","kind":"Mirror","metadata":{"name":"fanout","namespace":"skiff-system"},
            "spec":{"source":{"kind":"ConfigMap","name":"fanout"},"namespaceSelector":{"matchLabels":{"skiff-node-fanout":"TAG"}}}}"#
            .replace("TAG", tag)
            .as_str(),
    );
    let deadline = start + Duration::from_secs(300);
    let mut high = 0;
    loop {
        let (current, _, _) = container_memory(&leader);
        high = high.max(current);
        let copies = node.kubectl_ok(&[
            "get",
            "configmaps",
            "-A",
            "--field-selector=metadata.name=fanout",
            "-o",
            "name",
        ]);
        // The source is a ConfigMap named fanout too.
        if copies.lines().count() > count {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {count} copies after 300 s",
            copies.lines().count() - 1
        );
        thread::sleep(Duration::from_millis(500));
    }
    let took = start.elapsed();
    let (current, peak, oom_kills) = container_memory(&leader);
    eprintln!(
        "node: {count} copies in {took:.1?}; leader cgroup memory {:.1} MiB before, {:.1} MiB after, \
         highest sampled {:.1} MiB, peak {:.1} MiB (limit 64 MiB), OOM kills {oom_kills}",
        before.0 as f64 / MIB,
        current as f64 / MIB,
        high as f64 / MIB,
        peak as f64 / MIB,
    );
    assert!(peak < MEMORY_LIMIT, "peak {peak} bytes reached the limit");
    assert_eq!(oom_kills, 0, "the cgroup counted OOM kills");
    // The Mirror stays: the teardown's undeploy or uninstall deletes it, and skiff its copies.
}

/// `/metrics` through the metrics Service: 401 without a token, 200 with a ServiceAccount's
/// token bound to the metrics reader role.
fn assert_metrics_through_the_service(node: &Node) {
    let binding = "clusterrolebinding/skiff-node-scraper";
    node.kubectl_ok(&[
        "delete",
        binding,
        "serviceaccount/scraper",
        "-n",
        NAMESPACE,
        "--ignore-not-found",
    ]);
    node.kubectl_ok(&["create", "serviceaccount", "scraper", "-n", NAMESPACE]);
    node.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "skiff-node-scraper",
        "--clusterrole=skiff-metrics-reader",
        &format!("--serviceaccount={NAMESPACE}:scraper"),
    ]);
    let token = node.kubectl_ok(&["create", "token", "scraper", "-n", NAMESPACE]);
    let service = node.get(&["service", "skiff-metrics", "-n", NAMESPACE]);
    let ip = service["spec"]["clusterIP"]
        .as_str()
        .expect("a ClusterIP")
        .to_owned();
    let get = |token| {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match https_get_unverified(&ip, 8443, "/metrics", token) {
                Ok(answer) => return answer,
                Err(e) if Instant::now() < deadline => {
                    eprintln!("node: /metrics via {ip}: {e}; retrying");
                    thread::sleep(Duration::from_millis(500));
                }
                Err(e) => panic!("/metrics via the Service {ip}:8443: {e}"),
            }
        }
    };
    let (anonymous, _) = get(None);
    let (status, body) = get(Some(token.trim()));
    node.kubectl_ok(&["delete", "clusterrolebinding", "skiff-node-scraper"]);
    node.kubectl_ok(&["delete", "serviceaccount", "scraper", "-n", NAMESPACE]);
    assert_eq!(anonymous, 401, "/metrics without a token");
    assert_eq!(status, 200, "/metrics with the reader's token: {body}");
    assert!(body.contains("skiff_"), "skiff's metrics: {body}");
    eprintln!("node: /metrics via the Service {ip}:8443: 401 without a token, 200 with one");
}

/// The Lease's holder, once it is one of this install's Pods (a Lease left by an earlier
/// install names a Pod that is gone).
fn current_holder(node: &Node, lease: &LeaseWatch) -> String {
    let mut holder = String::new();
    let found = eventually(Duration::from_secs(60), || {
        holder = lease.holder();
        let pods = node.pods(NAMESPACE, SELECTOR);
        !holder.is_empty()
            && pods
                .iter()
                .any(|p| p["metadata"]["name"] == pod_of(&holder))
    });
    assert!(
        found,
        "no skiff Pod holds the Lease within 60 s: {holder:?}"
    );
    holder
}

/// The leader's Pod carries `controller.kubernetes.io/pod-deletion-cost` (set through the
/// shipped RBAC and admission policy), the standby's none.
fn assert_only_the_leader_is_marked(node: &Node, leader: &str) {
    let cost = |p: &Value| {
        let annotation =
            &p["metadata"]["annotations"]["controller.kubernetes.io/pod-deletion-cost"];
        (
            p["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            annotation.clone(),
        )
    };
    let mut costs: Vec<(String, Value)> = Vec::new();
    let marked = eventually(Duration::from_secs(30), || {
        costs = node.pods(NAMESPACE, SELECTOR).iter().map(cost).collect();
        costs
            .iter()
            .all(|(pod, cost)| (pod == pod_of(leader)) == (cost == "1000"))
    });
    assert!(
        marked,
        "deletion costs after 30 s: {costs:?}, leader {leader}"
    );
    eprintln!("node: pod-deletion-cost 1000 on the leader only: {costs:?}");
}

/// The Pod holding the Lease now.
fn leader_pod(node: &Node) -> Value {
    let lease = node.get(&["lease", LEASE, "-n", NAMESPACE]);
    let holder = lease["spec"]["holderIdentity"].as_str().unwrap_or_default();
    let pod = pod_of(holder);
    node.pods(NAMESPACE, SELECTOR)
        .into_iter()
        .find(|p| p["metadata"]["name"] == pod)
        .unwrap_or_else(|| panic!("the Lease's holder {holder:?} is no running skiff Pod"))
}

/// `kubectl delete pod` of the leader, `rounds` times: the standby holds the Lease soon after.
fn measure_leader_deletes(node: &Node, lease: &LeaseWatch, rounds: usize) {
    let mut times = Vec::new();
    for _ in 0..rounds {
        wait_ready(node);
        let old = current_holder(node, lease);
        let before = Instant::now();
        node.kubectl_ok(&[
            "delete",
            "pod",
            pod_of(&old),
            "-n",
            NAMESPACE,
            "--wait=false",
        ]);
        // From the API server's answer: kubectl's own start-up is no part of the handover.
        let answered = Instant::now();
        let (at, new) = lease.wait_for(before, HANDOVER_LIVENESS, |h| !h.is_empty() && h != old);
        let took = at.saturating_duration_since(answered);
        let released = lease
            .seen()
            .into_iter()
            .find(|(t, h)| *t >= before && *t <= at && h.is_empty());
        let released = released.map(|(t, _)| t.saturating_duration_since(answered));
        eprintln!(
            "node: deleted leader {}; released {released:.0?} and {} held the Lease {took:.0?} \
             after the delete call returned ({:.0?} after kubectl started)",
            pod_of(&old),
            pod_of(&new),
            at.duration_since(before)
        );
        assert!(
            released.is_some(),
            "{} held the Lease without a release before it: the leader did not release",
            pod_of(&new)
        );
        times.push(took);
    }
    let (median, max) = median_max(&times);
    eprintln!(
        "node: kubectl delete pod <leader> → standby holds the Lease (from the call's return): median {median:.0?}, max {max:.0?} of {rounds}"
    );
}

/// `kubectl rollout restart`, `rounds` times: how often the Lease changed hands and the longest
/// time it had no holder.
fn measure_rollouts(node: &Node, lease: &LeaseWatch, rounds: usize) {
    let mut counts = Vec::new();
    let mut gaps = Vec::new();
    for _ in 0..rounds {
        wait_ready(node);
        let start = Instant::now();
        node.kubectl_ok(&["rollout", "restart", "deployment/skiff", "-n", NAMESPACE]);
        node.kubectl_ok(&[
            "rollout",
            "status",
            "deployment/skiff",
            "-n",
            NAMESPACE,
            READY_TIMEOUT,
        ]);
        wait_only_new_pods(node);
        let current = current_holder(node, lease);
        let current_pods = node.pods(NAMESPACE, SELECTOR);
        assert!(
            current_pods
                .iter()
                .any(|p| p["metadata"]["name"] == pod_of(&current)),
            "after the rollout the Lease is held by {current:?}, not a new Pod"
        );
        let seen = lease.seen();
        let first = seen.iter().rposition(|(at, _)| *at < start).unwrap_or(0);
        let (count, gap) = handovers(&seen[first..]);
        eprintln!(
            "node: rollout restart: {count} handovers, longest time without a holder {gap:.0?}"
        );
        counts.push(count);
        gaps.push(gap);
    }
    let (_, max_gap) = median_max(&gaps);
    let once = counts.iter().filter(|&&c| c == 1).count();
    eprintln!(
        "node: {rounds} rollouts: handovers {counts:?} ({once} of {rounds} with exactly one), longest gap {max_gap:.0?}"
    );
    // The leader's Pod is deleted last (--leader-elect-pod-deletion-cost): one handover, from
    // the old leader to a Pod of the new ReplicaSet.
    assert!(
        counts.iter().all(|&c| c == 1),
        "handovers per rollout: {counts:?}"
    );
}

/// Waits until every skiff Pod of the old ReplicaSets is gone.
fn wait_only_new_pods(node: &Node) {
    let mut count = 0;
    let gone = eventually(Duration::from_secs(120), || {
        count = all_pods(node).len();
        count == 2
    });
    assert!(gone, "old Pods still there after 120 s: {count} Pods");
}

/// `kubectl drain` on the only node: the first eviction goes through, its replacement cannot
/// schedule, and the PodDisruptionBudget holds the second replica, which leads.
fn assert_drain_held_by_the_pdb(node: &Node, lease: &LeaseWatch) {
    wait_ready(node);
    let output = node.kubectl(&[
        "drain",
        &node.name,
        "--pod-selector",
        SELECTOR,
        "--ignore-daemonsets",
        "--timeout=20s",
    ]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let left = node.pods(NAMESPACE, SELECTOR);
    let running: Vec<&Value> = left
        .iter()
        .filter(|p| p["status"]["phase"] == "Running")
        .collect();
    thread::sleep(Duration::from_millis(500));
    let holder = lease.holder();
    node.kubectl_ok(&["uncordon", &node.name]);
    assert!(
        !output.status.success(),
        "the drain evicted both replicas: {text}"
    );
    assert!(
        text.contains("disruption budget"),
        "the drain was not held by the PDB: {text}"
    );
    assert_eq!(running.len(), 1, "one replica keeps running: {left:#?}");
    assert_eq!(
        running[0]["metadata"]["name"],
        pod_of(&holder),
        "the replica left leads"
    );
    eprintln!(
        "node: kubectl drain held by the PodDisruptionBudget; {} leads",
        pod_of(&holder)
    );
    wait_ready(node);
}

/// No container restarted, none was ever OOM-killed.
fn assert_no_restarts(node: &Node) {
    for pod in node.pods(NAMESPACE, SELECTOR) {
        let status = &pod["status"]["containerStatuses"][0];
        assert_eq!(status["restartCount"], 0, "{}", pod["metadata"]["name"]);
        assert!(status["lastState"]["terminated"].is_null(), "{status:#}");
        assert_eq!(
            container_memory(&pod).2,
            0,
            "OOM kills in {}",
            pod["metadata"]["name"]
        );
    }
}
