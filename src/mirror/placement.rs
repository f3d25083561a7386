//! The `Placement` custom resource (skiff.dev/v1alpha1): what a hub places for one member
//! cluster, in that member's namespace on the hub, one per fleet Mirror.
//!
//! It is inert: the content a member copies travels inside it as plain JSON (a kit kind or a
//! ConfigMap is never a live object on the hub, where it would act), a Secret's data in a
//! carrier Secret beside it that only that member may read, referenced by name and hash. The
//! hub writes the spec; the member writes the status, its report. The hub withdraws a
//! Placement by a tombstone (`spec.withdrawn`), never by its absence: a member deletes copies
//! only on a tombstone it sees on the uid it copied from, and acknowledges it in the status.

use super::copy::{Owner, owner_of};
use super::payload::Digest;
use crate::kind::SourceKind;
use crate::kube::api::{LabelSelector, ObjectMeta};
use crate::kube::api::{Lease, Version};
use crate::mirror::types::{API_VERSION, ConflictPolicy, MirrorStatus, TargetSpec};
use crate::runtime::{ObjectKey, Store};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The spec format this build writes and reads; a member refuses another rather than apply part
/// of it.
pub const FORMAT: u32 = 1;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Placement {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub metadata: ObjectMeta,
    pub spec: PlacementSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<PlacementStatus>,
}

crate::impl_resource!(
    Placement,
    API_VERSION,
    "Placement",
    "placements",
    namespaced = true
);

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PlacementSpec {
    pub format: u32,
    /// The hub's Mirror this places.
    pub mirror: MirrorOnHub,
    /// The kind of the copies.
    pub kind: SourceKind,
    pub target_name: String,
    /// Which of the member's namespaces get a copy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// What every copy carries besides the content (the Mirror's target metadata and the
    /// source's labels and annotations it carries, resolved on the hub).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflicts: Option<ConflictPolicy>,
    /// What the copies should hold, as the hub hashed it; the member echoes it when they do.
    pub hash: String,
    /// The content, a row's fields as on the wire (`data`, `spec`…); none for a Secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    /// A Secret's carrier beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<Carrier>,
    /// Withdrawn: the member deletes the copies it made from this Placement.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub withdrawn: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MirrorOnHub {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// The carrier Secret of a Secret's data: its name beside the Placement, its `source-hash`
/// annotation (the member copies only a carrier whose hash is the Placement's), and the
/// source's type (the carrier's own is `skiff.dev/placed`, which no controller acts on).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Carrier {
    pub name: String,
    pub hash: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
}

/// The type of a carrier Secret.
pub const CARRIER_TYPE: &str = "skiff.dev/placed";

/// The member's report: its status of the Mirror the Placement stands for, as a local
/// Mirror's would read, plus the hash it echoes and the acknowledgement of a withdrawal.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PlacementStatus {
    #[serde(flatten)]
    pub copies: MirrorStatus,
    /// `spec.hash`, once every selected copy holds what the spec says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_hash: Option<String>,
    /// The copies of a withdrawn Placement are gone.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub withdrawn: bool,
}

/// The name of the Placement of the hub's Mirror `namespace/name`: a namespace holds no dot,
/// so the name splits back at its first one.
pub fn placement_name(namespace: &str, name: &str) -> String {
    format!("{namespace}.{name}")
}

/// What a hub's cache keeps of a Placement: whose it is, what its spec holds, and the member's
/// report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementInfo {
    pub owner: Option<Owner>,
    pub resource_version: Version,
    pub uid: Option<String>,
    /// The hash of its spec as written.
    pub spec: Digest,
    pub withdrawn: bool,
    /// The member acknowledged the tombstone: its copies are gone.
    pub acknowledged: bool,
    /// The hash the member echoed, once its copies hold the spec's.
    pub observed_hash: Option<String>,
    /// The member's `Ready` reason, when not ready.
    pub failing: Option<String>,
    /// Its carrier's name, for a Secret, and the member namespace it is in.
    pub carrier: Option<(String, String)>,
}

impl PlacementInfo {
    pub fn of(placement: &Placement) -> PlacementInfo {
        let status = placement.status.as_ref();
        let ready = status.and_then(|s| s.copies.conditions.iter().find(|c| c.type_ == "Ready"));
        PlacementInfo {
            owner: owner_of(&placement.metadata),
            resource_version: Version::new(placement.metadata.resource_version()),
            uid: placement.metadata.uid.clone(),
            spec: spec_hash(&placement.spec),
            withdrawn: placement.spec.withdrawn,
            acknowledged: status.is_some_and(|s| s.withdrawn),
            observed_hash: status.and_then(|s| s.observed_hash.clone()),
            failing: ready
                .filter(|c| c.status != "True")
                .map(|c| c.reason.clone()),
            carrier: (placement.spec.secret.as_ref())
                .map(|c| (placement.metadata.namespace().to_owned(), c.name.clone())),
        }
    }
}

/// The hash of a spec as written: the hub rewrites a Placement whose spec hash differs.
pub fn spec_hash(spec: &PlacementSpec) -> Digest {
    Digest::of(&serde_json::to_vec(spec).unwrap_or_default())
}

/// A member's heartbeat: a Lease in its namespace on the hub, made by its admission.
pub const HEARTBEAT_LEASE: &str = "skiff-member";

/// The label of the heartbeat Leases the hub watches, one per member namespace.
pub const HEARTBEAT_LABEL: &str = "skiff.dev/heartbeat=member";

/// The label that makes a hub namespace a member cluster's; its value is the cluster's name.
pub const MEMBER_LABEL: &str = "skiff.dev/member";

/// What a hub keeps of its members: their Placements (indexed by the fleet Mirror owning each)
/// and when it last heard each member's heartbeat.
#[derive(Clone)]
pub struct FleetStores {
    pub placements: Store<Placement, PlacementInfo>,
    pub heartbeats: Store<Lease, Instant>,
    /// `--member-silence-after`.
    pub silence: Duration,
}

impl FleetStores {
    pub fn new(silence: Duration) -> FleetStores {
        FleetStores {
            silence,
            placements: Store::new(PlacementInfo::of).with_index(|p: &PlacementInfo| {
                let carrier = p.carrier.iter().map(|(ns, name)| carrier_index(ns, name));
                p.owner.iter().map(owner_index).chain(carrier).collect()
            }),
            // When this hub heard the renewal: its own clock, whatever the member's says.
            heartbeats: Store::new(|lease: &Lease| {
                super::fleet_metrics::heard(lease.metadata.namespace());
                Instant::now()
            }),
        }
    }

    /// The Placements of the fleet Mirror `owner`, each with its key.
    pub fn owned(&self, owner: &Owner) -> Vec<(ObjectKey, PlacementInfo)> {
        self.placements.indexed(&owner_index(owner))
    }

    /// The owners of the Placements whose carrier is the Secret `ns/name`.
    pub fn carrier_owners(&self, ns: &str, name: &str) -> Vec<Option<Owner>> {
        let placements = self.placements.indexed(&carrier_index(ns, name));
        placements.into_iter().map(|(_, p)| p.owner).collect()
    }

    /// When the hub last heard the member of namespace `ns`, if it ever did.
    pub fn heard(&self, ns: &str) -> Option<Instant> {
        self.heartbeats.get(ns, HEARTBEAT_LEASE)
    }

    pub async fn wait_until_ready(&self) {
        self.placements.wait_until_ready().await;
        self.heartbeats.wait_until_ready().await;
    }
}

/// The index value of the carrier `ns/name`: a space, which no owner's index value holds.
fn carrier_index(ns: &str, name: &str) -> String {
    format!("carrier {ns}/{name}")
}

fn owner_index(owner: &Owner) -> String {
    format!("{}/{}", owner.namespace, owner.name)
}
