//! An object holding a copy's name, read from the server rather than the cache, and what skiff
//! may do with it: update it (its own copy), adopt it (handed over with `skiff.dev/adopt`),
//! replace it (its type or immutability forbids an update), or leave it alone.
//!
//! The cache holds only skiff's copies, so an object it cannot see is met when a create is
//! refused, and read then; so is a copy whose update the server refused.

use super::copy::{CopyInfo, Owner};
use super::desired::DesiredCopy;
use super::kit_table::kit;
use super::payload::{Digest, Payload};
use super::types::SourceKind;
use crate::kube::api::{ConfigMap, KitObject, ObjectMeta, Secret};
use serde_json::Value;

/// The annotation by which a user hands an object skiff does not manage to a Mirror:
/// `skiff.dev/adopt: "<mirror-namespace>/<mirror-name>"`.
pub const ADOPT_ANNOTATION: &str = "skiff.dev/adopt";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Existing {
    pub info: CopyInfo,
    pub uid: String,
    /// The Mirror its adopt annotation hands it to, if it has one that names a Mirror.
    adopt_for: Option<Owner>,
    /// The hash of its payload alone, and what of the payload the server may refuse to change.
    payload_hash: Digest,
    immutable: bool,
    secret_type: Option<String>,
    /// A RoleBinding's `roleRef`, which cannot change.
    role_ref: Option<Value>,
}

/// Whose the object is, as far as `me` (a Mirror) is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// This Mirror's copy.
    Mine,
    /// Not managed by skiff, and handed to this Mirror.
    Adoptable,
    /// Another Mirror's copy, or an object skiff does not manage that nobody handed over.
    NotMine,
}

impl Existing {
    pub fn of_configmap(cm: &ConfigMap) -> Existing {
        Existing::new(
            &cm.metadata,
            CopyInfo::of_configmap(cm),
            Payload::of_configmap(cm),
        )
    }

    pub fn of_secret(secret: &Secret) -> Existing {
        let info = CopyInfo::of_secret(secret);
        Existing::new(&secret.metadata, info, Payload::of_secret(secret))
    }

    pub fn of_kit(kind: SourceKind, object: &KitObject) -> Existing {
        let fields = kit(kind).map_or(&[][..], |k| k.fields);
        let info = CopyInfo::of_kit_object(kind, object, fields);
        Existing::new(
            &object.metadata,
            info,
            Payload::of_kit(kind, object, fields),
        )
    }

    fn new(meta: &ObjectMeta, info: CopyInfo, payload: Payload) -> Existing {
        Existing {
            info,
            uid: meta.uid.clone().unwrap_or_default(),
            adopt_for: meta
                .annotations
                .get(ADOPT_ANNOTATION)
                .and_then(|v| parse_owner(v)),
            payload_hash: payload.hash(),
            immutable: payload.immutable(),
            secret_type: payload.secret_type().map(str::to_owned),
            role_ref: payload.field("roleRef").cloned(),
        }
    }

    pub fn claim(&self, me: &Owner) -> Claim {
        match &self.info.owner {
            Some(owner) if **owner == *me => Claim::Mine,
            Some(_) => Claim::NotMine,
            None if self.adopt_for.as_ref() == Some(me) => Claim::Adoptable,
            None => Claim::NotMine,
        }
    }

    /// Why the server refuses to make this object what `desired` wants, so that it must be
    /// deleted and created again; `None` when an update can do it.
    pub fn replacement_reason(&self, desired: &DesiredCopy) -> Option<String> {
        let wanted = desired.payload();
        if let (Some(held), Some(wanted)) = (&self.secret_type, wanted.secret_type())
            && held != wanted
        {
            return Some(format!(
                "its type {held} differs from the source's {wanted}, and a Secret's type cannot change"
            ));
        }
        if let (Some(held), Some(wanted)) = (&self.role_ref, wanted.field("roleRef"))
            && held != wanted
        {
            return Some(format!(
                "its roleRef {} differs from the source's {}, and a RoleBinding's roleRef \
                 cannot change",
                held["name"], wanted["name"]
            ));
        }
        if !self.immutable || self.payload_hash == wanted.hash() {
            return None;
        }
        Some(if wanted.immutable() {
            "it is immutable and its data must change".to_owned()
        } else {
            "it is immutable and its source no longer is".to_owned()
        })
    }
}

/// `namespace/name` as an owner; `None` for anything else.
fn parse_owner(value: &str) -> Option<Owner> {
    let (namespace, name) = value.trim().split_once('/')?;
    let valid = |s: &str| !s.is_empty() && !s.contains('/');
    (valid(namespace) && valid(name)).then(|| Owner {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    })
}

#[cfg(test)]
mod tests;
