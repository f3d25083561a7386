//! The `MirrorAcceptance` custom resource (skiff.dev/v1alpha1): a target namespace's consent
//! to receive the copies of one tenant Mirror, and the index that makes that consent a lookup.
//!
//! A tenant Mirror (see [`super::consent`]) copies only into the namespaces it selects that
//! also hold an acceptance naming it. The acceptance cache keeps a small [`Accepted`] per
//! object, indexed by the Mirror it names, so "who accepts this Mirror?" costs the acceptances
//! found, never the namespaces or Mirrors of the cluster.

use super::copy::Owner;
use super::own_writes::Versioned;
use super::types::{API_VERSION, Condition, SourceKind};
use crate::kube::api::{ObjectMeta, Version};
use crate::runtime::{Change, ObjectKey, Store};
use by_mirror::ByMirror;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::Arc;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MirrorAcceptance {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub metadata: ObjectMeta,
    pub spec: AcceptanceSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<AcceptanceStatus>,
}

crate::impl_resource!(
    MirrorAcceptance,
    API_VERSION,
    "MirrorAcceptance",
    "mirroracceptances",
    namespaced = true
);

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AcceptanceSpec {
    pub from: MirrorRef,
    /// The kind of the copy accepted; the admission policy checks that its author may create
    /// that kind here. An offer of another kind is not served (`NotAvailable`).
    pub kind: SourceKind,
    /// The copy's name here, when not the offer's usual one. A Secret's must be one of
    /// `--secret-target-names`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_name: Option<String>,
}

/// The Mirror whose copies are accepted: its namespace and name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MirrorRef {
    pub namespace: String,
    pub mirror: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AcceptanceStatus {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// The one condition an acceptance reports.
pub const SERVED: &str = "Served";

/// What an acceptance is told; the `Served` condition's reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Served,
    /// Not offered to this namespace, or no such Mirror or source: one answer for both.
    NotAvailable,
    /// An object of the copy's name that is not skiff's is in the way; it is left alone.
    Conflict,
    /// The offer shares a kind tenants may not share.
    KindNotAllowed,
    /// Offered and accepted, the copy not written (yet): the offer's cap, or under way.
    Pending,
}

impl Verdict {
    const ALL: [Verdict; 5] = [
        Verdict::Served,
        Verdict::NotAvailable,
        Verdict::Conflict,
        Verdict::KindNotAllowed,
        Verdict::Pending,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Served => "Served",
            Verdict::NotAvailable => "NotAvailable",
            Verdict::Conflict => "Conflict",
            Verdict::KindNotAllowed => "KindNotAllowed",
            Verdict::Pending => "Pending",
        }
    }

    fn parse(reason: &str) -> Option<Verdict> {
        Verdict::ALL.into_iter().find(|v| v.as_str() == reason)
    }
}

/// What the acceptance cache keeps of one acceptance (its namespace and name are the store's
/// key): the Mirror it names, the kind it accepts, and whether its status already shows a
/// reason for its current generation, so a status equal to it is not written again, and its
/// `targetName`, and the version it was read at (so this replica's own status writes can stand
/// in for a cache that has not seen them yet, see [`super::own_writes`]). Kept small, with no
/// allocation of its own unless it sets a `targetName` (the Mirror's name is shared, see
/// [`ByMirror`]): the cache holds one per acceptance of the cluster (`benches/acceptances.rs`
/// measures it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The Mirror it names, as `namespace/name`, shared with the index.
    pub from: Arc<str>,
    pub generation: i64,
    /// The `Served` condition's reason, if any.
    shown: Option<Verdict>,
    /// Whether that condition was written for `generation`.
    shown_current: bool,
    /// The kind accepted.
    pub kind: SourceKind,
    /// `spec.targetName`, if set: behind a thin pointer, so an acceptance without one costs
    /// one word and no allocation.
    target_name: Option<Box<Box<str>>>,
    /// Its resourceVersion.
    version: Version,
}

impl Versioned for Accepted {
    fn version(&self) -> Version {
        self.version.clone()
    }
}

impl Accepted {
    /// The projection of `acceptance`, its Mirror's name interned in `index`.
    fn of(acceptance: &MirrorAcceptance, index: &ByMirror) -> Accepted {
        let generation = acceptance.metadata.generation.unwrap_or_default();
        let served = (acceptance.status.as_ref())
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == SERVED));
        let from = &acceptance.spec.from;
        Accepted {
            from: index.intern(&format!("{}/{}", from.namespace, from.mirror)),
            generation,
            shown: served.and_then(|c| Verdict::parse(&c.reason)),
            shown_current: served
                .is_some_and(|c| c.observed_generation.unwrap_or_default() == generation),
            kind: acceptance.spec.kind,
            target_name: (acceptance.spec.target_name.as_deref()).map(|n| Box::new(n.into())),
            version: Version::new(acceptance.metadata.resource_version()),
        }
    }

    /// The copy's name asked by `spec.targetName`, if set.
    pub fn target_name(&self) -> Option<&str> {
        self.target_name.as_deref().map(|n| &**n)
    }

    /// The `Served` condition's reason, if it was written for the current generation.
    pub fn shown(&self) -> Option<Verdict> {
        self.shown.filter(|_| self.shown_current)
    }

    /// Whether the status shows `verdict` for the current generation.
    pub fn shows(&self, verdict: Verdict) -> bool {
        self.shown() == Some(verdict)
    }

    /// Whether posting `verdict` changes the reason shown (whatever the generation).
    pub fn changes_reason(&self, verdict: Verdict) -> bool {
        self.shown != Some(verdict)
    }
}

/// The acceptance cache: a store of [`Accepted`], indexed by the Mirror each names.
#[derive(Clone)]
pub struct Acceptances {
    pub store: Store<MirrorAcceptance, Accepted>,
    by_mirror: ByMirror,
}

impl Default for Acceptances {
    fn default() -> Self {
        let by_mirror = ByMirror::default();
        let index = by_mirror.clone();
        Acceptances {
            store: Store::new(move |a| Accepted::of(a, &index)),
            by_mirror,
        }
    }
}

impl Acceptances {
    /// Applies one watch event to the store and the index, as the watch does.
    pub fn apply(&self, event: &Change<MirrorAcceptance>) {
        let previous = self.store.apply(event);
        self.follow(event, previous.as_ref());
    }

    /// What the cache would keep of `acceptance` (one this replica wrote, for example).
    pub fn project(&self, acceptance: &MirrorAcceptance) -> Accepted {
        Accepted::of(acceptance, &self.by_mirror)
    }

    /// Brings the index up to date with an event the store has applied.
    pub fn follow(&self, event: &Change<MirrorAcceptance>, previous: Option<&Accepted>) {
        self.by_mirror.follow(&self.store, event, previous);
    }

    /// The namespaces holding an acceptance of the Mirror `owner` that accepts `kind`.
    pub fn accepting(&self, owner: &Owner, kind: SourceKind) -> BTreeSet<String> {
        self.of(owner)
            .into_iter()
            .filter(|(_, a)| a.kind == kind)
            .map(|(key, _)| key.namespace.into())
            .collect()
    }

    /// The acceptances of the Mirror `owner`, with what the cache keeps of each.
    pub fn of(&self, owner: &Owner) -> Vec<(ObjectKey, Accepted)> {
        let from = format!("{}/{}", owner.namespace, owner.name);
        self.by_mirror
            .keys(&from)
            .into_iter()
            .filter_map(|key| {
                let accepted = self.store.get(&key.namespace, &key.name)?;
                Some((key, accepted))
            })
            .collect()
    }
}

/// What the acceptance watch does with each event after the store applied it: the index
/// follows, and the Mirrors it concerns are returned. Those are the one it names (whether or
/// not it exists, so its status is written either way); at the end of a relist, every Mirror
/// any acceptance names and every Mirror cached: an acceptance deleted while the watch was
/// down is in no list.
pub fn accepted_mirrors(
    acceptances: Acceptances,
    mirrors: Store<super::types::Mirror, super::types::Mirror>,
) -> impl Fn(&Change<MirrorAcceptance>, Option<&Accepted>) -> Vec<ObjectKey> + Send + 'static {
    move |event, previous| {
        acceptances.follow(event, previous);
        match event {
            Change::Listed(a) | Change::Applied(a) | Change::Deleted(a) => {
                let from = &a.spec.from;
                if from.namespace.is_empty() || from.mirror.is_empty() {
                    return Vec::new();
                }
                vec![ObjectKey::new(&from.namespace, &from.mirror)]
            }
            Change::Relisting => Vec::new(),
            Change::Relisted => {
                let mut keys: BTreeSet<ObjectKey> = mirrors.keys().into_iter().collect();
                acceptances.store.scan(|_, a| {
                    if let Some((ns, name)) = a.from.split_once('/') {
                        keys.insert(ObjectKey::new(ns, name));
                    }
                });
                keys.into_iter().collect()
            }
        }
    }
}

mod by_mirror;
pub mod local_names;
#[cfg(test)]
mod tests;
