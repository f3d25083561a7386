//! A Secret published as a ConfigMap (`spec.target.kind`): the keys a Mirror lists, each value
//! checked by the projection its source's row allows ([`crate::kind::Projection`]), and the
//! copy built of them.
//!
//! A ConfigMap is read by anyone who may read ConfigMaps in its namespace, so every listed key
//! is checked and one that fails refuses the whole copy, naming the key and why: a copy
//! holding the keys that passed would hide that one was left behind. Nothing else of the
//! source goes with the keys (not its type, not its immutability), and everything else about
//! the copy (its caches, names, writes, conflicts, adoption, contests and cleanup) follows the
//! copy's row as for any copy of that kind.

use super::payload::Payload;
use super::status::{Reason, Refusal, and_list};
use super::types::Mirror;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

/// The copy of `picked` (the source's payload cut to the listed keys) as `mirror`'s copies'
/// kind, or why it may not be published.
pub fn project(mirror: &Mirror, picked: &Payload) -> Result<Payload, Refusal> {
    let (from, to) = (picked.row(), mirror.spec.copy_kind().row());
    let Some(projection) = from.projection(to.id) else {
        return Err(not_supported(from.name, to.name));
    };
    let values = picked
        .field(projection.from_field)
        .and_then(Value::as_object);
    let mut published = Map::new();
    let mut refused: Vec<(&str, String)> = Vec::new();
    for (key, value) in values.into_iter().flatten() {
        let text = decoded(value).and_then(|bytes| {
            (projection.check)(&bytes)?;
            String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_owned())
        });
        match text {
            Ok(text) => {
                published.insert(key.clone(), Value::String(text));
            }
            Err(why) => refused.push((key, why)),
        }
    }
    if !refused.is_empty() {
        return Err(not_publishable(
            mirror,
            (from.name, to.name),
            projection.admits,
            &refused,
        ));
    }
    Ok(Payload::keys_of(to, projection.to_field, published))
}

/// A Secret's value as its bytes.
fn decoded(value: &Value) -> Result<Vec<u8>, String> {
    let text = value.as_str().ok_or("it is not a string")?;
    STANDARD
        .decode(text)
        .map_err(|_| "it is not base64, as a Secret's data is".to_owned())
}

fn not_supported(from: &str, to: &str) -> Refusal {
    Refusal {
        reason: Reason::ProjectionNotSupported,
        message: format!(
            "spec.target.kind {to}: a {from} is not published as a {to}; nothing is copied. \
             Remove spec.target.kind to copy the {from} as it is"
        ),
    }
}

fn not_publishable(
    mirror: &Mirror,
    (from, to): (&str, &str),
    admits: &str,
    refused: &[(&str, String)],
) -> Refusal {
    let keys: Vec<&str> = refused.iter().map(|(key, _)| *key).collect();
    let whys: Vec<String> = refused
        .iter()
        .map(|(key, why)| format!("{key}: {why}"))
        .collect();
    Refusal {
        reason: Reason::KeyNotPublishable,
        message: format!(
            "{from} {}/{} is published as a {to} only with {admits} in each listed key, and \
             {} {} not ({}); nothing is copied. Remove {} from spec.source.keys",
            mirror.metadata.namespace(),
            mirror.spec.source.name,
            and_list(&keys),
            if keys.len() == 1 { "is" } else { "are" },
            whys.join("; "),
            if keys.len() == 1 { "it" } else { "them" },
        ),
    }
}

#[cfg(test)]
mod tests;
