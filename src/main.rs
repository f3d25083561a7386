//! The skiff binary: flags → logging → probes/metrics server → wait for SIGTERM/SIGINT → exit code.
//!
//! Exit codes: 0 after a signal (and for `--help`), 2 for bad flags, 1 for a failure at start.
#![forbid(unsafe_code)]

use std::process::ExitCode;
use std::sync::Arc;

use async_signal::{Signal, Signals};
use skiff::flags::{self, FlagError, Settings};
use skiff::serve::{self, Probes};
use smol::stream::StreamExt as _;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let settings = match flags::parse(&args) {
        Ok(settings) => settings,
        Err(FlagError::Help(text)) => {
            println!("{text}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("skiff: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = skiff::log::init(settings.log_format, settings.log_level) {
        eprintln!("skiff: cannot start logging: {e}");
        return ExitCode::FAILURE;
    }
    log::info!("starting skiff {} {settings}", env!("CARGO_PKG_VERSION"));
    match smol::block_on(run(&settings)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            log::error!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// Serves probes and metrics until SIGTERM or SIGINT.
async fn run(settings: &Settings) -> Result<(), String> {
    let mut signals = Signals::new([Signal::Term, Signal::Int])
        .map_err(|e| format!("cannot watch for SIGTERM/SIGINT: {e}"))?;
    let probes = Arc::new(Probes::new());
    let probe_listener = serve::bind(
        settings.health_probe_bind_address,
        "--health-probe-bind-address",
    )
    .await?;
    let _probe_server = smol::spawn(serve::serve_probes(probe_listener, probes.clone()));
    let _metrics_server = match settings.metrics_bind_address {
        Some(addr) => {
            let listener = serve::bind(addr, "--metrics-bind-address").await?;
            Some(smol::spawn(serve::serve_metrics(listener)))
        }
        None => None,
    };
    probes.set_ready(true);
    match signals.next().await {
        Some(Ok(signal)) => log::info!("received {signal:?}, shutting down"),
        Some(Err(e)) => return Err(format!("waiting for SIGTERM/SIGINT failed: {e}")),
        None => {}
    }
    Ok(())
}
