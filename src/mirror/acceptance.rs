//! The `MirrorAcceptance` custom resource (skiff.dev/v1alpha1): a target namespace's consent
//! to receive the copies of one tenant Mirror, and the index that makes that consent a lookup.
//!
//! A tenant Mirror (see [`super::consent`]) copies only into the namespaces it selects that
//! also hold an acceptance naming it. The acceptance cache keeps a small [`Accepted`] per
//! object, indexed by the Mirror it names, so "who accepts this Mirror?" costs the acceptances
//! found, never the namespaces or Mirrors of the cluster.

use super::copy::Owner;
use super::types::{API_VERSION, Condition, SourceKind};
use crate::kube::api::ObjectMeta;
use crate::runtime::{Change, ObjectKey, Store};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

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
/// key): the Mirror it names, and what its status shows, so a status equal to it is not
/// written again. Kept small, one allocation besides the key: the cache holds one per
/// acceptance of the cluster (`benches/acceptances.rs` measures it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The Mirror it names, as `namespace/name` (its index value).
    pub from: Box<str>,
    pub generation: i64,
    /// The generation the `Served` condition was written for.
    shown_generation: i64,
    /// The `Served` condition's reason, if any.
    shown_reason: Option<Verdict>,
    /// The kind accepted.
    pub kind: SourceKind,
}

impl Accepted {
    pub fn of(acceptance: &MirrorAcceptance) -> Accepted {
        let generation = acceptance.metadata.generation.unwrap_or_default();
        let shown = acceptance.status.as_ref().and_then(|s| {
            let served = s.conditions.iter().find(|c| c.type_ == SERVED)?;
            let verdict = Verdict::parse(&served.reason)?;
            Some((verdict, served.observed_generation.unwrap_or_default()))
        });
        let from = &acceptance.spec.from;
        Accepted {
            from: format!("{}/{}", from.namespace, from.mirror).into(),
            generation,
            shown_generation: shown.map_or(0, |(_, g)| g),
            shown_reason: shown.map(|(v, _)| v),
            kind: acceptance.spec.kind,
        }
    }

    /// The `Served` condition's reason and the generation it was written for, if any.
    pub fn shown(&self) -> Option<(Verdict, i64)> {
        Some((self.shown_reason?, self.shown_generation))
    }
}

/// The acceptance cache, indexed by the Mirror each acceptance names.
pub fn acceptance_store() -> Store<MirrorAcceptance, Accepted> {
    Store::new(Accepted::of).with_index(|a: &Accepted| vec![a.from.to_string()])
}

fn mirror_index(owner: &Owner) -> String {
    format!("{}/{}", owner.namespace, owner.name)
}

/// The namespaces holding an acceptance of the Mirror `owner` that accepts `kind`.
pub fn accepting(
    acceptances: &Store<MirrorAcceptance, Accepted>,
    owner: &Owner,
    kind: SourceKind,
) -> BTreeSet<String> {
    acceptances_of(acceptances, owner)
        .into_iter()
        .filter(|(_, a)| a.kind == kind)
        .map(|(key, _)| key.namespace)
        .collect()
}

/// The acceptances of the Mirror `owner`, with what the cache keeps of each.
pub fn acceptances_of(
    acceptances: &Store<MirrorAcceptance, Accepted>,
    owner: &Owner,
) -> Vec<(ObjectKey, Accepted)> {
    acceptances
        .indexed_keys(&mirror_index(owner))
        .into_iter()
        .filter_map(|key| {
            let accepted = acceptances.get(&key.namespace, &key.name)?;
            Some((key, accepted))
        })
        .collect()
}

/// The Mirrors an acceptance event concerns: the one it names (whether or not it exists, so
/// its status is written either way). At the end of a relist, every Mirror any acceptance
/// names and every Mirror cached: an acceptance deleted while the watch was down is in no list.
pub fn accepted_mirrors(
    acceptances: Store<MirrorAcceptance, Accepted>,
    mirrors: Store<super::types::Mirror, super::types::Mirror>,
) -> impl Fn(&Change<MirrorAcceptance>) -> Vec<ObjectKey> + Send + 'static {
    move |event| match event {
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
            acceptances.scan(|_, a| {
                if let Some((ns, name)) = a.from.split_once('/') {
                    keys.insert(ObjectKey::new(ns, name));
                }
            });
            keys.into_iter().collect()
        }
    }
}

#[cfg(test)]
mod tests;
