//! The skiff binary: flags → config → replica wiring → manager → exit code.
//!
//! Exit codes: 0 after a signal (and for `--help`), 2 for bad flags, 1 for a failure at start
//! or a lost lease.
#![forbid(unsafe_code)]

use std::process::ExitCode;
use std::sync::Arc;

use async_signal::{Signal, Signals};
use skiff::clock::Clock;
use skiff::flags::{self, FlagError, Settings};
use skiff::kube::{Client, LoadOptions};
use skiff::manager::{self, Shutdown};
use skiff::mirror;
use skiff::replica::Replica;
use skiff::serve::{self, MetricsAuth, MetricsSecurity, Probes};
use smol::future::FutureExt as _;
use smol::stream::StreamExt as _;

fn main() -> ExitCode {
    skiff::heap::configure();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let settings = match flags::parse(&args) {
        Ok(settings) => settings,
        Err(FlagError::Help(text)) => {
            println!("{text}");
            return ExitCode::SUCCESS;
        }
        Err(FlagError::Version) => {
            println!("{}", skiff::version::describe());
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
    log::info!("starting {} {settings}", skiff::version::describe());
    skiff::fd_limit::raise_and_log();
    skiff::version::register_build_info();
    // The lease runs on this thread: its stack is released whenever the root future waits
    // (see skiff::stack).
    match smol::block_on(skiff::stack::Releasing::new(|| run(&settings))) {
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
    let config = LoadOptions {
        kubeconfig: settings.kubeconfig.clone(),
        context: settings.context.clone(),
        impersonate: settings.impersonate.clone(),
    }
    .load()
    .map_err(|e| e.to_string())?;
    let identity = skiff::leader::identity();
    let kinds = mirror::KindChecks::new(settings.kinds.clone(), config.namespace.clone());
    let own_namespace = config.namespace.clone();
    let clock = Clock::real();
    let replica = Replica::wire(settings, config, &identity, clock.clone())?;
    let required = settings.require_write_policy;
    skiff::policy_check::at_start(&replica.reviewer, own_namespace.as_deref(), required).await?;
    let step_down = replica.step_down();
    let own_pod_deleted = replica.own_pod_deleted();
    let probes = Arc::new(Probes::new(replica.health_checks()));
    start_servers(settings, &probes, &replica.reviewer).await?;
    let secret_targets = mirror::SecretTargets::new(settings.secret_target_names.clone());
    let options = mirror::controller::Options {
        scope: replica.scope,
        secret_targets,
        self_service: settings.self_service.clone(),
        kinds,
        placed: replica.placed,
        fleet: (replica.placer.zip(settings.fleet_hub.as_ref()))
            .map(|(client, hub)| (client, hub.member_silence_after)),
    };
    let runnables = vec![mirror::runnable(replica.main, options, &identity)];
    smol::spawn(skiff::heap::release_when_idle()).detach();
    smol::spawn(skiff::stack::release_periodically()).detach();
    let signal = async move {
        let signal = async move {
            match signals.next().await {
                Some(Ok(signal)) => log::info!("received {signal:?}, shutting down"),
                Some(Err(e)) => log::error!("waiting for signals failed, shutting down: {e}"),
                None => {}
            }
        };
        signal.or(own_pod_deleted).await
    };
    let shutdown = Shutdown {
        graceful_timeout: settings.graceful_shutdown_timeout,
        release_on_cancel: settings.release_on_cancel,
    };
    manager::run(
        replica.elector,
        runnables,
        signal,
        shutdown,
        step_down,
        &clock,
    )
    .await
    .map_err(|lost| format!("{lost}; controllers cancelled"))
}

/// Binds the probe and metrics addresses (failing at start, naming the flag) and serves them;
/// secure metrics review their callers through `reviewer`.
async fn start_servers(
    settings: &Settings,
    probes: &Arc<Probes>,
    reviewer: &Client,
) -> Result<(), String> {
    let listener = serve::bind(
        settings.health_probe_bind_address,
        "--health-probe-bind-address",
    )
    .await?;
    smol::spawn(serve::serve_probes(listener, probes.clone())).detach();
    if let Some(addr) = settings.metrics_bind_address {
        let security = metrics_security(settings, reviewer)?;
        let listener = serve::bind(addr, "--metrics-bind-address").await?;
        smol::spawn(serve::serve_metrics(listener, security)).detach();
    }
    probes.set_ready(true);
    Ok(())
}

/// HTTPS with reviewed callers (the certificate from `--metrics-cert-dir` or self-signed), or
/// plain HTTP with `--metrics-secure=false`.
fn metrics_security(settings: &Settings, reviewer: &Client) -> Result<MetricsSecurity, String> {
    if !settings.metrics_secure {
        log::info!("serving /metrics over plain HTTP to anyone (--metrics-secure=false)");
        return Ok(MetricsSecurity::Plain);
    }
    let tls = serve::metrics_tls_acceptor(settings.metrics_cert_dir.as_deref())?;
    Ok(MetricsSecurity::Secure {
        tls,
        auth: MetricsAuth::new(reviewer.clone()),
    })
}
