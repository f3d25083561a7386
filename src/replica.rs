//! One replica's clients, wired as production runs them: the main client for controllers,
//! fenced by the elector when leader election is on, and the elector on a lease client of its
//! own, derived from the same base config but sharing nothing with the main client. The
//! "became leader" Event goes through the main client, so the lease client carries Lease
//! requests only.
//!
//! `main` only adds signals, probes and the manager; keeping the wiring here lets tests build
//! exactly what the binary builds.

use crate::flags::{Settings, SourceNamespaces};
use crate::kube::{Client, Config};
use crate::leader::{Announcer, ClientLeaseApi, Elector};
use crate::mirror::SourceScope;
use crate::serve::Check;
use std::collections::BTreeSet;
use std::sync::Arc;

pub struct Replica {
    /// The controllers' client: fenced while leader election is on.
    pub main: Client,
    /// The same client (connections, token bucket) without the fence, for the TokenReviews and
    /// SubjectAccessReviews of `/metrics`: POSTs that write nothing and must work on standbys.
    pub reviewer: Client,
    /// `None` without `--leader-elect`.
    pub elector: Option<Elector<ClientLeaseApi>>,
    /// Where Mirror sources may be read from, with "skiff's own namespace" resolved.
    pub scope: SourceScope,
}

impl Replica {
    /// `config` is the loaded base config; the flags' QPS and burst are applied here.
    pub fn wire(
        settings: &Settings,
        mut config: Config,
        identity: &str,
    ) -> Result<Replica, String> {
        config.qps = settings.kube_api_qps;
        config.burst = settings.kube_api_burst.get();
        let scope = source_scope(settings, config.namespace.as_deref())?;
        let main = Client::new(config.clone()).map_err(|e| e.to_string())?;
        let reviewer = main.clone();
        if !settings.leader_elect {
            return Ok(Replica {
                main,
                reviewer,
                elector: None,
                scope,
            });
        }
        let (mut elector, lease) = elector(settings, &config, identity)?;
        let main = main.with_write_guard(Arc::new(elector.fence()));
        elector.announce_with(Announcer::lease_event(
            &main,
            &lease.namespace,
            &lease.name,
            identity,
        ));
        Ok(Replica {
            main,
            reviewer,
            elector: Some(elector),
            scope,
        })
    }
}

impl Replica {
    /// The liveness checks `/healthz` runs: with leader election on, that the last successful
    /// renewal of a leading replica is recent enough ([`crate::leader::Fence::healthy`]).
    pub fn health_checks(&self) -> Vec<(&'static str, Check)> {
        let Some(elector) = &self.elector else {
            return Vec::new();
        };
        let fence = elector.fence();
        let check: Check = Box::new(move |now| fence.healthy(now));
        vec![("leader-election", check)]
    }
}

/// Where the Lease is.
struct LeaseName {
    namespace: String,
    name: String,
}

/// The elector over a client of its own, derived from the base config (never shared).
fn elector(
    settings: &Settings,
    config: &Config,
    identity: &str,
) -> Result<(Elector<ClientLeaseApi>, LeaseName), String> {
    let namespace = settings
        .leader_election_namespace
        .clone()
        .or_else(|| config.namespace.clone())
        .ok_or("--leader-election-namespace is needed: skiff is not running in a pod and the kubeconfig context names no namespace")?;
    let lease_config =
        config.for_leader_election(settings.leader_elect_qps, settings.leader_elect_burst.get());
    let lease_client = Client::new(lease_config).map_err(|e| e.to_string())?;
    let api = ClientLeaseApi::new(lease_client, &namespace, &settings.leader_election_id);
    log::info!(
        "leader election on Lease {namespace}/{} as {identity}",
        settings.leader_election_id
    );
    let elector =
        Elector::new(api, identity.to_owned(), settings.timing).map_err(|e| e.to_string())?;
    let lease = LeaseName {
        namespace,
        name: settings.leader_election_id.clone(),
    };
    Ok((elector, lease))
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
