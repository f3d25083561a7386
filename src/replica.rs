//! One replica's clients, wired as production runs them: the main client for controllers,
//! fenced by the elector when leader election is on, and the elector on a lease client of its
//! own, derived from the same base config but sharing no connection, pool or token bucket with
//! the main client. The "became leader" Event goes through the main client, so the lease
//! client carries Lease requests only.
//!
//! The two clients share one thing, the [`Liveness`] of their connections: a lease request
//! that got no reply in time makes the main client's connections suspect too, so its watches
//! resume on new connections. Raising a suspicion never waits, so the lease client still
//! never waits on the main client. When the fence closes, the main client's connections with
//! writes in flight are reset, and a leader whose watches stay deaf steps down
//! ([`StepDown`]).
//!
//! `main` only adds signals, probes and the manager; keeping the wiring here lets tests build
//! exactly what the binary builds. The binary gives it the real clock; tests may give it a
//! manual one, which then times the election, the fence and the background posts.

use crate::clock::Clock;
use crate::flags::{Settings, SourceNamespaces};
use crate::kube::{Client, Config, Liveness, WriteGuard};
use crate::leader::{Announcer, ClientLeaseApi, DeletionCost, Elector, Fence};
use crate::manager::{HEARING_CHECK_PERIOD, StepDown};
use crate::mirror::SourceScope;
use crate::mirror::placed::PlacedStores;
use crate::serve::Check;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// On a member (`--hub-kubeconfig`): its share of the hub and its hub client.
    pub placed: Option<PlacedStores>,
    /// On a hub (`--fleet-hub`): the client its Placements are written through.
    pub placer: Option<Client>,
    /// `--deafness-timeout`; `None` when off.
    deafness_timeout: Option<Duration>,
    /// `--stop-on-pod-deletion`: this replica's Pod (namespace, name); `None` when off.
    own_pod: Option<(String, String)>,
}

impl Replica {
    /// `config` is the loaded base config; the flags' QPS and burst are applied here.
    pub fn wire(
        settings: &Settings,
        mut config: Config,
        identity: &str,
        clock: Clock,
    ) -> Result<Replica, String> {
        config.qps = settings.kube_api_qps;
        config.burst = settings.kube_api_burst.get();
        config.watch_idle_timeout = settings.hearing.watch_idle_timeout;
        let scope = source_scope(settings, config.namespace.as_deref())?;
        let liveness = Liveness::with_clock(clock.clone());
        let main = Client::with_liveness(config.clone(), liveness).map_err(|e| e.to_string())?;
        let reviewer = main.clone();
        let deafness_timeout = settings.hearing.deafness_timeout;
        let own_pod = match settings.stop_on_pod_deletion {
            true => Some(own_pod_of(
                "--stop-on-pod-deletion",
                config.namespace.as_deref(),
            )?),
            false => None,
        };
        let own = config.namespace.clone();
        let fleet = |guard: Option<Arc<dyn WriteGuard>>| -> Result<_, String> {
            let placed = (settings.hub.as_ref())
                .map(|hub| crate::fleet::member(hub, guard.clone(), own.clone()))
                .transpose()?;
            let placer = (settings.fleet_hub.as_ref())
                .map(|hub| crate::fleet::placer(hub, &config, guard))
                .transpose()?;
            Ok((placed, placer))
        };
        if !settings.leader_elect {
            let (placed, placer) = fleet(None)?;
            return Ok(Replica {
                main,
                reviewer,
                elector: None,
                scope,
                placed,
                placer,
                deafness_timeout,
                own_pod,
            });
        }
        let (mut elector, lease, lease_client) =
            elector(settings, &config, main.liveness(), identity, clock.clone())?;
        let fence = elector.fence();
        let writers = [main.clone(), lease_client];
        fence.on_close(Box::new(move || {
            let reset: usize = writers.iter().map(Client::reset_writes_in_flight).sum();
            if reset > 0 {
                log::warn!(
                    "fence closed: reset {reset} connections with writes in flight, so none \
                     lands after another replica leads"
                );
            }
        }));
        let (placed, placer) = fleet(Some(Arc::new(fence.clone())))?;
        let main = main.with_write_guard(Arc::new(fence));
        elector.announce_with(Announcer::lease_event(
            &main,
            &lease.namespace,
            &lease.name,
            identity,
            clock.clone(),
        ));
        if settings.pod_deletion_cost {
            let (namespace, pod) = own_pod_of(
                "--leader-elect-pod-deletion-cost",
                config.namespace.as_deref(),
            )?;
            elector.mark_pod_with(DeletionCost::on_pod(&reviewer, &namespace, &pod, clock));
        }
        Ok(Replica {
            main,
            reviewer,
            elector: Some(elector),
            scope,
            placed,
            placer,
            deafness_timeout,
            own_pod,
        })
    }

    /// With `--stop-on-pod-deletion`, resolves once this replica's Pod is marked for deletion
    /// (read through the unfenced client: a standby stops too); without it, never.
    pub fn own_pod_deleted(&self) -> impl Future<Output = ()> + Send + 'static {
        let watch = self.own_pod.clone().map(|(namespace, pod)| {
            crate::pod_deletion::own_pod_deleted(self.reviewer.clone(), namespace, pod)
        });
        async move {
            match watch {
                Some(watch) => watch.await,
                None => std::future::pending().await,
            }
        }
    }
}

/// This replica's Pod for `flag`: `POD_NAME` in skiff's own namespace.
fn own_pod_of(flag: &str, namespace: Option<&str>) -> Result<(String, String), String> {
    let pod = std::env::var("POD_NAME").unwrap_or_default();
    match (pod.trim(), namespace) {
        ("", _) => Err(format!(
            "{flag} needs POD_NAME set to the Pod's name (env valueFrom fieldRef \
             metadata.name), or set it to false"
        )),
        (_, None) => Err(format!(
            "{flag} needs skiff's namespace (in-cluster, or the kubeconfig context's), or set \
             it to false"
        )),
        (pod, Some(namespace)) => Ok((namespace.to_owned(), pod.to_owned())),
    }
}

impl Replica {
    /// The liveness checks `/healthz` runs: with leader election on, that the last successful
    /// renewal of a leading replica is recent enough ([`crate::leader::Fence::healthy`]); with
    /// `--deafness-timeout` on, that the controllers of a leader (or of a replica without
    /// leader election) hear the API server.
    pub fn health_checks(&self) -> Vec<(&'static str, Check)> {
        let fence = self.elector.as_ref().map(Elector::fence);
        let mut checks = Vec::new();
        if let Some(fence) = fence.clone() {
            let check: Check = Box::new(move |now| fence.healthy(now));
            checks.push(("leader-election", check));
        }
        if let Some(bound) = self.deafness_timeout {
            let liveness = self.main.liveness().clone();
            let check: Check = Box::new(move |now| hearing(&liveness, fence.as_ref(), bound, now));
            checks.push(("controllers-hearing", check));
        }
        checks
    }

    /// When the leader steps down although it renews: its controllers are deaf for longer than
    /// `--deafness-timeout`. It stands by again after one lease duration, so a replica that
    /// hears has a whole lease period to take over first.
    pub fn step_down(&self) -> Option<StepDown> {
        let (bound, elector) = (self.deafness_timeout?, self.elector.as_ref()?);
        let liveness = self.main.liveness().clone();
        Some(StepDown {
            deaf: Arc::new(move |now| liveness.check_hearing(bound, now)),
            hold_off: elector.timing().lease_duration,
            // Within a retry period of the bound, as a renewal would be.
            check_every: HEARING_CHECK_PERIOD.min(elector.timing().retry_period / 2),
        })
    }
}

/// The `/healthz` hearing check: deaf past `bound` fails, unless a fence says this replica is
/// not leading (a standby runs no controllers, so there is nothing to hear).
fn hearing(
    liveness: &Liveness,
    fence: Option<&Fence>,
    bound: Duration,
    now: Instant,
) -> Result<(), String> {
    if fence.is_some_and(|f| !f.is_leading()) {
        return Ok(());
    }
    liveness.check_hearing(bound, now)
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
    liveness: &Liveness,
    identity: &str,
    clock: Clock,
) -> Result<(Elector<ClientLeaseApi>, LeaseName, Client), String> {
    let namespace = settings
        .leader_election_namespace
        .clone()
        .or_else(|| config.namespace.clone())
        .ok_or("--leader-election-namespace is needed: skiff is not running in a pod and the kubeconfig context names no namespace")?;
    let mut lease_config =
        config.for_leader_election(settings.leader_elect_qps, settings.leader_elect_burst.get());
    lease_config.hedge_after = Some(settings.timing.hedge_after());
    let lease_client =
        Client::with_liveness(lease_config, liveness.clone()).map_err(|e| e.to_string())?;
    let api = ClientLeaseApi::new(
        lease_client.clone(),
        &namespace,
        &settings.leader_election_id,
        clock.clone(),
    );
    log::info!(
        "leader election on Lease {namespace}/{} as {identity}",
        settings.leader_election_id
    );
    let elector = Elector::new(api, identity.to_owned(), settings.timing, clock)
        .map_err(|e| e.to_string())?;
    let lease = LeaseName {
        namespace,
        name: settings.leader_election_id.clone(),
    };
    Ok((elector, lease, lease_client))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::{ConfigMap, ObjectMeta};
    use std::io::Read as _;
    use std::time::Instant;

    /// A server that accepts and reads requests but never answers.
    fn silent_server() -> (http_types::Url, std::sync::mpsc::Receiver<()>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = http_types::Url::parse(&format!("http://{}", listener.local_addr().unwrap()));
        let (read, reads) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let read = read.clone();
                std::thread::spawn(move || {
                    let mut stream = stream;
                    let mut buf = [0u8; 4096];
                    while matches!(stream.read(&mut buf), Ok(n) if n > 0) {
                        let _ = read.send(());
                    }
                });
            }
        });
        (url.expect("url"), reads)
    }

    #[test]
    fn closing_the_fence_resets_the_writes_in_flight() {
        let (url, reads) = silent_server();
        let flags = [
            "--leader-elect",
            "--leader-election-namespace=a",
            "--source-namespaces=a",
        ];
        let args: Vec<String> = flags.iter().map(|a| (*a).to_owned()).collect();
        let settings = crate::flags::parse(&args).expect("flags");
        let replica =
            Replica::wire(&settings, Config::new(url), "me", Clock::real()).expect("wired");
        let fence = replica.elector.as_ref().expect("elector").fence();
        fence.renewed(Instant::now());
        let client = replica.main.clone();
        let write = smol::spawn(async move {
            let cm = ConfigMap {
                metadata: ObjectMeta::named(Some("default"), "in-flight"),
                ..ConfigMap::default()
            };
            client.create(&cm).await
        });
        reads
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("the write reached the server");
        fence.close();
        assert_eq!(
            replica.main.reset_writes_in_flight(),
            0,
            "closing the fence left the write in flight unreset"
        );
        drop(write);
    }
}
