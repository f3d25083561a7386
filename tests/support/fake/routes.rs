//! URL routing of the fake API server: which resource, namespace and object a path names, and
//! the request's query parameters.

use serde_json::Value;
use std::collections::HashMap;

/// A resource type as it appears in URLs: group ("" for core), version and plural.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Resource {
    pub group: String,
    pub version: String,
    pub plural: String,
}

/// What a request path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A collection; `namespace: None` is every namespace (or a cluster-scoped collection).
    Collection {
        resource: Resource,
        namespace: Option<String>,
    },
    /// One object, or its `/status` subresource.
    Object {
        resource: Resource,
        namespace: Option<String>,
        name: String,
        status: bool,
    },
}

/// Kinds whose plural is not simply the lower-cased kind plus "s", and common ones.
const KNOWN_KINDS: &[(&str, &str)] = &[
    ("Namespace", "namespaces"),
    ("ConfigMap", "configmaps"),
    ("Secret", "secrets"),
    ("Lease", "leases"),
    ("Event", "events"),
    ("Endpoints", "endpoints"),
    ("Pod", "pods"),
    ("Node", "nodes"),
    ("Service", "services"),
    ("ServiceAccount", "serviceaccounts"),
    ("Mirror", "mirrors"),
    ("CustomResourceDefinition", "customresourcedefinitions"),
    ("Ingress", "ingresses"),
    ("NetworkPolicy", "networkpolicies"),
];

impl Resource {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The object kind, from the table or by singularising the plural.
    pub fn kind(&self) -> String {
        if let Some((kind, _)) = KNOWN_KINDS.iter().find(|(_, p)| *p == self.plural) {
            return kind.to_string();
        }
        let singular = if let Some(stem) = self.plural.strip_suffix("ies") {
            format!("{stem}y")
        } else {
            self.plural
                .strip_suffix('s')
                .unwrap_or(&self.plural)
                .to_string()
        };
        let mut chars = singular.chars();
        chars
            .next()
            .map(|first| first.to_uppercase().chain(chars).collect())
            .unwrap_or_default()
    }

    /// Objects of non-core groups are treated as having a `/status` subresource: writes to the
    /// main resource keep the stored status, as the apiserver does for such kinds.
    pub fn has_status_subresource(&self) -> bool {
        !self.group.is_empty()
    }

    /// The resource of an object, from its `apiVersion` and `kind`.
    pub fn of_object(object: &Value) -> Option<Resource> {
        let api_version = object.get("apiVersion")?.as_str()?;
        let kind = object.get("kind")?.as_str()?;
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        Some(Resource {
            group: group.to_string(),
            version: version.to_string(),
            plural: plural_of(kind),
        })
    }
}

fn plural_of(kind: &str) -> String {
    if let Some((_, plural)) = KNOWN_KINDS.iter().find(|(k, _)| *k == kind) {
        return plural.to_string();
    }
    let lower = kind.to_ascii_lowercase();
    if lower.ends_with('s') || lower.ends_with('x') {
        format!("{lower}es")
    } else if let Some(stem) = lower.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{lower}s")
    }
}

/// Parses a request path; `None` for paths that name no resource (answered 404).
pub fn parse(path: &str) -> Option<Target> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let resource = |plural: &str| Resource {
        group: group.to_string(),
        version: version.to_string(),
        plural: plural.to_string(),
    };
    let object = |plural: &str, namespace: Option<&str>, name: &str, status: bool| Target::Object {
        resource: resource(plural),
        namespace: namespace.map(str::to_string),
        name: name.to_string(),
        status,
    };
    let target = match rest {
        ["namespaces", name, "status"] => object("namespaces", None, name, true),
        ["namespaces", ns, plural] => Target::Collection {
            resource: resource(plural),
            namespace: Some(ns.to_string()),
        },
        ["namespaces", ns, plural, name] => object(plural, Some(ns), name, false),
        ["namespaces", ns, plural, name, "status"] => object(plural, Some(ns), name, true),
        [plural] => Target::Collection {
            resource: resource(plural),
            namespace: None,
        },
        [plural, name] => object(plural, None, name, false),
        [plural, name, "status"] => object(plural, None, name, true),
        _ => return None,
    };
    let valid = |text: &str| !text.is_empty();
    match &target {
        Target::Collection { resource, .. } | Target::Object { resource, .. }
            if !valid(&resource.plural) || !valid(&resource.version) =>
        {
            None
        }
        _ => Some(target),
    }
}

/// The URL path of an object, from its `apiVersion`, `kind`, namespace and name.
pub fn object_path(object: &Value) -> Option<String> {
    let resource = Resource::of_object(object)?;
    let metadata = object.get("metadata")?;
    let name = metadata.get("name")?.as_str()?;
    let prefix = if resource.group.is_empty() {
        format!("/api/{}", resource.version)
    } else {
        format!("/apis/{}/{}", resource.group, resource.version)
    };
    Some(match metadata.get("namespace").and_then(Value::as_str) {
        Some(ns) if !ns.is_empty() => {
            format!("{prefix}/namespaces/{ns}/{}/{name}", resource.plural)
        }
        _ => format!("{prefix}/{}/{name}", resource.plural),
    })
}

/// Decodes `a=b&c=d` with percent-escapes and `+` as space.
pub fn parse_query(query: &str) -> HashMap<String, String> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(key), percent_decode(value))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'+' => out.push(b' '),
            b'%' if index + 2 < bytes.len() => {
                match (hex_value(bytes[index + 1]), hex_value(bytes[index + 2])) {
                    (Some(high), Some(low)) => {
                        out.push(high * 16 + low);
                        index += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_value(byte: u8) -> Option<u8> {
    (byte as char).to_digit(16).map(|digit| digit as u8)
}

/// The opaque `continue` token of a LIST page: where the next page starts.
pub fn encode_continue(namespace: &str, name: &str) -> String {
    use base64::Engine;
    let text = serde_json::json!([namespace, name]).to_string();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
}

/// Reads a `continue` token back; `None` when it is not one of ours.
pub fn decode_continue(token: &str) -> Option<(String, String)> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()?;
    let (namespace, name): (String, String) = serde_json::from_slice(&bytes).ok()?;
    Some((namespace, name))
}
