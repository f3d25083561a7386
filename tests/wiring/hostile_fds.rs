//! Wiring: the binary raises its open-file limit at start, and a flood on its probe and metrics
//! ports never leaves its API clients without a file descriptor to dial with.
//!
//! Why: pods often start with a soft limit of 1,024 open files. Each hostile connection costs
//! one; if the servers took them all, the lease client could not redial after its connection
//! broke (EMFILE), and the leader would lose its Lease to a flood. Here skiff runs under a hard
//! limit of 300 while 3,000 silent connections hit each port, and the fake API server resets a
//! lease request, so the lease client must dial anew during the flood.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::fake::{Fault, RequestClass};
use crate::support::flood::{Attack, Flood, open_fds};
use crate::support::skiff::{
    SHORT_LEASE, Skiff, TempDir, binary, eventually, fan_out_world, free_port, is_lease_hold,
    write_kubeconfig,
};

/// The hard (and soft) open-file limit skiff runs under.
const OPEN_FILES: u64 = 300;

/// skiff as launched, under `prlimit --nofile=<soft>:<hard>`.
fn start_limited(kubeconfig: &Path, log: &Path, soft: u64, hard: u64, args: &[String]) -> Skiff {
    let stderr = std::fs::File::create(log).expect("create log file");
    let child = Command::new("prlimit")
        .arg(format!("--nofile={soft}:{hard}"))
        .arg("--")
        .arg(binary())
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start skiff under prlimit (util-linux)");
    Skiff {
        child,
        log: log.to_owned(),
    }
}

/// `Max open files` of `pid`: (soft, hard).
fn open_file_limits(pid: u32) -> Option<(u64, u64)> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let mut numbers = line.split_whitespace().filter_map(|w| w.parse().ok());
    Some((numbers.next()?, numbers.next()?))
}

#[test]
fn the_soft_open_file_limit_is_raised_to_the_hard_one_at_start() {
    let server = crate::support::fake::FakeServer::start();
    let dir = TempDir::new("wiring-fd-raise");
    let kubeconfig = write_kubeconfig(&dir, &server.url(), None, None, "skiff-system");
    let args = ["--health-probe-bind-address=127.0.0.1:0".to_owned()];
    let skiff = start_limited(&kubeconfig, &dir.0.join("skiff.log"), 512, 4096, &args);
    let raised = eventually(Duration::from_secs(10), || {
        open_file_limits(skiff.child.id()) == Some((4096, 4096))
    });
    assert!(
        raised,
        "limits {:?}; log:\n{}",
        open_file_limits(skiff.child.id()),
        skiff.logs()
    );
    assert!(
        skiff
            .logs()
            .contains("raised the open-file limit from 512 to 4096")
    );
}

#[test]
fn a_flood_on_both_ports_leaves_the_lease_client_room_to_redial() {
    let _ = skiff::fd_limit::raise();
    let server = crate::support::fake::FakeServer::start();
    fan_out_world(&server, 20);
    let dir = TempDir::new("wiring-fd-flood");
    let kubeconfig = write_kubeconfig(&dir, &server.url(), None, None, "skiff-system");
    let (probes, metrics) = (free_port(), free_port());
    let mut args: Vec<String> = SHORT_LEASE.iter().map(|a| a.to_string()).collect();
    args.push(format!("--health-probe-bind-address=127.0.0.1:{probes}"));
    args.push(format!("--metrics-bind-address=127.0.0.1:{metrics}"));
    args.push("--metrics-secure=false".into());
    let log = dir.0.join("skiff.log");
    let mut skiff = start_limited(&kubeconfig, &log, OPEN_FILES, OPEN_FILES, &args);
    let leading = eventually(Duration::from_secs(20), || {
        server.requests().iter().any(is_lease_hold)
    });
    assert!(leading, "not leading; log:\n{}", skiff.logs());

    let at = |port| SocketAddr::from(([127, 0, 0, 1], port));
    let floods = [
        Flood::start(at(probes), Attack::Slowloris, 3000),
        Flood::start(at(metrics), Attack::Slowloris, 3000),
    ];
    std::thread::sleep(Duration::from_secs(1));
    let flood_began = Instant::now();
    server.set_fault_times(RequestClass::Lease, Fault::Reset, 1);
    let mut most_fds = 0;
    while !floods.iter().all(Flood::all_attempted)
        && flood_began.elapsed() < Duration::from_secs(60)
    {
        most_fds = most_fds.max(open_fds(skiff.child.id()).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(50));
    }
    let renewed_after_resets = eventually(Duration::from_secs(10), || {
        let records = server.requests();
        let resets: Vec<Instant> = records
            .iter()
            .filter(|r| r.class == RequestClass::Lease && r.status == 0)
            .map(|r| r.received)
            .collect();
        !resets.is_empty()
            && records
                .iter()
                .any(|r| is_lease_hold(r) && r.received > resets[resets.len() - 1])
    });
    let logs = skiff.logs();
    assert!(
        skiff.is_running(),
        "skiff exited under the flood; log:\n{logs}"
    );
    assert!(
        renewed_after_resets,
        "no renewal after the resets; log:\n{logs}"
    );
    assert!(
        !logs.contains("Too many open files"),
        "EMFILE; log:\n{logs}"
    );
    assert!(most_fds < OPEN_FILES as usize, "{most_fds} open files");
    println!("fds at the worst: {most_fds} of {OPEN_FILES}");
    skiff.terminate(Duration::from_secs(10));
}
