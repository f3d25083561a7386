//! The hub's side: a fleet Mirror (`spec.clusterSelector`) places, in each selected member
//! cluster's namespace on the hub, one inert `Placement` of what its copies should hold (and,
//! for a Secret, a carrier Secret beside it), withdraws them by tombstone, and counts what the
//! members report.
//!
//! - A Placement holds the content resolved here: the keys picked, the source's labels and
//!   annotations carried, the target's metadata. A member copies it as it is.
//! - A cluster the Mirror no longer selects (or a Mirror deleted) gets a tombstone
//!   (`spec.withdrawn`, its content gone), never a deletion: a member deletes copies only on a
//!   tombstone it sees. The hub deletes the Placement once the member acknowledges it.
//! - Each cluster counts as current (it echoed the hash every copy should hold), failing (it
//!   reported a refusal, a conflict or a contest), silent (its heartbeat is older than
//!   `--member-silence-after`) or pending. Nothing here waits on a member: the hub writes only
//!   to its own API server, through a client and token bucket of its own (`--fleet-qps`).
//! - The Placements of one Mirror are written concurrently, at most [`FLEET_IN_FLIGHT`] at once
//!   for the Mirrors of one namespace (the local fan-out's [`FlowPermits`]), so a Mirror placed
//!   in a thousand members is paced by the fleet client's bucket, not by one round trip each.
//!   What it wrote is remembered until its watch shows it: the reconcile its own writes wake
//!   must not write them again from the versions it replaced (each would be refused, 422).

use super::apply::flows::FlowPermits;
use super::cluster_troubles::{ClusterTroubles, News, SILENT};
use super::copy::Owner;
use super::desired::DesiredCopy;
use super::payload::Digest;
use super::placement::{
    Carrier, FORMAT, FleetStores, MirrorOnHub, Placement, PlacementInfo, PlacementSpec,
    placement_name, spec_hash,
};
use super::types::{Clusters, Mirror, TargetSpec};
use crate::kube::api::{ObjectMeta, Resource, Secret};
use crate::kube::{Client, Error};
use crate::runtime::ObjectKey;
use serde_json::{Map, Value, json};
use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use writes::gone_is_fine;

/// Placement writes in flight at once for one namespace's fleet Mirrors: at `--fleet-qps` 250,
/// enough to keep the bucket busy while a write takes up to 128 ms, few enough that the bodies
/// in flight (each a Placement with its content) stay a small multiple of one.
pub const FLEET_IN_FLIGHT: usize = 32;

/// What placing one fleet Mirror did and found.
#[derive(Debug, Default)]
pub struct Placed {
    /// Member clusters whose Placement holds what the Mirror wants.
    pub synced: u32,
    /// Member clusters where another Mirror's Placement holds the name.
    pub conflicts: Vec<String>,
    pub clusters: Clusters,
    /// The clusters silent or failing, for the status message.
    pub silent: Vec<String>,
    pub failing: Vec<(String, String)>,
    /// When a selected cluster that is heard from now turns silent unless it renews.
    pub next: Option<Duration>,
}

/// What a member namespace holds of a fleet Mirror after [`Placer::place_in`].
enum Held {
    /// Its Placement (and carrier) already held what the Mirror wants.
    AsWanted,
    /// They were written now.
    Written,
    /// Another Mirror's Placement or carrier holds the name.
    ByAnother,
}

/// The hub's placements of fleet Mirrors, through the fleet client.
pub struct Placer {
    client: Client,
    stores: FleetStores,
    silence: Duration,
    troubles: ClusterTroubles,
    /// The Placement writes in flight of each namespace's Mirrors.
    flows: Arc<FlowPermits>,
    /// Placements written here that the watch has not shown yet.
    unseen: Mutex<HashMap<ObjectKey, Unseen>>,
}

/// A Placement write the watch has not shown yet: the version it replaced (`None`: created)
/// and the spec it holds now.
struct Unseen {
    replaced: Option<String>,
    spec: Digest,
}

impl Placer {
    pub fn new(client: Client, stores: FleetStores, silence: Duration) -> Placer {
        Placer {
            client,
            stores,
            silence,
            troubles: ClusterTroubles::default(),
            flows: FlowPermits::new(FLEET_IN_FLIGHT),
            unseen: Mutex::default(),
        }
    }

    /// What changed in `mirror`'s troubled clusters since its last Events, `placed` now.
    pub fn news(&self, mirror: &Mirror, placed: &Placed) -> News {
        let silent = (placed.silent.iter()).map(|c| (c.clone(), SILENT.to_owned()));
        let troubled = silent.chain(placed.failing.iter().cloned()).collect();
        self.troubles.news(&Owner::of(mirror), troubled)
    }

    /// Places what `mirror` wants (`desired`) in the member namespaces `serves`, withdraws it
    /// from those it no longer selects, and counts the clusters.
    pub async fn place(
        &self,
        mirror: &Mirror,
        desired: &DesiredCopy,
        serves: &BTreeSet<String>,
    ) -> Result<Placed, Error> {
        let owner = Owner::of(mirror);
        let (spec, carried) = spec_of(mirror, desired);
        let want = spec_hash(&spec);
        let name = placement_name(mirror.metadata.namespace(), mirror.metadata.name());
        let placing = (name.as_str(), &spec, want);
        let held = (self.each(&owner.namespace, serves, |ns| {
            self.place_in(ns, &owner, placing, &carried)
        }))
        .await;
        let mut placed = Placed::default();
        let mut first_error = None;
        for (ns, held) in serves.iter().zip(held) {
            match held {
                Err(e) => {
                    first_error.get_or_insert(e);
                    continue;
                }
                Ok(Held::ByAnother) => {
                    placed.conflicts.push(ns.clone());
                    continue;
                }
                Ok(Held::AsWanted) => placed.synced += 1,
                Ok(Held::Written) => {}
            }
            self.count(ns, &desired.hash.hex(), &name, &mut placed);
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        self.withdraw(&owner, |ns| serves.contains(ns)).await?;
        Ok(placed)
    }

    /// `write` for each member namespace of `serves`, concurrently within the permits of the
    /// Mirrors' namespace `flow`; the results in the order of `serves`. Every write started
    /// runs to its reply, whatever the others' results: each is for a cluster of its own.
    async fn each<'a, T, F>(
        &self,
        flow: &str,
        serves: &'a BTreeSet<String>,
        write: impl Fn(&'a str) -> F,
    ) -> Vec<T>
    where
        T: Send + 'a,
        F: Future<Output = T> + Send + 'a,
    {
        // Tasks of an executor of this call's own, so they may borrow what the caller holds;
        // they run while (and only while) this call is polled.
        let tasks = smol::Executor::new();
        let fan_out = async {
            let mut started = Vec::with_capacity(serves.len());
            for ns in serves {
                // Taken before the write starts, as the local fan-out does.
                let permit = self.flows.take(flow).await;
                let write = write(ns);
                started.push(tasks.spawn(async move {
                    let done = write.await;
                    drop(permit);
                    done
                }));
            }
            let mut done = Vec::with_capacity(started.len());
            for task in started {
                done.push(task.await);
            }
            done
        };
        tasks.run(fan_out).await
    }

    /// Makes the Placement `name` in the member namespace `ns` hold `spec` (whose hash is
    /// `want`) and its carrier `carried`, unless another Mirror's holds the name there.
    async fn place_in(
        &self,
        ns: &str,
        owner: &Owner,
        (name, spec, want): (&str, &PlacementSpec, Digest),
        carried: &Option<Value>,
    ) -> Result<Held, Error> {
        if let Some(carrier) = &spec.secret {
            let owners = self.stores.carrier_owners(ns, &carrier.name);
            if owners.iter().any(|o| o.as_ref() != Some(owner)) {
                return Ok(Held::ByAnother);
            }
        }
        let held = self.stores.placements.get(ns, name);
        let key = ObjectKey::new(ns, name);
        if self.written_unseen(&key, held.as_ref(), want) {
            return Ok(Held::Written);
        }
        let replaced = held.as_ref().map(|h| h.resource_version.to_string());
        let written = match held {
            Some(held) if held.owner.as_ref() != Some(owner) => return Ok(Held::ByAnother),
            Some(held) if held.spec == want && !carrier_missing(&held) => {
                return Ok(Held::AsWanted);
            }
            Some(held) => {
                let rv = held.resource_version.to_string();
                self.replace(ns, name, &rv, spec).await?;
                self.carry(owner, (ns, name, held.uid.as_deref()), spec, carried)
                    .await?
            }
            None => match self.create(owner, ns, name, spec).await {
                Ok(uid) => {
                    self.carry(owner, (ns, name, uid.as_deref()), spec, carried)
                        .await?
                }
                Err(e) if e.code() == Some(409) => self.holds(owner, ns, name).await?,
                Err(e) => return Err(e),
            },
        };
        if !written {
            return Ok(Held::ByAnother);
        }
        let spec = want;
        self.unseen().insert(key, Unseen { replaced, spec });
        Ok(Held::Written)
    }

    /// Whether this hub wrote `spec` to the Placement `key` already and its watch still shows
    /// the version that write replaced (`held`). Once it shows another, the write is forgotten.
    fn written_unseen(&self, key: &ObjectKey, held: Option<&PlacementInfo>, spec: Digest) -> bool {
        let mut unseen = self.unseen();
        let Some(write) = unseen.get(key) else {
            return false;
        };
        if write.replaced != held.map(|h| h.resource_version.to_string()) {
            unseen.remove(key);
            return false;
        }
        write.spec == spec
    }

    fn unseen(&self) -> MutexGuard<'_, HashMap<ObjectKey, Unseen>> {
        // Plain records: still valid if a holder panicked.
        self.unseen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Withdraws every Placement of `owner` in a namespace `keep` does not keep: a tombstone
    /// first; once its member acknowledged it, the Placement goes.
    pub async fn withdraw(&self, owner: &Owner, keep: impl Fn(&str) -> bool) -> Result<(), Error> {
        for (key, held) in self.stores.owned(owner) {
            if keep(&key.namespace) {
                continue;
            }
            self.unseen().remove(&key);
            let rv = held.resource_version.to_string();
            if held.withdrawn && held.acknowledged {
                let path = Placement::url_path(Some(&key.namespace), Some(&key.name));
                let precondition = json!({"resourceVersion": rv});
                gone_is_fine(self.client.delete_at(path, Some(precondition)).await)?;
            } else if !held.withdrawn {
                self.tombstone(&key, &rv).await?;
                if let Some((_, carrier)) = &held.carrier {
                    let path = Secret::url_path(Some(&key.namespace), Some(carrier));
                    gone_is_fine(self.client.delete_at(path, None).await)?;
                }
            }
        }
        Ok(())
    }

    /// The cluster of namespace `ns`, counted into `placed`.
    fn count(&self, ns: &str, hash: &str, name: &str, placed: &mut Placed) {
        let heard = self.stores.heard(ns);
        let silent_at = heard.map(|at| at + self.silence);
        let now = Instant::now();
        if silent_at.is_none_or(|at| at <= now) {
            placed.clusters.silent += 1;
            placed.silent.push(ns.to_owned());
            return;
        }
        if let Some(at) = silent_at {
            let after = at.saturating_duration_since(now);
            placed.next = Some(placed.next.map_or(after, |n| n.min(after)));
        }
        let held = self.stores.placements.get(ns, name);
        match held.as_ref().and_then(|h| h.failing.clone()) {
            _ if held.as_ref().and_then(|h| h.observed_hash.as_deref()) == Some(hash) => {
                placed.clusters.current += 1
            }
            Some(reason) if reason != "Progressing" => {
                placed.clusters.failing += 1;
                placed.failing.push((ns.to_owned(), reason));
            }
            _ => placed.clusters.pending += 1,
        }
    }
}

/// A Placement whose carrier the member reported missing or not matching is written again.
fn carrier_missing(held: &PlacementInfo) -> bool {
    held.carrier.is_some() && held.failing.as_deref() == Some("SourceNotFound")
}

/// The Placement spec of `mirror` wanting `desired`, and for a kind whose content is secret
/// the data its carrier holds.
fn spec_of(mirror: &Mirror, desired: &DesiredCopy) -> (PlacementSpec, Option<Value>) {
    let payload = desired.payload();
    let mut content = Map::new();
    for (field, value) in payload.held() {
        content.insert(field.name.to_owned(), value.clone());
    }
    let target =
        (!desired.labels.is_empty() || !desired.annotations.is_empty()).then(|| TargetSpec {
            metadata: ObjectMeta {
                labels: desired.labels.clone(),
                annotations: desired.annotations.clone(),
                ..ObjectMeta::default()
            },
            // A projection's payload is already the copy's kind: the Placement's own.
            kind: None,
        });
    let hash = desired.hash.hex();
    let secret = payload.row().secret_content;
    let carrier = secret.then(|| Carrier {
        name: mirror.spec.target_name().to_owned(),
        hash: hash.clone(),
        type_: payload.text("type").map(str::to_owned),
    });
    let carried = secret.then(|| content.remove("data")).flatten();
    let spec = PlacementSpec {
        format: FORMAT,
        mirror: MirrorOnHub {
            namespace: mirror.metadata.namespace().to_owned(),
            name: mirror.metadata.name().to_owned(),
            uid: mirror.metadata.uid.clone().unwrap_or_default(),
        },
        kind: payload.kind(),
        target_name: mirror.spec.target_name().to_owned(),
        namespace_selector: mirror.spec.namespace_selector.clone(),
        target,
        conflicts: mirror.spec.conflicts,
        hash,
        content: (!secret).then_some(Value::Object(content)),
        secret: carrier,
        withdrawn: false,
    };
    (spec, carried)
}

mod writes;

#[cfg(test)]
mod tests;
