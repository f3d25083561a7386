//! The namespace kit into new namespaces, per operator: skiff with `--kinds` and four Mirrors
//! (as `examples/namespace-kit.yaml`), the peer with `--kit` and four labelled sources. Once the
//! operator leads and is idle, [`Settings::kit_namespaces`](crate::settings::Settings) new
//! namespaces are created with the label the kit selects; the window runs from the first
//! namespace created to the last of the 4 × N objects seen by a watch per kind. In the window:
//! every request the operator's client metrics count (Lease, status, Events and GETs included)
//! and the requests the API server's audit log holds. Then memory, and a restart with the kit
//! converged: the objects whose resourceVersion changed and the writes the audit log holds.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use crate::kit_count::{
    by_resource, counted, is_kit, load_average, managed_by, requests, watch_objects,
};
use crate::lease_watch::LeaseWatch;
use crate::lifecycle::{replace_leader, sample, wait_leading};
use crate::operator::{Footprint, Kind, Launch, Operator, QPS, Replica};
use crate::settings::Settings;
use crate::support::audit::AuditEvent;
use crate::support::control_plane::ControlPlane;
use crate::support::scrape::scrape;
use crate::support::skiff::{free_port, proc_status_kib};
use crate::world::{self, Identity};

/// Label key of the kit's namespaces; its value is the operator's slug.
pub const KIT: &str = "compare.skiff.dev/kit";
/// skiff's flags for the kit, as `deploy/kinds` sets them (only `edit` is bound here).
const SKIFF_FLAGS: [&str; 4] = [
    "--kinds=networkpolicies.networking.k8s.io,limitranges,resourcequotas,rolebindings.rbac.authorization.k8s.io",
    "--bindable-roles=edit",
    // The kit's namespaces carry `KIT`, which every Mirror's selector requires.
    "--binding-namespace-label=compare.skiff.dev/kit",
    "--metrics-secure=false",
];
/// How long the restarted replica is watched for writes after it leads.
pub const RESTART_WATCH: Duration = Duration::from_secs(20);
const STEP: Duration = Duration::from_secs(60);

/// One kit object: its resource (kubectl), Mirror `source.kind`, API version, name, content.
pub struct Object {
    pub resource: &'static str,
    kind: &'static str,
    api_version: &'static str,
    name: &'static str,
    content: &'static str,
}

/// The four objects of `examples/namespace-kit.yaml`.
pub const OBJECTS: [Object; 4] = [
    Object {
        resource: "networkpolicies",
        kind: "NetworkPolicy",
        api_version: "networking.k8s.io/v1",
        name: "default-deny-ingress",
        content: r#"{"spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}"#,
    },
    Object {
        resource: "limitranges",
        kind: "LimitRange",
        api_version: "v1",
        name: "defaults",
        content: r#"{"spec": {"limits": [{"type": "Container",
            "defaultRequest": {"cpu": "100m", "memory": "128Mi"},
            "default": {"cpu": "500m", "memory": "512Mi"}}]}}"#,
    },
    Object {
        resource: "resourcequotas",
        kind: "ResourceQuota",
        api_version: "v1",
        name: "team-quota",
        content: r#"{"spec": {"hard": {"pods": "50", "requests.cpu": "8", "requests.memory": "16Gi"}}}"#,
    },
    Object {
        resource: "rolebindings",
        kind: "RoleBinding",
        api_version: "rbac.authorization.k8s.io/v1",
        name: "team-edit",
        content: r#"{"subjects": [{"kind": "Group", "name": "team", "apiGroup": "rbac.authorization.k8s.io"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}}"#,
    },
];

/// One operator's figures.
#[derive(Debug, Clone, Default)]
pub struct Kitted {
    pub label: &'static str,
    pub namespaces: usize,
    /// First namespace created → the last kit object seen.
    pub took: Duration,
    /// Requests in the window by the operator's client metrics, and of those to the Lease
    /// (skiff: its lease client; the peer: the audit log's Lease requests).
    pub requests: f64,
    pub lease: f64,
    /// skiff's main-client requests by method and code, e.g. `POST 201`.
    pub by_method: BTreeMap<String, f64>,
    /// Requests in the window as the API server's audit log holds them, and by verb and
    /// resource.
    pub audited: usize,
    pub audited_by: BTreeMap<String, usize>,
    pub converged: Footprint,
    /// VmHWM (KiB): the peak resident set.
    pub peak_kib: u64,
    /// A restart with the kit converged: objects whose resourceVersion changed, and the
    /// writes the audit log holds (the Lease aside) and of those to kit objects.
    pub restart_changed: usize,
    pub restart_writes: usize,
    pub restart_kit_writes: usize,
    pub restart_writes_by: BTreeMap<String, usize>,
    /// The machine's 1-minute load average when the last object was seen.
    pub load: f64,
    /// Requests counted from the audit log only (Kyverno has no `rest_client_requests_total`).
    pub audit_only: bool,
    /// Lines the report adds below the table about this column.
    pub notes: Vec<String>,
}

impl Kitted {
    /// Seconds the requests take at QPS, the Lease's aside (they have a bucket of their own).
    pub fn paced(&self) -> f64 {
        (self.requests - self.lease) / qps()
    }
}

pub fn qps() -> f64 {
    QPS.parse().unwrap_or(20.0)
}

/// The kit into new namespaces: skiff, the scaffold (a token bucket per kind's REST client) and
/// the shared limiter (one bucket, as skiff's main client has), each chosen one in turn.
pub fn part(
    cp: &ControlPlane,
    settings: &Settings,
    started: Instant,
    identities: &crate::Identities,
) -> Vec<Kitted> {
    world::retire_mirrors(cp);
    install(cp);
    // The dedicated-lease variant differs from the shared limiter in its Lease client only.
    let operators: Vec<Operator> = crate::operators()
        .into_iter()
        .filter(|o| o.slug != "dedicated-lease")
        .collect();
    let n = settings.kit_namespaces;
    operators
        .iter()
        .filter(|o| settings.chosen(o))
        .map(|o| {
            crate::progress(
                started,
                &format!("{}: the kit into {n} new namespaces", o.label),
            );
            run(cp, o, identities.of(o), n)
        })
        .collect()
}

/// The kit's RBAC for skiff (`manifests/components/kinds`); the peer's is in its manifests.
pub fn install(cp: &ControlPlane) {
    let rbac = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("manifests/components/kinds/rbac.yaml");
    cp.kubectl_ok(&["apply", "-f", &rbac.display().to_string()]);
}

pub fn run(cp: &ControlPlane, operator: &Operator, identity: &Identity, count: usize) -> Kitted {
    let mut launch = Launch::new(cp, operator, identity, KIT, "kit");
    launch.selector = (KIT, operator.slug);
    // Both ports chosen here: a probe port left to the system (`:0`) could take this one.
    let (port, probes) = (free_port(), free_port());
    launch.metrics_address = format!("127.0.0.1:{port}");
    launch.probe_address = format!("127.0.0.1:{probes}");
    launch.extra = match operator.kind {
        Kind::Skiff => SKIFF_FLAGS.map(str::to_owned).to_vec(),
        Kind::Peer(_) => vec!["--kit".into(), "--metrics-secure=false".into()],
    };
    world::free_lease(cp, operator);
    let (lease_ns, lease_name) = operator.lease();
    let watch = LeaseWatch::start(cp, lease_ns, lease_name);
    let mut first = launch.start("first");
    wait_leading(&watch, &mut first, operator);
    create_sources(cp, &launch);
    wait_idle(cp, &launch, &first);

    let names: Vec<String> = (0..count)
        .map(|i| format!("kit-{}-{i:04}", operator.slug))
        .collect();
    let prefix = format!("kit-{}-", operator.slug);
    let seen = watch_objects(cp, managed_by(operator), &prefix, count);
    std::thread::sleep(Duration::from_secs(2));
    let before = (scrape(port), SystemTime::now());
    let created = Instant::now();
    world::create_labelled(cp, &names, &json!({ KIT: operator.slug }));
    let limit = Duration::from_secs_f64(8.0 * count as f64 / qps()) + STEP;
    let took = seen.wait(created, limit).unwrap_or_else(|| {
        panic!(
            "{}: the kit incomplete after {limit:?}; log:\n{}",
            operator.label,
            first.logs()
        )
    });
    let after = (scrape(port), SystemTime::now());
    let load = load_average();
    let audited = requests(cp, operator, before.1, after.1);
    let (requests, lease, by_method) = counted(operator, &before.0, &after.0, &audited);

    std::thread::sleep(Duration::from_secs(5));
    let converged = sample(&first);
    let peak_kib = proc_status_kib(first.pid(), "VmHWM").unwrap_or(0);
    let (changed, writes) = restart(cp, &launch, &watch, first);
    if operator.is_skiff() {
        world::retire_mirrors(cp);
    }
    Kitted {
        label: operator.label,
        namespaces: count,
        took,
        requests,
        lease,
        by_method,
        audited: audited.len(),
        audited_by: by_resource(&audited),
        converged,
        peak_kib,
        restart_changed: changed,
        restart_writes: writes.len(),
        restart_kit_writes: writes.iter().filter(|e| is_kit(e)).count(),
        restart_writes_by: by_resource(&writes),
        load,
        ..Kitted::default()
    }
}

/// The four sources (and for skiff, a Mirror of each selecting `KIT=<slug>`).
fn create_sources(cp: &ControlPlane, launch: &Launch) {
    let namespace = launch.operator.source_namespace();
    let (key, value) = launch.selector;
    for object in &OBJECTS {
        let mut source: Value = serde_json::from_str(object.content).expect("kit content");
        source["apiVersion"] = json!(object.api_version);
        source["kind"] = json!(object.kind);
        source["metadata"] = json!({"name": object.name, "namespace": namespace});
        if !launch.operator.is_skiff() {
            source["metadata"]["labels"] = json!({ launch.source_label(): "true" });
        }
        cp.apply(&source.to_string());
        if launch.operator.is_skiff() {
            let mirror = json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
                "metadata": {"name": object.name, "namespace": namespace},
                "spec": {"source": {"kind": object.kind, "name": object.name},
                         "namespaceSelector": {"matchLabels": {key: value}}}});
            cp.apply(&mirror.to_string());
        }
    }
}

/// Until the operator has nothing left to do: skiff's four Mirrors Ready for the generation
/// they have; then a few quiet seconds for either.
fn wait_idle(cp: &ControlPlane, launch: &Launch, replica: &Replica) {
    let started = Instant::now();
    let namespace = launch.operator.source_namespace();
    let ready = |name: &str| {
        let Some(mirror) = cp.object("mirror", namespace, name) else {
            return false;
        };
        let conditions = mirror["status"]["conditions"].as_array().cloned();
        mirror["status"]["observedGeneration"] == mirror["metadata"]["generation"]
            && conditions
                .unwrap_or_default()
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
    };
    while launch.operator.is_skiff() && !OBJECTS.iter().all(|o| ready(o.name)) {
        assert!(
            started.elapsed() < STEP,
            "the kit's Mirrors never became Ready; log:\n{}",
            replica.logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(3));
}

/// Every kit object of the operator's namespaces and its resourceVersion.
pub fn versions(cp: &ControlPlane, slug: &str) -> BTreeMap<String, String> {
    let prefix = format!("kit-{slug}-");
    let template =
        "jsonpath={range .items[*]}{.metadata.namespace} {.metadata.resourceVersion}{\"\\n\"}{end}";
    let mut all = BTreeMap::new();
    for object in &OBJECTS {
        let out = cp.kubectl_ok(&["get", object.resource, "-A", "-o", template]);
        for (ns, rv) in out.lines().filter_map(|l| l.split_once(' ')) {
            if ns.starts_with(&prefix) {
                all.insert(format!("{}/{ns}", object.resource), rv.to_owned());
            }
        }
    }
    all
}

/// SIGTERM to the converged leader, a new replica, and after [`RESTART_WATCH`]: the kit objects
/// whose resourceVersion changed, and its writes in the audit log (the Lease aside).
fn restart(
    cp: &ControlPlane,
    launch: &Launch,
    watch: &LeaseWatch,
    first: Replica,
) -> (usize, Vec<AuditEvent>) {
    let before = versions(cp, launch.operator.slug);
    let (_second, since) = replace_leader(launch, watch, first);
    std::thread::sleep(RESTART_WATCH);
    let after = versions(cp, launch.operator.slug);
    let changed = after
        .iter()
        .filter(|(key, rv)| before.get(*key) != Some(rv))
        .count();
    let writes = requests(cp, launch.operator, since, SystemTime::now())
        .into_iter()
        .filter(|e| e.is_write() && !e.is_lease())
        .collect();
    (changed, writes)
}
