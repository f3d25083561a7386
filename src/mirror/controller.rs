//! The Mirror controller as the manager runs it: watches feed the caches, and once every
//! cache is filled, workers reconcile the Mirrors the events name.
//!
//! Reconciling before the caches are full would read a partial world (a namespace list that
//! is still loading looks like namespaces no longer selected), so nothing is reconciled
//! until every first list has arrived, and a reconcile waits while a relist is under way.

use super::caches::{Caches, SourceScope};
use super::kind_checks::KindChecks;
use super::reconcile::Reconciler;
use super::secret_targets::SecretTargets;
use crate::flags::SelfService;
use crate::kube::Client;
use crate::kube::events::Recorder;
use crate::runtime::Runnable;
use crate::runtime::{Action, Controller};
use crate::signal::Signal;
use smol::future::FutureExt as _;
use std::sync::Arc;

/// Mirrors reconciled at once. Each reconcile fans out its own writes, so a few suffice.
pub const WORKERS: usize = 4;

/// The Mirror controller, writing through `client` (the fenced main client).
pub fn runnable(
    client: Client,
    scope: SourceScope,
    secret_targets: SecretTargets,
    self_service: Option<SelfService>,
    kinds: KindChecks,
    identity: &str,
) -> Runnable {
    let identity = identity.to_owned();
    Runnable::new("mirror controller", move |stop| {
        run(
            client.clone(),
            scope.clone(),
            secret_targets.clone(),
            self_service.clone(),
            kinds.clone(),
            identity.clone(),
            stop,
        )
    })
}

async fn run(
    client: Client,
    scope: SourceScope,
    secret_targets: SecretTargets,
    self_service: Option<SelfService>,
    kinds: KindChecks,
    identity: String,
    stop: Signal,
) {
    let controller = Controller::new("mirror", WORKERS);
    super::contest::declare_metric();
    let caches = Caches::new(&scope, &secret_targets, self_service.as_ref(), &kinds.kinds);
    let _watches = caches.spawn_watches(&client, &controller.queue());
    if !until_listed(&caches, &stop).await {
        return;
    }
    log::info!("mirror caches filled; reconciling");
    // In-flight reconciles see the stop too: their requests stop waiting and sending, and the
    // writes they have not made are left to the next run.
    let client = client.with_cancel(stop.clone());
    let recorder = Recorder::new(&client, "skiff", &identity);
    let listed = Arc::new(caches.clone());
    let reconciler = Arc::new(Reconciler::new(
        client,
        caches,
        scope,
        secret_targets,
        kinds,
        recorder,
        stop.clone(),
    ));
    let gate_stop = stop.clone();
    let reconcile = move |key| {
        let (reconciler, listed, stop) = (
            Arc::clone(&reconciler),
            Arc::clone(&listed),
            gate_stop.clone(),
        );
        async move {
            if !until_listed(&listed, &stop).await {
                return Ok(Action::Done);
            }
            reconciler.reconcile(key).await
        }
    };
    controller
        .run(reconcile, async move { stop.wait().await })
        .await;
}

/// Waits until every cache holds a complete list; false if `stop` came first.
async fn until_listed(caches: &Caches, stop: &Signal) -> bool {
    let listed = async {
        caches.wait_until_ready().await;
        true
    };
    listed
        .or(async {
            stop.wait().await;
            false
        })
        .await
}
