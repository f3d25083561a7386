//! Wiring: the binary's secure `/metrics` reviews its callers through the main client's
//! connections, past the leader-election fence, and never through the lease client.
//!
//! Why: the reviews are POSTs. Sent through the fenced client, a standby would refuse them
//! itself and answer no scrape; sent through the lease client, a slow review could delay a
//! renewal. The fake API server records which TCP connection carried each request, and does not
//! answer reviews, so this also pins that a failed review fails closed.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::support::fake::{FakeServer, RequestClass};
use crate::support::scrape::{Trust, scrape_https};
use crate::support::skiff::{
    HOME_NS, SHORT_LEASE, Skiff, TempDir, eventually, free_port, write_kubeconfig,
};
use serde_json::json;

const STEP_TIMEOUT: Duration = Duration::from_secs(20);

fn is_token_review(r: &crate::support::fake::RequestRecord) -> bool {
    r.method == "POST" && r.path.ends_with("/tokenreviews")
}

#[test]
fn a_standby_reviews_scrapers_on_the_main_clients_connections_only() {
    let server = FakeServer::start();
    server.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HOME_NS}}));
    server.insert(
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "skiff-leader", "namespace": HOME_NS},
        "spec": {"holderIdentity": "another-replica", "leaseDurationSeconds": 3600}}),
    );
    let dir = TempDir::new("wiring-reviews");
    let kubeconfig = write_kubeconfig(&dir, &server.url(), None, None, HOME_NS);
    let port = free_port();
    let metrics = format!("--metrics-bind-address=127.0.0.1:{port}");
    let mut args: Vec<&str> = SHORT_LEASE.to_vec();
    args.push(&metrics);
    let skiff = Skiff::start(&kubeconfig, dir.0.join("skiff.log"), &args);

    let serving = eventually(STEP_TIMEOUT, || {
        matches!(scrape_https(port, None, Trust::Any), Ok((401, _)))
    });
    assert!(serving, "no 401 without a token; log:\n{}", skiff.logs());
    for _ in 0..3 {
        let answer = scrape_https(port, Some("some-token"), Trust::Any);
        assert!(
            matches!(&answer, Ok((status, _)) if *status != 200),
            "an unreviewed token got {answer:?}"
        );
    }

    let records = server.requests();
    let lease_connections: BTreeSet<u64> = records
        .iter()
        .filter(|r| r.class == RequestClass::Lease)
        .map(|r| r.conn_id)
        .collect();
    let reviews: Vec<_> = records.iter().filter(|r| is_token_review(r)).collect();
    assert!(
        !lease_connections.is_empty(),
        "the standby never read its Lease"
    );
    assert_eq!(
        reviews.len(),
        3,
        "one review per scrape (failures are not cached); log:\n{}",
        skiff.logs()
    );
    assert!(
        reviews
            .iter()
            .all(|r| !lease_connections.contains(&r.conn_id)),
        "a review went over a lease client connection"
    );
    let leading = records.iter().any(|r| {
        r.class == RequestClass::Lease && r.method == "PUT" && (200..300).contains(&r.status)
    });
    assert!(!leading, "the replica should be a standby");
    let started = format!("starting {}", skiff_version_line());
    assert!(skiff.logs().contains(&started), "{}", skiff.logs());
}

/// What `skiff --version` prints, which the start log line repeats.
fn skiff_version_line() -> String {
    let out = std::process::Command::new(crate::support::skiff::binary())
        .arg("--version")
        .output()
        .expect("run skiff --version");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}
