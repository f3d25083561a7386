//! The fleet's clients, each with a connection and token bucket of its own: a member's client
//! to its hub, and a hub's client for the Placements it writes.
//!
//! A member reads its hub with the kubeconfig its admin was handed (`--hub-kubeconfig`): a
//! token (`tokenFile`, re-read as it rotates) or a client certificate, never an exec plugin,
//! which skiff's image cannot run. Its hub client has a liveness of its own, so a hub that goes
//! silent is a hub unreachable, never a deaf leader: the member keeps its Lease and its local
//! work. Its writes to the hub (its reports, its heartbeat) pass this replica's fence, as every
//! write does, so a member that lost its Lease reports nothing.

use crate::flags::{FleetHub, HubMember};
use crate::kube::config::Auth;
use crate::kube::{Client, Config, Liveness, LoadOptions, WriteGuard};
use crate::mirror::placed::{Hub, PlacedStores};
use std::sync::Arc;

/// The hub client's bucket: its reports, heartbeat and relists, as the lease client's.
const HUB_QPS: f32 = 5.0;
const HUB_BURST: u32 = 10;

/// A member's share of its hub, read through a hub client of its own; writes behind `guard`.
pub fn member(
    flags: &HubMember,
    guard: Option<Arc<dyn WriteGuard>>,
    own: Option<String>,
) -> Result<PlacedStores, String> {
    let options = LoadOptions {
        kubeconfig: Some(flags.kubeconfig.clone()),
        ..LoadOptions::default()
    };
    let mut config = options
        .load()
        .map_err(|e| format!("--hub-kubeconfig: {e}"))?;
    if let Auth::Exec(_) = config.auth {
        return Err(format!(
            "--hub-kubeconfig {}: its user runs an exec credential plugin, which cannot run in \
             skiff's image; give the member a token (tokenFile, rotated in place) or a client \
             certificate for the hub instead",
            flags.kubeconfig.display()
        ));
    }
    let Some(namespace) = config.namespace.clone() else {
        return Err(format!(
            "--hub-kubeconfig {}: its context names no namespace; set it to the member's \
             namespace on the hub (the hub admin's admission prints it so)",
            flags.kubeconfig.display()
        ));
    };
    config.qps = HUB_QPS;
    config.burst = HUB_BURST;
    config.name = "hub".into();
    config.user_agent = "skiff/hub".into();
    let client = Client::with_liveness(config, Liveness::new()).map_err(|e| e.to_string())?;
    let client = match guard {
        Some(guard) => client.with_write_guard(guard),
        None => client,
    };
    let hub = Hub {
        name: flags.name.clone(),
        namespace,
        kinds: flags.kinds.clone(),
        heartbeat: flags.heartbeat,
    };
    Ok(PlacedStores::new(hub, client, own))
}

/// A hub's client for Placements and carriers: `base`'s server and credentials, its own
/// connections and bucket (`--fleet-qps`, `--fleet-burst`), writes behind `guard`.
pub fn placer(
    settings: &FleetHub,
    base: &Config,
    guard: Option<Arc<dyn WriteGuard>>,
) -> Result<Client, String> {
    let mut config = base.clone();
    config.qps = settings.qps;
    config.burst = settings.burst;
    config.name = "fleet".into();
    config.user_agent = "skiff/fleet".into();
    let client = Client::new(config).map_err(|e| e.to_string())?;
    Ok(match guard {
        Some(guard) => client.with_write_guard(guard),
        None => client,
    })
}
