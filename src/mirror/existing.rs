//! An object holding a copy's name, read from the server rather than the cache, and what skiff
//! may do with it: update it (its own copy), adopt it (handed over with `skiff.dev/adopt`),
//! replace it (its type or immutability forbids an update), or leave it alone.
//!
//! The cache holds only skiff's copies, so an object it cannot see is met when a create is
//! refused, and read then; so is a copy whose update the server refused.

use super::copy::{CopyInfo, Owner};
use super::desired::DesiredCopy;
use super::payload::{Digest, Payload};
use crate::kind::Kind;
use crate::kube::api::Object;
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
    /// The hash of its payload alone, and what of the payload the server may refuse to change:
    /// whether it is sealed, and the fields its row says are fixed, as the server stores them.
    payload_hash: Digest,
    immutable: bool,
    fixed: Vec<(&'static str, Value)>,
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
    /// The object `object`, of the kind `row` describes.
    pub fn of(row: &'static Kind, object: &Object) -> Existing {
        let meta = &object.metadata;
        let payload = Payload::of(row, object);
        Existing {
            info: CopyInfo::written(meta, &payload),
            uid: meta.uid.clone().unwrap_or_default(),
            adopt_for: (meta.annotations.get(ADOPT_ANNOTATION)).and_then(|v| parse_owner(v)),
            payload_hash: payload.hash(),
            immutable: payload.immutable(),
            fixed: fixed_fields(&payload),
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
        let kind = wanted.row().name;
        for (name, value) in fixed_fields(wanted) {
            let held = self.fixed.iter().find(|(held, _)| *held == name);
            if let Some((_, held)) = held.filter(|(_, held)| *held != value) {
                let (held, value) = (shown(held), shown(&value));
                return Some(format!(
                    "its {name} {held} differs from the source's {value}, and a {kind}'s \
                     {name} cannot change"
                ));
            }
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

/// The fields of `payload` its row says the server never changes, as the server stores them
/// (a text field's default where it holds none).
fn fixed_fields(payload: &Payload) -> Vec<(&'static str, Value)> {
    let fixed = payload.row().content.iter().filter(|f| f.fixed);
    let value = |name| match payload.text(name) {
        Some(text) => Some(Value::from(text)),
        None => payload.field(name).cloned(),
    };
    fixed
        .filter_map(|f| Some((f.name, value(f.name)?)))
        .collect()
}

/// A value as a message shows it: a string as it is, anything else as JSON.
fn shown(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
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
