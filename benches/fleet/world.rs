//! What both parts of the fleet benchmark place and edit: on the hub a source ConfigMap and a
//! fleet Mirror of it selecting the benchmark's clusters, and in each member the namespace the
//! Mirror copies into (`team-a`) beside one it does not (`team-b`).

use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE};
use serde_json::{Value, json};
use skiff::kube::api::ConfigMap;
use skiff::kube::{Client, load_kubeconfig_files};
use std::time::SystemTime;

/// The source on the hub, the fleet Mirror and each copy's name.
pub const SOURCE: &str = "fleet-ca";
/// The member namespace the Mirror selects, and the copy's path in a member.
pub const TARGET_NAMESPACE: &str = "team-a";
pub const COPY_PATH: &str = "/api/v1/namespaces/team-a/configmaps/fleet-ca";
/// The hub's name as its members know it (`--hub-name`).
pub const HUB_NAME: &str = "hub-bench";
/// The key the copies carry.
const KEY: &str = "ca.crt";

/// The namespaces of a member cluster: `team-a` (selected) and `team-b`, as objects.
pub fn member_namespaces() -> [Value; 2] {
    [("team-a", json!({"team": "a"})), ("team-b", json!({}))].map(|(name, labels)| {
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": name, "labels": labels}})
    })
}

/// The source ConfigMap holding `value` and the fleet Mirror selecting the clusters labelled
/// `selector` (and, inside each, `team=a`), on `hub`.
pub fn place_source_and_mirror(hub: &ControlPlane, value: &str, selector: (&str, &str)) {
    let (key, label) = selector;
    let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": SOURCE, "namespace": OPERATOR_NAMESPACE},
         "data": {KEY: value}},
        {"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
         "metadata": {"name": SOURCE, "namespace": OPERATOR_NAMESPACE},
         "spec": {"source": {"kind": "ConfigMap", "name": SOURCE},
                  "clusterSelector": {"matchLabels": {key: label}},
                  "namespaceSelector": {"matchLabels": {"team": "a"}}}},
    ]});
    hub.apply(&objects.to_string());
}

/// Whether the copy `copy` (as JSON) holds `value`.
pub fn holds(copy: &Value, value: &str) -> bool {
    copy["data"][KEY] == value
}

/// The hub as its admin, through the in-repo client: an edit then takes milliseconds, where a
/// kubectl process takes a good part of a second to start.
pub struct Editor {
    client: Client,
}

impl Editor {
    pub fn of(hub: &ControlPlane) -> Editor {
        let config = load_kubeconfig_files(&[hub.admin_kubeconfig()], None)
            .unwrap_or_else(|e| panic!("the hub's admin kubeconfig: {e}"));
        let client = Client::new(config).expect("a client for the hub");
        Editor { client }
    }

    /// Sets the source to `value`; returns when the edit was sent.
    pub fn edit(&self, value: &str) -> SystemTime {
        let sent = SystemTime::now();
        let patch = json!({"data": {KEY: value}});
        let edit = self
            .client
            .patch_merge::<ConfigMap>(Some(OPERATOR_NAMESPACE), SOURCE, &patch);
        smol::block_on(edit).unwrap_or_else(|e| panic!("edit the source on the hub: {e}"));
        sent
    }
}
