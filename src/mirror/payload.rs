//! The content a copy carries, as its kind's row lists it, and the hash that tells whether a
//! copy still holds what its Mirror wants.
//!
//! The hash is taken over a canonical JSON form, the same on both sides: of what the Mirror
//! wants, and of what a copy in the cache holds. The form is the row's (`kind::HashHead` and
//! each field's `Shape` say how an absent field reads), and it is what skiff has always
//! hashed, so an upgrade rewrites nothing (`golden.rs` pins it per kind). A copy without any
//! label or annotation of its own from skiff hashes as the payload alone.

use crate::kind::{HashHead, Kind, Shape, SourceKind};
use crate::kube::api::Object;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};
use std::collections::BTreeSet;
use std::fmt;

/// A sha256, kept as its 32 bytes (a copy cache entry holds one; hex only for the status).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Digest([u8; 32]);

impl Digest {
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(Sha256::digest(bytes).into())
    }

    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex()[..12])
    }
}

/// The content a copy carries: each field of its row's `content`, in the row's order, `None`
/// where the object does not hold it (an empty map, a `null` and a false `immutable` are the
/// same to the API server, and so are held as absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    kind: SourceKind,
    fields: Box<[Option<Value>]>,
}

impl Payload {
    /// The content of `object`, an object of the kind `row` describes.
    pub fn of(row: &'static Kind, object: &Object) -> Payload {
        let held = |field: &crate::kind::Field| {
            let value = object.field(field.name)?;
            let holds = match (&field.shape, value) {
                (_, Value::Null) => false,
                (Shape::Keys, Value::Object(map)) => !map.is_empty(),
                (Shape::Seal, value) => value == &Value::Bool(true),
                _ => true,
            };
            holds.then(|| value.clone())
        };
        Payload {
            kind: row.id,
            fields: row.content.iter().map(held).collect(),
        }
    }

    pub fn kind(&self) -> SourceKind {
        self.kind
    }

    pub fn row(&self) -> &'static Kind {
        self.kind.row()
    }

    /// The fields the payload holds, with their row entry.
    pub fn held(&self) -> impl Iterator<Item = (&'static crate::kind::Field, &Value)> {
        let row = self.row().content.iter();
        row.zip(self.fields.iter())
            .filter_map(|(field, value)| Some((field, value.as_ref()?)))
    }

    /// A field named as on the wire (`spec`, `roleRef`, `type`).
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.held().find(|(f, _)| f.name == name).map(|(_, v)| v)
    }

    /// A text field's value as the API server stores it: its default when absent.
    pub fn text(&self, name: &str) -> Option<&str> {
        let field = self.row().field(name)?;
        match (&field.shape, self.field(name)) {
            (_, Some(value)) => value.as_str(),
            (Shape::Text { default }, None) => *default,
            _ => None,
        }
    }

    /// The maps of keys, by field, each `None` where the payload holds none: an update
    /// replaces them whole.
    pub fn maps(&self) -> Vec<(&'static str, Option<&Map<String, Value>>)> {
        let row = self.row().content.iter();
        row.zip(self.fields.iter())
            .filter(|(field, _)| field.shape == Shape::Keys)
            .map(|(field, value)| (field.name, value.as_ref().and_then(Value::as_object)))
            .collect()
    }

    /// Whether the payload is sealed (`immutable: true`).
    pub fn immutable(&self) -> bool {
        self.held().any(|(f, _)| f.shape == Shape::Seal)
    }

    /// Whether one of the payload's maps holds `key`.
    pub fn has_key(&self, key: &str) -> bool {
        self.maps()
            .iter()
            .any(|(_, map)| map.is_some_and(|m| m.contains_key(key)))
    }

    /// The same payload with its maps holding only `keys` (those they have).
    pub fn only(&self, keys: &[String]) -> Payload {
        let row = self.row().content.iter();
        let fields = row.zip(self.fields.iter()).map(|(field, value)| {
            let (Shape::Keys, Some(Value::Object(map))) = (&field.shape, value) else {
                return value.clone();
            };
            // Inserted, not collected: see `carry::only`.
            let mut picked = Map::new();
            for (k, v) in keys.iter().filter_map(|k| map.get_key_value(k)) {
                picked.insert(k.clone(), v.clone());
            }
            (!picked.is_empty()).then_some(Value::Object(picked))
        });
        Payload {
            kind: self.kind,
            fields: fields.collect(),
        }
    }

    /// The same payload with each key `to` names (the Mirror's renames) under that name, in
    /// every map; or the names two keys would both take, across its maps.
    pub fn renamed<'a>(
        &self,
        to: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<Payload, BTreeSet<String>> {
        let (mut taken, mut twice) = (BTreeSet::new(), BTreeSet::new());
        let row = self.row().content.iter();
        let fields = row.zip(self.fields.iter()).map(|(field, value)| {
            let (Shape::Keys, Some(Value::Object(map))) = (&field.shape, value) else {
                return value.clone();
            };
            let mut renamed = Map::new();
            for (key, value) in map {
                let name = to(key).unwrap_or(key);
                if !taken.insert(name) {
                    twice.insert(name.to_owned());
                }
                renamed.insert(name.to_owned(), value.clone());
            }
            Some(Value::Object(renamed))
        });
        let payload = Payload {
            kind: self.kind,
            fields: fields.collect(),
        };
        if twice.is_empty() {
            Ok(payload)
        } else {
            Err(twice)
        }
    }

    /// A payload of the kind `row` describes holding `map` in its field of keys `field`, and
    /// nothing else (a projection's copy).
    pub fn keys_of(row: &'static Kind, field: &str, map: Map<String, Value>) -> Payload {
        let mut map = (!map.is_empty()).then_some(Value::Object(map));
        let fields = row.content.iter().map(|f| match f.name == field {
            true => map.take(),
            false => None,
        });
        Payload {
            kind: row.id,
            fields: fields.collect(),
        }
    }

    /// The hash of the payload alone.
    pub fn hash(&self) -> Digest {
        Digest::of(&self.canonical())
    }

    /// The hash of the payload with the labels and annotations skiff manages on the copy
    /// (`managed`, see [`super::managed`]); the payload's own hash when there are none.
    pub fn hash_with<M: Serialize>(&self, managed: Option<&M>) -> Digest {
        let mut bytes = self.canonical();
        if let Some(managed) = managed {
            bytes.push(b'\n');
            bytes.extend(serde_json::to_vec(managed).unwrap_or_default());
        }
        Digest::of(&bytes)
    }

    fn canonical(&self) -> Vec<u8> {
        serde_json::to_vec(&Canonical(self)).unwrap_or_default()
    }
}

/// The canonical form of a payload: its row's head, then each field as its shape reads it.
struct Canonical<'a>(&'a Payload);

impl Serialize for Canonical<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let row = self.0.row();
        let mut map = serializer.serialize_map(None)?;
        match row.hash {
            HashHead::Kind => map.serialize_entry("kind", row.name)?,
            HashHead::KitOf => {
                map.serialize_entry("kind", "Kit")?;
                map.serialize_entry("of", row.name)?;
            }
        }
        let empty = Value::Object(Map::new());
        for (field, value) in row.content.iter().zip(self.0.fields.iter()) {
            match (&field.shape, value) {
                (_, Some(value)) => map.serialize_entry(field.name, value)?,
                (Shape::Keys, None) => map.serialize_entry(field.name, &empty)?,
                (Shape::Text { .. }, None) => map.serialize_entry(field.name, &Value::Null)?,
                (Shape::Seal | Shape::Value, None) => {}
            }
        }
        map.end()
    }
}

/// Which of an object's [`Payload::maps`] it holds at all, a bit each (an absent map and an
/// empty one are the same to the API server). A strategic patch's `$patch: replace` of a map
/// the object lacks is dropped by the server, so an update sets such a map plainly instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeldMaps(u8);

impl HeldMaps {
    pub fn of(payload: &Payload) -> HeldMaps {
        let maps = payload.maps();
        let held = maps.iter().enumerate();
        HeldMaps(held.fold(0, |bits, (i, (_, map))| bits | u8::from(map.is_some()) << i))
    }

    /// Whether the object holds the `index`th of its [`Payload::maps`].
    pub fn holds(self, index: usize) -> bool {
        self.0 & 1 << index != 0
    }
}

#[cfg(test)]
mod tests;
