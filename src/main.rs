//! The skiff binary: flags → config → clients → manager → exit code.
//!
//! Exit codes: 0 after a signal (and for `--help`), 2 for bad flags, 1 for a failure at start
//! or a lost lease.
#![forbid(unsafe_code)]

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use async_signal::{Signal, Signals};
use skiff::flags::{self, FlagError, Settings, SourceNamespaces};
use skiff::kube::{Client, Config, LoadOptions};
use skiff::leader::{ClientLeaseApi, Elector, Timing};
use skiff::manager::{self, Shutdown};
use skiff::mirror::{self, SourceScope};
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

async fn run(settings: &Settings) -> Result<(), String> {
    // Registered first, so a signal during start-up or standby is not the default (kill).
    let mut signals = Signals::new([Signal::Term, Signal::Int])
        .map_err(|e| format!("cannot watch for SIGTERM/SIGINT: {e}"))?;
    let mut config = Config::load(&LoadOptions {
        kubeconfig: settings.kubeconfig.clone(),
        context: settings.context.clone(),
    })
    .map_err(|e| e.to_string())?;
    config.qps = settings.kube_api_qps;
    config.burst = settings.kube_api_burst.get();
    let scope = source_scope(settings, config.namespace.as_deref())?;
    let identity = skiff::leader::identity();
    let probes = Arc::new(Probes::new());
    start_servers(settings, &probes).await?;

    let main_client = Client::new(config.clone()).map_err(|e| e.to_string())?;
    let (elector, main_client) = if settings.leader_elect {
        let elector = elector(settings, &config, &identity)?;
        let fence = elector.fence();
        let health = fence.clone();
        probes.add_check(
            "leader-election",
            Box::new(move || health.healthy(Instant::now())),
        );
        (Some(elector), main_client.with_write_guard(Arc::new(fence)))
    } else {
        (None, main_client)
    };
    let runnables = vec![mirror::runnable(main_client, scope, &identity)];
    let signal = async move {
        match signals.next().await {
            Some(Ok(signal)) => log::info!("received {signal:?}, shutting down"),
            Some(Err(e)) => log::error!("waiting for signals failed, shutting down: {e}"),
            None => {}
        }
    };
    let shutdown = Shutdown {
        graceful_timeout: settings.graceful_shutdown_timeout,
        release_on_cancel: settings.release_on_cancel,
    };
    manager::run(elector, runnables, signal, shutdown)
        .await
        .map_err(|e| e.to_string())
}

/// The elector over a client of its own, derived from the base config (never shared).
fn elector(
    settings: &Settings,
    config: &Config,
    identity: &str,
) -> Result<Elector<ClientLeaseApi>, String> {
    let namespace = settings
        .leader_election_namespace
        .clone()
        .or_else(|| config.namespace.clone())
        .ok_or("--leader-election-namespace is needed: skiff is not running in a pod and the kubeconfig context names no namespace")?;
    let lease_config =
        config.for_leader_election(settings.leader_elect_qps, settings.leader_elect_burst.get());
    let lease_client = Client::new(lease_config).map_err(|e| e.to_string())?;
    let api = ClientLeaseApi::new(
        lease_client,
        &namespace,
        &settings.leader_election_id,
        identity,
    );
    let timing = Timing::new(
        settings.lease_duration,
        settings.renew_deadline,
        settings.retry_period,
    )
    .map_err(|e| e.to_string())?;
    log::info!(
        "leader election on Lease {namespace}/{} as {identity}",
        settings.leader_election_id
    );
    Elector::new(api, identity.to_owned(), timing).map_err(|e| e.to_string())
}

/// `--source-namespaces`, with "the namespace skiff runs in" resolved.
fn source_scope(settings: &Settings, own: Option<&str>) -> Result<SourceScope, String> {
    Ok(match &settings.source_namespaces {
        SourceNamespaces::All => SourceScope::All,
        SourceNamespaces::Only(list) => SourceScope::Namespaces(list.iter().cloned().collect()),
        SourceNamespaces::Own => {
            let own = own.ok_or("--source-namespaces is needed: skiff is not running in a pod and the kubeconfig context names no namespace")?;
            SourceScope::Namespaces(BTreeSet::from([own.to_owned()]))
        }
    })
}

/// Binds the probe and metrics addresses (failing at start, naming the flag) and serves them.
async fn start_servers(settings: &Settings, probes: &Arc<Probes>) -> Result<(), String> {
    let listener = serve::bind(
        settings.health_probe_bind_address,
        "--health-probe-bind-address",
    )
    .await?;
    smol::spawn(serve::serve_probes(listener, probes.clone())).detach();
    if let Some(addr) = settings.metrics_bind_address {
        let listener = serve::bind(addr, "--metrics-bind-address").await?;
        smol::spawn(serve::serve_metrics(listener)).detach();
    }
    probes.set_ready(true);
    Ok(())
}
