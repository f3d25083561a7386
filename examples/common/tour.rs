//! What the demos share: their command line, the clock their lines are stamped with, waits
//! that Ctrl-C cuts short, and Ctrl-C itself (it ends the demo at its next step, which then
//! removes everything it started).

use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE};
use crate::support::watchdog::Supervised;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static STOP: AtomicBool = AtomicBool::new(false);

/// `<demo> <path to the skiff binary> [--no-wait]`: the binary, and whether to end after the
/// tour instead of waiting for Ctrl-C. Exits 2, saying why, when the binary is missing.
pub fn arguments(demo: &str) -> (PathBuf, bool) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(skiff) = args.first().map(PathBuf::from) else {
        eprintln!("usage: {demo} <path to the skiff binary> [--no-wait]");
        std::process::exit(2);
    };
    if !skiff.exists() {
        eprintln!(
            "{demo}: {} does not exist; build it first (cargo build)",
            skiff.display()
        );
        std::process::exit(2);
    }
    (skiff, args.iter().any(|a| a == "--no-wait"))
}

/// `skiff` as a process on `cp` as the operator, leading in `skiff-system` (Lease and
/// sources there), named `name` (its `POD_NAME`, its log `<name>.log` in `cp`'s dir), with
/// `extra` flags; it dies with the demo.
pub fn leading_skiff(
    name: &'static str,
    skiff: &Path,
    cp: &ControlPlane,
    extra: &[String],
) -> Result<Supervised, String> {
    let mut args: Vec<String> = [
        "--kubeconfig",
        &cp.operator_kubeconfig().display().to_string(),
        "--leader-elect",
        "--leader-election-namespace",
        OPERATOR_NAMESPACE,
        "--source-namespaces",
        OPERATOR_NAMESPACE,
        "--health-probe-bind-address",
        "127.0.0.1:0",
        "--metrics-bind-address",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().cloned());
    Supervised::spawn_program(name, skiff, cp.dir(), &args, &[("POD_NAME", name)], None)
}

/// The demo's clock: each line says how long into the demo it was written.
pub struct Clock {
    started: Instant,
}

impl Clock {
    pub fn start() -> Clock {
        Clock {
            started: Instant::now(),
        }
    }

    pub fn say(&self, text: &str) {
        println!("[{:5.1}s] {text}", self.started.elapsed().as_secs_f64());
    }

    /// Polls `check` every 50 ms for at most `limit`: how long it took to come true.
    pub fn wait_for(
        &self,
        limit: Duration,
        what: &str,
        mut check: impl FnMut() -> bool,
    ) -> Result<Duration, String> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if stopped() {
                return Err("stopped by Ctrl-C".into());
            }
            if check() {
                return Ok(start.elapsed());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "gave up after {} s waiting until {what}",
            limit.as_secs()
        ))
    }
}

/// `text` indented to sit under a stamped line.
pub fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("          {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Returns once Ctrl-C (or SIGTERM) came.
pub fn until_stopped() {
    while !stopped() {
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Ctrl-C (SIGINT) or SIGTERM ends the demo at the next step, cleaning up on the way out.
pub fn watch_for_ctrl_c() {
    use async_signal::{Signal, Signals};
    use smol::stream::StreamExt as _;
    let Ok(mut signals) = Signals::new([Signal::Int, Signal::Term]) else {
        return;
    };
    std::thread::spawn(move || {
        smol::block_on(async {
            if signals.next().await.is_some() {
                println!("\nStopping ...");
                STOP.store(true, Ordering::Relaxed);
            }
        });
    });
}
