//! The built binary's probes and metrics while it leads and while it stands by: `/healthz` ok
//! while renewing, `leader_election_master_status` 1 only on the leader, and the lease
//! client's own request counters. Both servers bind port 0 and are found by the port skiff logs.

use crate::support::fake::FakeServer;
use crate::support::lease::LEASE_PATH;
use crate::support::skiff::{
    SHORT_LEASE, Skiff, TempDir, eventually, fan_out_world, http_get, write_kubeconfig,
};
use std::time::Duration;

const LEADING: &str = "leader_election_master_status{name=\"skiff-leader\"} 1";
const STANDING_BY: &str = "leader_election_master_status{name=\"skiff-leader\"} 0";
const LEASE_REQUESTS: &str = "rest_client_requests_total{client=\"leader-election\"";

struct Replica {
    skiff: Skiff,
    probes: u16,
    metrics: u16,
}

fn start(dir: &TempDir, server: &FakeServer, pod: &str) -> Replica {
    let kubeconfig = write_kubeconfig(dir, &server.url(), None, None, "skiff-system");
    let mut args: Vec<&str> = SHORT_LEASE.to_vec();
    // Port 0 on both: the ports skiff logs are the ones it serves.
    // Plain HTTP: this test reads who leads; secure metrics have tests of their own.
    args.extend([
        "--health-probe-bind-address=127.0.0.1:0",
        "--metrics-bind-address=127.0.0.1:0",
        "--metrics-secure=false",
    ]);
    let log = dir.0.join(format!("{pod}.log"));
    let skiff = Skiff::start_with_env(&kubeconfig, log, &args, &[("POD_NAME", pod)]);
    let probes = skiff.bound_port("--health-probe-bind-address");
    let metrics = skiff.bound_port("--metrics-bind-address");
    Replica {
        skiff,
        probes,
        metrics,
    }
}

fn metrics(replica: &Replica) -> String {
    http_get(replica.metrics, "/metrics").map_or_else(String::new, |(_, body)| body)
}

/// The lease client's successful PUTs, as its counter says in the metrics `text` (0 when absent).
fn lease_puts(text: &str) -> f64 {
    text.lines()
        .find(|l| {
            l.starts_with(LEASE_REQUESTS)
                && l.contains("code=\"200\"")
                && l.contains("method=\"PUT\"")
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// How long the test waits for a replica to lead, start or renew three times (a second or two
/// with a 500 ms retry period): a liveness bound.
const LIVENESS: Duration = Duration::from_secs(30);

#[test]
fn healthz_and_metrics_show_who_leads_while_renewing() {
    let server = FakeServer::start();
    fan_out_world(&server, 5);
    let dir = TempDir::new("probes");
    let leader = start(&dir, &server, "replica-a");
    let leading = eventually(LIVENESS, || metrics(&leader).contains(LEADING));
    assert!(
        leading,
        "metrics:\n{}\nlog:\n{}",
        metrics(&leader),
        leader.skiff.logs()
    );
    let holder = server.get(LEASE_PATH).expect("lease")["spec"]["holderIdentity"].clone();
    assert!(
        holder.as_str().is_some_and(|h| h.starts_with("replica-a_")),
        "{holder}"
    );
    let standby = start(&dir, &server, "replica-b");
    let up = eventually(LIVENESS, || metrics(&standby).contains(LEASE_REQUESTS));
    assert!(up, "standby metrics:\n{}", metrics(&standby));
    // A few renewals later: still healthy, still leading, counted by the lease client.
    let renewed = eventually(LIVENESS, || lease_puts(&metrics(&leader)) >= 3.0);
    assert!(renewed, "metrics:\n{}", metrics(&leader));
    for replica in [&leader, &standby] {
        assert_eq!(http_get(replica.probes, "/healthz").map(|r| r.0), Some(200));
        assert_eq!(http_get(replica.probes, "/readyz").map(|r| r.0), Some(200));
    }
    let text = metrics(&leader);
    assert!(text.contains(LEADING), "{text}");
    assert!(
        text.contains("rest_client_requests_total{client=\"main\""),
        "{text}"
    );
    let standby_text = metrics(&standby);
    assert!(standby_text.contains(STANDING_BY), "{standby_text}");
    assert!(!standby_text.contains(LEADING), "{standby_text}");
}
