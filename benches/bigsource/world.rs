//! What every operator in the big-source bench works on: 1,000 namespaces labelled for each
//! scenario, the sources (a 900 KB PEM bundle or 1 MB of bytes), and what the bench reads back
//! about the copies (their versions, metadata only, and a sample's content).

use super::support::control_plane::ControlPlane;
use super::support::kubectl::succeeded;
use base64::Engine as _;
use serde_json::{Value, json};

pub const NAMESPACES: usize = 1_000;
const BATCH: usize = 500;
pub const SOURCE: &str = "app-ca";
const CONFIGMAP_BYTES: usize = 900 * 1024;
/// Decoded; base64 makes it 1.33 MB on the wire, within the API's 1 MiB of decoded data.
const SECRET_BYTES: usize = 1_000_000;
const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// One fan-out: the source's kind, how many namespaces it goes to (the first `count`), and
/// whether its source is edited once after it converged.
pub struct Scenario {
    pub name: &'static str,
    pub kind: &'static str,
    pub count: usize,
    pub edited: bool,
}

pub const SCENARIOS: [Scenario; 3] = [
    Scenario {
        name: "900 KB ConfigMap → 300 namespaces",
        kind: "ConfigMap",
        count: 300,
        edited: true,
    },
    Scenario {
        name: "900 KB ConfigMap → 1,000 namespaces",
        kind: "ConfigMap",
        count: 1_000,
        edited: false,
    },
    Scenario {
        name: "1 MB Secret → 100 namespaces",
        kind: "Secret",
        count: 100,
        edited: false,
    },
];

impl Scenario {
    /// The label `key=yes` on the namespaces it selects.
    pub fn selector_key(&self) -> String {
        format!("first-{}", self.count)
    }

    fn resource(&self) -> &'static str {
        if self.kind == "Secret" {
            "secrets"
        } else {
            "configmaps"
        }
    }
}

pub fn namespace(i: usize) -> String {
    format!("big-{i:04}")
}

/// Namespaces `big-0000` …, each labelled `first-N: yes` for every scenario count N it is
/// within.
pub fn create_namespaces(cp: &ControlPlane) {
    for start in (0..NAMESPACES).step_by(BATCH) {
        let items: Vec<Value> = (start..(start + BATCH).min(NAMESPACES))
            .map(|i| {
                let labels: serde_json::Map<String, Value> = SCENARIOS
                    .iter()
                    .filter(|s| i < s.count)
                    .map(|s| (s.selector_key(), json!("yes")))
                    .collect();
                json!({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": namespace(i), "labels": labels}})
            })
            .collect();
        create(
            cp,
            &json!({"apiVersion": "v1", "kind": "List", "items": items}),
        );
    }
}

/// `kubectl create` (not apply: a 900 KB object has no room for a last-applied annotation).
pub fn create(cp: &ControlPlane, object: &Value) {
    let args = ["create", "-f", "-", "-o", "name"];
    succeeded(&args, cp.kubectl_stdin(&args, &object.to_string()));
}

/// `kubectl replace`; the object's new resourceVersion.
pub fn replace(cp: &ControlPlane, object: &Value) -> u64 {
    let args = [
        "replace",
        "-f",
        "-",
        "-o",
        "jsonpath={.metadata.resourceVersion}",
    ];
    let version = succeeded(&args, cp.kubectl_stdin(&args, &object.to_string()));
    version.trim().parse().expect("a resourceVersion")
}

/// The source of `kind` in `namespace` with `labels`: one key of 900 KB of PEM-like text, or
/// 1 MB of bytes; `edited` changes its first line.
pub fn source(kind: &str, namespace: &str, labels: Value, edited: bool) -> Value {
    let metadata = json!({"name": SOURCE, "namespace": namespace, "labels": labels});
    let line = "MIIFazCCA1OgAwIBAgIRAIIQz7DSQONZRGPgu2OCiwAwDQYJKoZIhvcNAQELBQAw\n";
    if kind == "Secret" {
        let bytes: Vec<u8> = (0..SECRET_BYTES).map(|i| (i * 7 % 251) as u8).collect();
        let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
        return json!({"apiVersion": "v1", "kind": "Secret", "metadata": metadata,
                      "data": {"bundle": encoded}});
    }
    let mut pem = line.repeat(CONFIGMAP_BYTES / line.len());
    if edited {
        pem.replace_range(..4, "EDIT");
    }
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata,
           "data": {"ca-bundle.crt": pem}})
}

/// The resourceVersions of the copies `manager` wrote for `scenario`, read as metadata only:
/// a list of 1,000 copies of 900 KB fetched whole would load the machine the bench measures on.
pub fn copy_versions(cp: &ControlPlane, scenario: &Scenario, manager: &str) -> Vec<u64> {
    let path = format!(
        "/api/v1/{}?fieldSelector=metadata.name%3D{SOURCE}&labelSelector={}%3D{manager}",
        scenario.resource(),
        MANAGED_BY.replace('/', "%2F"),
    );
    let list = cp.metadata_list(&path);
    let items = list["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter_map(|item| item["metadata"]["resourceVersion"].as_str()?.parse().ok())
        .collect()
}

/// Deletes the ConfigMap copies of `scenario` by name: `kubectl delete -l` would first list
/// them whole (gigabytes in kubectl at 1,000 copies of 900 KB) and then wait minutes on each.
pub fn delete_copies(cp: &ControlPlane, scenario: &Scenario) {
    let items: Vec<Value> = (0..scenario.count)
        .map(|i| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": SOURCE, "namespace": namespace(i)}})
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    let args = [
        "delete",
        "-f",
        "-",
        "--wait=false",
        "--ignore-not-found",
        "-o",
        "name",
    ];
    succeeded(&args, cp.kubectl_stdin(&args, &list.to_string()));
}

/// Whether the copy in namespace `i` holds the edited bundle.
pub fn holds_edit(cp: &ControlPlane, i: usize) -> bool {
    let first_line = "jsonpath={.data.ca-bundle\\.crt}";
    let got = cp.kubectl_ok(&["get", "cm", SOURCE, "-n", &namespace(i), "-o", first_line]);
    got.starts_with("EDIT")
}
