//! The member's side: what its hub places for it, read through the hub client, each Placement
//! kept as the Mirror it stands for and the source it carries.
//!
//! A member reads two things on the hub, both in its own namespace there: Placements and the
//! carrier Secrets beside them. Each Placement becomes a Mirror owned by the hub's
//! (`<hub>/<namespace>`, see `owners.rs`) that the ordinary reconcile copies into
//! this cluster, within this member's limits (`--hub-kinds`, its Secret names, its kind
//! checks, never into `kube-*` or skiff's own namespace). A Placement's absence means nothing:
//! a relist without it, a 403, an empty or rebuilt hub delete no copy. Only its tombstone does
//! (`spec.withdrawn`, read as the Mirror's deletion), and the member then acknowledges it.

use super::placement::{
    CARRIER_TYPE, FORMAT, HEARTBEAT_LEASE, Placement, PlacementStatus, placement_name,
};
use crate::kind::SourceKind;
use crate::kube::api::Resource;
use crate::kube::api::{Lease, Object, ObjectMeta};
use crate::kube::{Client, Error, PatchKind};
use crate::mirror::source::SourceContent;
use crate::mirror::types::FINALIZER;
use crate::mirror::types::{Mirror, MirrorSpec, MirrorStatus, SourceRef};
use crate::runtime::{Change, ObjectKey, Recovery, Store};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// How soon a heartbeat the hub did not answer is tried again, before jitter (up to twice as
/// long): while the hub is unreachable, the heartbeat probes it this often, so the member's hub
/// watches hear within seconds that it answers again (see [`Recovery`]).
pub const HUB_REPROBE: Duration = Duration::from_secs(1);

/// The hub a member reads from: its name (`--hub-name`, on every copy it places), the member's
/// namespace there (its hub kubeconfig's), the kinds this member takes from it (`--hub-kinds`)
/// and how often it tells the hub it is there (`--hub-heartbeat-period`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hub {
    pub name: String,
    pub namespace: String,
    pub kinds: BTreeSet<SourceKind>,
    pub heartbeat: Duration,
}

/// What a member keeps of one Placement.
#[derive(Debug, Clone)]
pub struct Placed {
    /// The Mirror it stands for, owned by the hub's.
    pub mirror: Mirror,
    /// Its content as a source; `None` for a Secret (in its carrier) or a format not known.
    pub source: Option<Arc<SourceContent>>,
    /// Its hash, which the member echoes once its copies hold it.
    pub hash: String,
    pub carrier: Option<super::placement::Carrier>,
    pub format: u32,
}

impl Placed {
    /// `placement`, placed by the hub named `hub`.
    pub fn of(hub: &str, placement: &Placement) -> Placed {
        let spec = &placement.spec;
        let acked = placement.status.as_ref().is_some_and(|s| s.withdrawn);
        let metadata = ObjectMeta {
            uid: placement.metadata.uid.clone(),
            generation: placement.metadata.generation,
            resource_version: placement.metadata.resource_version.clone(),
            finalizers: (!acked).then(|| FINALIZER.to_owned()).into_iter().collect(),
            deletion_timestamp: spec.withdrawn.then(|| "withdrawn".to_owned()),
            ..ObjectMeta::named(
                Some(&format!("{hub}/{}", spec.mirror.namespace)),
                &spec.mirror.name,
            )
        };
        let mirror = Mirror {
            metadata,
            spec: MirrorSpec {
                source: SourceRef {
                    kind: spec.kind,
                    name: spec.mirror.name.clone(),
                    ..SourceRef::default()
                },
                target_name: Some(spec.target_name.clone()),
                namespace_selector: spec.namespace_selector.clone(),
                target: spec.target.clone(),
                conflicts: spec.conflicts,
                cluster_selector: None,
                // A withdrawn Placement's copies go: orphaning stays on the hub's side.
                deletion_policy: None,
            },
            status: placement.status.as_ref().map(|s| s.copies.clone()),
            ..Mirror::default()
        };
        let content = spec.content.as_ref().filter(|_| spec.format == FORMAT);
        Placed {
            mirror,
            source: content.map(|c| SourceContent::of(spec.kind.row(), &object(c.clone()))),
            hash: spec.hash.clone(),
            carrier: spec.secret.clone(),
            format: spec.format,
        }
    }
}

/// An object holding `content`'s fields.
fn object(content: Value) -> Object {
    let content = match content {
        Value::Object(map) => map.into_iter().collect(),
        _ => Default::default(),
    };
    Object {
        content,
        ..Object::default()
    }
}

/// A carrier Secret as the member keeps it: its hash annotation and its data.
#[derive(Debug, Clone, PartialEq)]
pub struct CarrierData {
    pub hash: Option<String>,
    pub data: Option<Value>,
}

impl CarrierData {
    fn of(secret: &Object) -> CarrierData {
        let placed = secret.field("type").and_then(Value::as_str) == Some(CARRIER_TYPE);
        let hash = secret
            .metadata
            .annotations
            .get(crate::mirror::copy::SOURCE_HASH_ANNOTATION);
        CarrierData {
            hash: hash.filter(|_| placed).cloned(),
            data: secret.field("data").cloned().filter(|_| placed),
        }
    }
}

/// The member's caches of its share of the hub, and the client it reads and reports through.
#[derive(Clone)]
pub struct PlacedStores {
    pub hub: Hub,
    /// The hub client, fenced by this member's elector.
    pub client: Client,
    pub placements: Store<Placement, Placed>,
    pub carriers: Store<Object, CarrierData>,
    /// Whether the hub answers: the heartbeat tells, the hub watches listen.
    pub recovery: Recovery,
    /// The namespace skiff runs in, where a hub's copy never goes.
    own: Option<String>,
}

impl PlacedStores {
    pub fn new(hub: Hub, client: Client, own: Option<String>) -> PlacedStores {
        let name = hub.name.clone();
        PlacedStores {
            placements: Store::new(move |p: &Placement| Placed::of(&name, p)),
            carriers: Store::new(CarrierData::of),
            recovery: Recovery::default(),
            hub,
            client,
            own,
        }
    }

    /// The store key of the Placement of the hub's Mirror `key` (`<hub>/<namespace>`, name).
    fn store_key(&self, key: &ObjectKey) -> Option<ObjectKey> {
        let (hub, namespace) = key.namespace.split_once('/')?;
        (hub == self.hub.name)
            .then(|| ObjectKey::new(&self.hub.namespace, placement_name(namespace, &key.name)))
    }

    /// The Placement standing for the hub's Mirror `key`, if it is placed.
    pub fn get(&self, key: &ObjectKey) -> Option<Placed> {
        let at = self.store_key(key)?;
        self.placements.get(&at.namespace, &at.name)
    }

    pub fn contains(&self, key: &ObjectKey) -> bool {
        self.store_key(key)
            .is_some_and(|at| self.placements.contains(&at))
    }

    /// The source of the hub's Mirror `key`: its Placement's content, or its carrier's data when
    /// the carrier holds the hash the Placement names (a half-written pair is never copied).
    pub fn source(&self, key: &ObjectKey) -> Option<Arc<SourceContent>> {
        let placed = self.get(key)?;
        if let Some(source) = placed.source {
            return Some(source);
        }
        let carrier = placed.carrier.filter(|_| placed.format == FORMAT)?;
        let held = self.carriers.get(&self.hub.namespace, &carrier.name)?;
        if held.hash.as_deref() != Some(&carrier.hash) {
            return None;
        }
        let content = json!({"type": carrier.type_, "data": held.data});
        Some(SourceContent::of(
            SourceKind::Secret.row(),
            &object(content),
        ))
    }

    /// Whether a hub's copy may go into `namespace` at all.
    pub fn may_copy_into(&self, namespace: &str) -> bool {
        !namespace.starts_with("kube-") && Some(namespace) != self.own.as_deref()
    }

    /// Whether this member takes copies of `kind` from its hub (`--hub-kinds`).
    pub fn takes(&self, kind: SourceKind) -> bool {
        self.hub.kinds.contains(&kind)
    }

    pub async fn wait_until_ready(&self) {
        self.placements.wait_until_ready().await;
        self.carriers.wait_until_ready().await;
    }
}

impl PlacedStores {
    /// Reports `copies` (the status of the hub's Mirror `mirror` stands for) on its Placement,
    /// echoing the Placement's hash when every selected copy holds it; `mirror` as it then is.
    pub async fn report(&self, mirror: &Mirror, copies: MirrorStatus) -> Result<Mirror, Error> {
        let key = ObjectKey::from_meta(&mirror.metadata).ok_or_else(no_key)?;
        let (Some(at), Some(placed)) = (self.store_key(&key), self.get(&key)) else {
            return Err(no_key());
        };
        let ready = (copies.conditions.iter()).any(|c| c.type_ == "Ready" && c.status == "True");
        let status = PlacementStatus {
            copies: copies.clone(),
            observed_hash: ready.then_some(placed.hash),
            withdrawn: false,
        };
        let patch = json!([{"op": "add", "path": "/status", "value": status}]);
        let path = Placement::url_path(Some(&at.namespace), Some(&at.name)) + "/status";
        let written: Placement = self.client.patch_at(path, &patch, PatchKind::Json).await?;
        let mut mirror = mirror.clone();
        mirror.status = Some(copies);
        mirror.metadata.resource_version = written.metadata.resource_version;
        Ok(mirror)
    }

    /// Tells the hub that the copies of the withdrawn Placement `mirror` stands for are gone,
    /// so it may delete the Placement.
    pub async fn acknowledge(&self, mirror: &Mirror) -> Result<(), Error> {
        let key = ObjectKey::from_meta(&mirror.metadata).ok_or_else(no_key)?;
        let at = self.store_key(&key).ok_or_else(no_key)?;
        let path = Placement::url_path(Some(&at.namespace), Some(&at.name)) + "/status";
        let patch = json!({"status": {"withdrawn": true}});
        let _: Placement = self.client.patch_at(path, &patch, PatchKind::Merge).await?;
        Ok(())
    }
}

impl PlacedStores {
    /// Renews this member's heartbeat on the hub (the Lease its admission created there) every
    /// `--hub-heartbeat-period`, for as long as this replica leads; a renewal the hub did not
    /// answer is tried again after [`HUB_REPROBE`] (jittered), one that it refused at the next
    /// period (the hub counts a member silent after several missed ones).
    pub async fn heartbeat(self, identity: String) {
        let mut jitter = crate::random::rng();
        loop {
            let next = match self.beat(&identity).await {
                Ok(()) => self.hub.heartbeat,
                Err(_) => crate::random::jitter(HUB_REPROBE, 1.0, &mut jitter),
            };
            smol::Timer::after(next).await;
        }
    }

    /// Renews the heartbeat once and tells [`PlacedStores::recovery`] whether the hub answered:
    /// `Err` when it did not (no reply, no connection).
    pub async fn beat(&self, identity: &str) -> Result<(), Error> {
        let path = Lease::url_path(Some(&self.hub.namespace), Some(HEARTBEAT_LEASE));
        let patch = json!({"spec": {
            "holderIdentity": identity,
            "renewTime": crate::time::now_micros(),
            "leaseDurationSeconds": self.hub.heartbeat.as_secs() * 3,
        }});
        let renewed = (self.client).patch_at::<Lease>(path, &patch, PatchKind::Merge);
        let name = &self.hub.name;
        let answered = match renewed.await {
            Ok(_) => true,
            Err(e) if e.is_unanswered() => {
                if !self.recovery.is_failing() {
                    log::warn!(
                        "hub {name}: heartbeat not answered ({e}); probing it every few seconds"
                    );
                }
                self.recovery.unanswered();
                return Err(e);
            }
            Err(e) => {
                log::warn!("hub {name}: heartbeat not renewed: {e}");
                e.code().is_some()
            }
        };
        if answered {
            if self.recovery.is_failing() {
                log::info!("hub {name} answers again: its watches retry now");
            }
            self.recovery.answered();
        }
        Ok(())
    }
}

fn no_key() -> Error {
    Error::Refused("no Placement of this member stands for that Mirror".to_owned())
}

/// The Mirror events a Placement event stands for, for the selection index.
pub fn as_mirror_event(event: &Change<Placement>, hub: &str) -> Change<Mirror> {
    let mirror = |p: &Placement| Placed::of(hub, p).mirror;
    match event {
        Change::Listed(p) => Change::Listed(mirror(p)),
        Change::Applied(p) => Change::Applied(mirror(p)),
        Change::Deleted(p) => Change::Deleted(mirror(p)),
        Change::Relisting => Change::Relisting,
        Change::Relisted => Change::Relisted,
    }
}

/// The hub's Mirror a Placement event concerns.
pub fn placed_keys(event: &Change<Placement>, hub: &str) -> Vec<ObjectKey> {
    match event {
        Change::Listed(p) | Change::Applied(p) | Change::Deleted(p) => {
            let m = &p.spec.mirror;
            vec![ObjectKey::new(
                format!("{hub}/{}", m.namespace),
                m.name.as_str(),
            )]
        }
        Change::Relisting | Change::Relisted => Vec::new(),
    }
}

/// The hub's Mirrors whose Placement names the carrier in `event` (every placed Mirror at the
/// end of a relist).
pub fn carried_by(
    placements: &Store<Placement, Placed>,
    hub: &str,
    event: &Change<Object>,
) -> Vec<ObjectKey> {
    let name = match event {
        Change::Listed(o) | Change::Applied(o) | Change::Deleted(o) => Some(o.metadata.name()),
        Change::Relisting => return Vec::new(),
        Change::Relisted => None,
    };
    let mut keys = Vec::new();
    placements.scan(|_, placed| {
        let carried = placed.carrier.as_ref().map(|c| c.name.as_str());
        if name.is_none() || carried == name {
            let key = ObjectKey::from_meta(&placed.mirror.metadata);
            keys.extend(key);
        }
    });
    let _ = hub;
    keys
}

/// The namespaces of `selected` a hub's copy may go into.
pub fn eligible(stores: &PlacedStores, selected: BTreeSet<String>) -> BTreeSet<String> {
    selected
        .into_iter()
        .filter(|ns| stores.may_copy_into(ns))
        .collect()
}

#[cfg(test)]
mod tests;
