//! The processes the comparison starts (operator replicas, Lease watches): registered here so
//! that Ctrl-C or SIGTERM to the run kills them before it exits. A panic kills them through
//! their `Drop`; the control plane dies with the run by its own watchdog.

use async_signal::{Signal, Signals};
use smol::stream::StreamExt as _;
use std::process::Command;
use std::sync::Mutex;

static CHILDREN: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Kills every registered child on SIGINT or SIGTERM, then exits 130.
pub fn kill_on_signal() -> Result<(), String> {
    let mut signals = Signals::new([Signal::Int, Signal::Term])
        .map_err(|e| format!("cannot watch for SIGINT/SIGTERM: {e}"))?;
    std::thread::spawn(move || {
        smol::block_on(signals.next());
        let pids: Vec<String> = lock().iter().map(u32::to_string).collect();
        if !pids.is_empty() {
            let _ = Command::new("kill").arg("-KILL").args(&pids).status();
        }
        eprintln!("compare: interrupted; killed {} processes", pids.len());
        std::process::exit(130);
    });
    Ok(())
}

pub fn register(pid: u32) {
    lock().push(pid);
}

pub fn unregister(pid: u32) {
    lock().retain(|p| *p != pid);
}

fn lock() -> std::sync::MutexGuard<'static, Vec<u32>> {
    CHILDREN.lock().unwrap_or_else(|e| e.into_inner())
}
