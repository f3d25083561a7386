//! The Mirror controller as the manager runs it: watches feed the caches, and once every
//! cache is filled, workers reconcile the Mirrors the events name.
//!
//! Reconciling before the caches are full would read a partial world (a namespace list that
//! is still loading looks like namespaces no longer selected), so nothing is reconciled
//! until every first list has arrived, and a reconcile waits while a relist is under way.

use super::caches::{Caches, SourceScope};
use super::kind_checks::KindChecks;
use super::placed::PlacedStores;
use super::placement::FleetStores;
use super::placer::Placer;
use super::reconcile::Reconciler;
use super::secret_targets::SecretTargets;
use crate::flags::SelfService;
use crate::kube::Client;
use crate::kube::events::Recorder;
use crate::runtime::Runnable;
use crate::runtime::{Action, Controller, ObjectKey};
use crate::signal::Signal;
use smol::future::FutureExt as _;
use std::sync::Arc;
use std::time::Duration;

/// Mirrors reconciled at once. Each reconcile fans out its own writes, so a few suffice.
pub const WORKERS: usize = 4;

/// What the admin set the Mirror controller to copy, and from where.
#[derive(Clone)]
pub struct Options {
    pub scope: SourceScope,
    pub secret_targets: SecretTargets,
    pub self_service: Option<SelfService>,
    pub kinds: KindChecks,
    /// On a member: its hub's share for it, and the client it reads and reports through.
    pub placed: Option<PlacedStores>,
    /// On a hub: the client its Placements are written through, and `--member-silence-after`.
    pub fleet: Option<(Client, Duration)>,
}

/// The Mirror controller, writing through `client` (the fenced main client).
pub fn runnable(client: Client, options: Options, identity: &str) -> Runnable {
    let identity = identity.to_owned();
    Runnable::new("mirror controller", move |stop| {
        run(client.clone(), options.clone(), identity.clone(), stop)
    })
}

async fn run(client: Client, options: Options, identity: String, stop: Signal) {
    let controller = Controller::new("mirror", WORKERS);
    super::contest::declare_metric();
    let Options {
        scope,
        secret_targets,
        self_service,
        kinds,
        placed,
        fleet,
    } = options;
    let stores = fleet
        .as_ref()
        .map(|(_, silence)| FleetStores::new(*silence));
    let caches = Caches::new(
        &scope,
        &secret_targets,
        self_service.as_ref(),
        &kinds.kinds,
        (placed, stores.clone()),
    );
    let _watches = caches.spawn_watches(&client, &controller.queue());
    let _heartbeat = (caches.placed.clone()).map(|p| smol::spawn(p.heartbeat(identity.clone())));
    if !until_listed(&caches, &stop).await {
        return;
    }
    log::info!("mirror caches filled; reconciling");
    // In-flight reconciles see the stop too: their requests stop waiting and sending, and the
    // writes they have not made are left to the next run.
    let client = client.with_cancel(stop.clone());
    let recorder = Recorder::new(&client, "skiff", &identity);
    let listed = Arc::new(caches.clone());
    if fleet.is_some() {
        super::fleet_metrics::declare();
    }
    let placer = (fleet.zip(stores)).map(|((writes, silence), stores)| {
        Placer::new(writes.with_cancel(stop.clone()), stores, silence)
    });
    let reconciler = Arc::new(Reconciler::new(
        client,
        caches,
        (scope, secret_targets, kinds),
        (recorder, placer),
        stop.clone(),
    ));
    let gate_stop = stop.clone();
    let reconcile = move |key: ObjectKey| {
        let (reconciler, listed, stop) = (
            Arc::clone(&reconciler),
            Arc::clone(&listed),
            gate_stop.clone(),
        );
        async move {
            if !until_listed(&listed, &stop).await {
                return Ok(Action::Done);
            }
            // A hub's Mirror waits for the whole of this member's share of the hub; a local
            // one never waits for the hub, which may be down.
            let placed = listed
                .placed
                .as_ref()
                .filter(|_| key.namespace.contains('/'));
            if let Some(placed) = placed
                && !until(placed.wait_until_ready(), &stop).await
            {
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
    until(caches.wait_until_ready(), stop).await
}

/// Waits for `ready`; false if `stop` came first.
async fn until(ready: impl Future<Output = ()>, stop: &Signal) -> bool {
    let ready = async {
        ready.await;
        true
    };
    ready
        .or(async {
            stop.wait().await;
            false
        })
        .await
}
