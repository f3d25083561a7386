//! e2e: the image's static binary, run as the shipped Deployment's pod, leads and mirrors.
//!
//! Why: skiff ships as a `FROM scratch` image. A binary that needs a dynamic loader, a file
//! from the build machine, a writable root or a config other than what a pod gets would work
//! in every other test and fail on the first rollout. Here the binary `make image` copies runs
//! alone in an empty, read-only root, as the Deployment's user, with the Deployment's args and
//! only the in-cluster configuration (see `crate::support::pod`), against a real API server. Its
//! `/metrics` is the manifest's: HTTPS, and only for a token bound to `skiff-metrics-reader`.

use std::time::{Duration, Instant};

use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, require_e2e_binaries};
use crate::support::lease::LeaseReader;
use crate::support::metrics_reader::service_account_token;
use crate::support::pod::{PodSpec, start_pod};
use crate::support::scrape::{Trust, scrape_https};
use crate::support::skiff::{TempDir, eventually, free_port, http_get};
use serde_json::Value;

/// Starting, acquiring, fanning out and exiting are quick; the machine may be busy compiling.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);
const POD: &str = "skiff-7d9f-x2k4q";
const LABEL: (&str, &str) = ("e2e-container", "yes");

fn source_and_mirror(cp: &ControlPlane) -> Value {
    let data = serde_json::json!({"ca.crt": "container test CA"});
    cp.apply(
        &serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "pod-ca", "namespace": OPERATOR_NAMESPACE},
            "data": data,
        })
        .to_string(),
    );
    cp.apply(
        &serde_json::json!({
            "apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {"name": "pod-ca", "namespace": OPERATOR_NAMESPACE},
            "spec": {
                "source": {"kind": "ConfigMap", "name": "pod-ca"},
                "namespaceSelector": {"matchLabels": {LABEL.0: LABEL.1}},
            },
        })
        .to_string(),
    );
    data
}

fn copy_data(cp: &ControlPlane, namespace: &str) -> Option<Value> {
    cp.object("configmap", namespace, "pod-ca")
        .map(|copy| copy["data"].clone())
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn the_image_binary_runs_as_the_deployment_pod() {
    require_e2e_binaries();
    let cp = ControlPlane::installed();
    let data = source_and_mirror(cp);
    let namespaces = [
        cp.create_namespace("pod-team", &[LABEL]),
        cp.create_namespace("pod-team", &[LABEL]),
    ];
    let spec = PodSpec::from_deployment();
    let (probe_port, metrics_port) = (free_port(), free_port());
    let dir = TempDir::new("e2e-container");
    let started = Instant::now();
    let mut pod = start_pod(
        cp,
        &dir,
        POD,
        &spec,
        &spec.args_on_ports(probe_port, metrics_port),
    );

    let mut lease = LeaseReader::new(cp);
    let holder_prefix = format!("{POD}_");
    let leads = eventually(STEP_TIMEOUT, || {
        let exited = !pod.skiff.is_running();
        exited
            || lease
                .read()
                .is_some_and(|l| l.holder.starts_with(&holder_prefix))
    });
    let exit = pod.skiff.child.try_wait().ok().flatten();
    assert!(
        leads && exit.is_none(),
        "the pod never held the Lease (exit: {exit:?}); log:\n{}",
        pod.skiff.logs()
    );
    eprintln!(
        "container: the pod led {} ms after start",
        started.elapsed().as_millis()
    );

    for namespace in &namespaces {
        let copied = eventually(STEP_TIMEOUT, || {
            copy_data(cp, namespace) == Some(data.clone())
        });
        assert!(copied, "no copy in {namespace}; log:\n{}", pod.skiff.logs());
    }
    let ready = http_get(probe_port, "/readyz").map(|(status, _)| status);
    assert_eq!(ready, Some(200), "/readyz; log:\n{}", pod.skiff.logs());
    let reader = service_account_token(cp, "pod-scraper", true);
    let anonymous = scrape_https(metrics_port, None, Trust::Any);
    assert!(
        matches!(anonymous, Ok((401, _))),
        "/metrics without a token over HTTPS: {anonymous:?}; log:\n{}",
        pod.skiff.logs()
    );
    let (status, metrics) = scrape_https(metrics_port, Some(&reader), Trust::Any)
        .unwrap_or_else(|e| panic!("/metrics over HTTPS: {e}; log:\n{}", pod.skiff.logs()));
    assert_eq!(status, 200, "{metrics}\nlog:\n{}", pod.skiff.logs());
    assert!(
        metrics.contains("leader_election_master_status{name=\"skiff-leader\"} 1"),
        "/metrics does not report leading:\n{metrics}"
    );

    pod.skiff.terminate(STEP_TIMEOUT);
    let released = lease.read().expect("the Lease exists");
    assert_eq!(
        (released.holder.as_str(), released.duration_seconds),
        ("", 1),
        "the Deployment's args release the Lease on SIGTERM; log:\n{}",
        pod.skiff.logs()
    );

    let log = pod.skiff.logs();
    let not_json: Vec<&str> = log
        .lines()
        .filter(|line| serde_json::from_str::<Value>(line).is_err())
        .collect();
    assert!(
        !log.is_empty() && not_json.is_empty(),
        "the Deployment asks for JSON logs; these lines are not JSON: {not_json:?}"
    );
}
