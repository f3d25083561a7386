//! The bodies of a copy's create and update: the copy's own metadata (or patch of it), and its
//! content serialized once and shared by every copy's write ([`Pieces`]).
//!
//! A fan-out of a 900 KB source into 1,000 namespaces then serializes the content once, and
//! each write in flight holds its head (a few hundred bytes) and a reference to the content,
//! instead of a copy of the content, its encoding and the buffer the HTTP client sends.

use super::copy::Owner;
use super::desired::DesiredCopy;
use super::payload::{HeldMaps, Payload};
use super::render::new_copy_meta;
use crate::kube::Pieces;
use serde::Serialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// The body of the create of [`super::render::new_copy`]: its own metadata, and `content`
/// ([`content_members`] of its payload), which every copy's create shares.
pub fn new_copy_body(
    owner: &Owner,
    namespace: &str,
    name: &str,
    desired: &DesiredCopy,
    content: &Arc<[u8]>,
) -> Result<Pieces, serde_json::Error> {
    let meta = new_copy_meta(owner, namespace, name, desired);
    let mut head = serde_json::to_vec(&json!({"metadata": meta}))?;
    head.pop(); // the closing brace: the content's members follow
    if !content.is_empty() {
        head.push(b',');
    }
    let end: Arc<[u8]> = Arc::from(&b"}"[..]);
    Ok(Pieces::new(vec![head.into(), Arc::clone(content), end]))
}

/// A map's field and its members, serialized once and shared by every update.
pub type MapMembers = (&'static str, Arc<[u8]>);

/// The body of an update: `patch` ([`super::render::update_patch`], without the maps) and each
/// of the payload's maps, whose members (`map_members`, in [`Payload::maps`]'s order) every
/// update shares: replaced whole (`$patch: replace`) where the copy holds that map, set
/// plainly where it holds none (the server drops a replaced map the object lacks), and left
/// out where neither has it (an empty map set would differ from none, which an immutable
/// copy refuses).
pub fn update_body(
    patch: &Value,
    map_members: &[MapMembers],
    held: HeldMaps,
) -> Result<Pieces, serde_json::Error> {
    let mut head = serde_json::to_vec(patch)?;
    head.pop(); // the closing brace: the maps follow
    let mut pieces = Vec::with_capacity(1 + 3 * map_members.len());
    for (i, (field, members)) in map_members.iter().enumerate() {
        if !held.holds(i) && members.is_empty() {
            continue;
        }
        let replace = if held.holds(i) {
            "\"$patch\":\"replace\""
        } else {
            ""
        };
        let comma = if replace.is_empty() || members.is_empty() {
            ""
        } else {
            ","
        };
        head.extend_from_slice(format!(",\"{field}\":{{{replace}{comma}").as_bytes());
        pieces.push(std::mem::take(&mut head).into());
        pieces.push(Arc::clone(members));
        head.push(b'}');
    }
    head.push(b'}');
    pieces.push(head.into());
    Ok(Pieces::new(pieces))
}

/// The members of each of `payload`'s maps, without the braces, as [`update_body`] shares them.
pub fn map_members(payload: &Payload) -> Result<Vec<MapMembers>, serde_json::Error> {
    let maps = payload.maps().into_iter();
    maps.map(|(field, map)| Ok((field, map.map_or(Ok(Vec::new()), members)?.into())))
        .collect()
}

/// A payload as the members of a copy's JSON object, without the braces: each field it holds,
/// in its row's order, as [`super::render::new_copy`] has them.
pub fn content_members(payload: &Payload) -> Result<Vec<u8>, serde_json::Error> {
    members(&Held(payload))
}

/// The fields a payload holds, serialized by reference (a 900 KB source is not copied).
struct Held<'a>(&'a Payload);

impl Serialize for Held<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(None)?;
        for (field, value) in self.0.held() {
            map.serialize_entry(field.name, value)?;
        }
        map.end()
    }
}

/// `value`'s JSON object without its braces.
fn members(value: &impl Serialize) -> Result<Vec<u8>, serde_json::Error> {
    let mut bytes = serde_json::to_vec(value)?;
    bytes.pop();
    bytes.remove(0);
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::{ConfigMap, Secret};
    use crate::mirror::fixtures::{self, map};
    use crate::mirror::render::new_copy_meta;
    use crate::mirror::types::{Mirror, MirrorSpec, SourceKind, SourceRef};

    fn owner() -> Owner {
        Owner {
            namespace: "src".into(),
            name: "ca".into(),
        }
    }

    /// The body `new_copy_body` sends for a copy of the source `typed`, and what `typed` with
    /// the copy's metadata encodes as: the same object.
    fn both(kind: SourceKind, typed: &impl Serialize) -> (Value, Value) {
        let mirror = Mirror {
            spec: MirrorSpec {
                source: SourceRef {
                    kind,
                    name: "app-ca".into(),
                    ..SourceRef::default()
                },
                ..MirrorSpec::default()
            },
            ..Mirror::default()
        };
        let source = fixtures::source(kind, typed);
        let desired = DesiredCopy::of(&mirror, &source).expect("desired");
        let content = content_members(desired.payload()).expect("content").into();
        let body = new_copy_body(&owner(), "team-a", "app-ca", &desired, &content).expect("body");
        let sent = serde_json::from_slice(&body.to_vec()).expect("the body is JSON");
        let mut expected = serde_json::to_value(typed).expect("encodes");
        let meta = new_copy_meta(&owner(), "team-a", "app-ca", &desired);
        expected["metadata"] = serde_json::to_value(meta).expect("encodes");
        (sent, expected)
    }

    #[test]
    fn the_create_body_is_the_new_copy_with_its_content_shared() {
        let mut cm = ConfigMap {
            data: map(&[("ca.crt", "PEM"), ("b", "\"quoted\"")]),
            binary_data: map(&[("blob", "AAEC")]),
            immutable: Some(true),
            ..ConfigMap::default()
        };
        let (sent, built) = both(SourceKind::ConfigMap, &cm);
        assert_eq!(sent, built);
        cm.data.clear();
        cm.binary_data.clear();
        cm.immutable = None;
        let (sent, built) = both(SourceKind::ConfigMap, &cm);
        assert_eq!(sent, built, "no content at all");
        let secret = Secret {
            type_: Some("kubernetes.io/tls".into()),
            data: map(&[("tls.crt", "Qw=="), ("tls.key", "Sw==")]),
            ..Secret::default()
        };
        let (sent, built) = both(SourceKind::Secret, &secret);
        assert_eq!(sent, built);
        let binding = json!({"metadata": {},
            "subjects": [{"kind": "Group", "name": "team-a", "apiGroup": "rbac.authorization.k8s.io"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}});
        let (sent, built) = both(SourceKind::RoleBinding, &binding);
        assert_eq!(sent, built, "a kit kind's fields");
        assert_eq!(sent["roleRef"]["name"], "edit");
    }
}
