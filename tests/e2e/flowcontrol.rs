//! e2e: API Priority and Fairness puts skiff's Lease requests in the `leader-election` level.
//!
//! Why: skiff's own client keeps lease traffic apart from controller traffic, but the API server
//! queues requests too. The shipped FlowSchema must route the ServiceAccount's Lease requests
//! (and only those) to `leader-election`; the server says where a request went in the
//! `X-Kubernetes-PF-PriorityLevel-UID` and `X-Kubernetes-PF-FlowSchema-UID` response headers.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::support::control_plane::{ControlPlane, require_e2e_binaries};
use crate::support::lease::LEASE_PATH;

/// The API server picks up a new FlowSchema from its informer within a second or two.
const CLASSIFICATION_TIMEOUT: Duration = Duration::from_secs(30);

/// The shared control plane with the manifests and skiff's Lease (created once: concurrent
/// applies of a new object race to create it).
fn control_plane() -> &'static ControlPlane {
    static WITH_LEASE: OnceLock<&'static ControlPlane> = OnceLock::new();
    WITH_LEASE.get_or_init(|| {
        let cp = ControlPlane::installed();
        cp.apply(
            r#"{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "skiff-leader", "namespace": "skiff-system"}, "spec": {}}"#,
        );
        cp
    })
}

fn uid(cp: &ControlPlane, kind: &str, name: &str) -> String {
    let uid = cp.kubectl_ok(&["get", kind, name, "-o", "jsonpath={.metadata.uid}"]);
    assert!(!uid.is_empty(), "{kind}/{name} has no uid");
    uid
}

/// (FlowSchema UID, PriorityLevel UID) of an operator GET of `path`, once the request succeeds
/// and `wanted` holds for it, or the last answer after the timeout.
fn classify(cp: &ControlPlane, path: &str, wanted: impl Fn(&str) -> bool) -> (String, String) {
    let deadline = Instant::now() + CLASSIFICATION_TIMEOUT;
    loop {
        let response = cp.raw_get(path, cp.operator_token());
        assert_eq!(
            response.status, 200,
            "GET {path} as the operator: {}",
            response.body
        );
        let header = |name: &str| response.header(name).unwrap_or_default().to_owned();
        let flow_schema = header("X-Kubernetes-PF-FlowSchema-UID");
        let priority_level = header("X-Kubernetes-PF-PriorityLevel-UID");
        if wanted(&priority_level) || Instant::now() > deadline {
            return (flow_schema, priority_level);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn lease_requests_of_the_operator_use_the_leader_election_level() {
    require_e2e_binaries();
    let cp = control_plane();
    let level = uid(cp, "prioritylevelconfiguration", "leader-election");
    let schema = uid(cp, "flowschema", "skiff-leader-election");
    let watch = format!("{LEASE_PATH}?watch=1&timeoutSeconds=1").replace(
        "/skiff-leader?",
        "?fieldSelector=metadata.name%3Dskiff-leader&",
    );
    for path in [LEASE_PATH.to_owned(), watch] {
        let (got_schema, got_level) = classify(cp, &path, |l| l == level);
        assert_eq!(
            got_level, level,
            "GET {path}: not in priority level leader-election"
        );
        assert_eq!(
            got_schema, schema,
            "GET {path}: not matched by FlowSchema skiff-leader-election"
        );
    }
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn other_requests_of_the_operator_stay_in_the_workload_level() {
    require_e2e_binaries();
    let cp = control_plane();
    let workload = uid(cp, "prioritylevelconfiguration", "workload-low");
    let path = "/api/v1/namespaces/skiff-system/configmaps";
    let (_, got_level) = classify(cp, path, |l| l == workload);
    assert_eq!(
        got_level, workload,
        "GET {path}: expected the built-in service-accounts flow"
    );
}
