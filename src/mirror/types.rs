//! The `Mirror` custom resource (skiff.dev/v1alpha1) as it is stored in the API server.

pub use crate::kind::SourceKind;
use crate::kube::api::ObjectMeta;
pub use crate::kube::api::{LabelSelector, LabelSelectorRequirement};
use serde::{Deserialize, Serialize};

pub const GROUP: &str = "skiff.dev";
pub const API_VERSION: &str = "skiff.dev/v1alpha1";

/// The finalizer that makes a Mirror's deletion wait until its copies are gone.
pub const FINALIZER: &str = "skiff.dev/cleanup";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Mirror {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub metadata: ObjectMeta,
    pub spec: MirrorSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<MirrorStatus>,
}

crate::impl_resource!(Mirror, API_VERSION, "Mirror", "mirrors", namespaced = true);

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MirrorSpec {
    pub source: SourceRef,
    /// The name of the copies; the source's name when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_name: Option<String>,
    /// Which namespaces get a copy. `{}` selects every namespace; an absent selector selects
    /// none, so a forgotten field never fans a Secret out to the whole cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// What every copy carries besides the source's content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetSpec>,
    /// What to do when another writer keeps changing a copy back; `Restore` when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflicts: Option<ConflictPolicy>,
    /// On a hub (`--fleet-hub`): the member clusters whose copies this Mirror places, by the
    /// labels of their namespaces on the hub; `namespaceSelector` then selects inside each.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<LabelSelector>,
    /// What becomes of the copies when the Mirror is deleted; `Delete` when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<DeletionPolicy>,
}

/// `spec.deletionPolicy`: delete the copies with the Mirror, or leave them in place without
/// anything that marks them as skiff's (see `orphan`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeletionPolicy {
    #[default]
    Delete,
    Orphan,
}

/// `spec.conflicts`: restore a contested copy with backoff, or leave it to the other writer
/// until the source changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConflictPolicy {
    #[default]
    Restore,
    Yield,
}

impl MirrorSpec {
    /// Whether this Mirror places its copies in member clusters (a hub's fleet Mirror).
    pub fn is_fleet(&self) -> bool {
        self.cluster_selector.is_some()
    }

    pub fn target_name(&self) -> &str {
        self.target_name.as_deref().unwrap_or(&self.source.name)
    }

    pub fn conflict_policy(&self) -> ConflictPolicy {
        self.conflicts.unwrap_or_default()
    }

    pub fn deletion_policy(&self) -> DeletionPolicy {
        self.deletion_policy.unwrap_or_default()
    }

    /// The kind of the copies: `spec.target.kind`, or the source's kind when absent. Every
    /// question about a copy (its caches, names, checks and requests) asks this, never the
    /// source's kind.
    pub fn copy_kind(&self) -> SourceKind {
        let target = self.target.as_ref().and_then(|t| t.kind);
        target.unwrap_or(self.source.kind)
    }

    /// Whether the copies are of another kind than the source: a projection (`kind::Projection`).
    pub fn projects(&self) -> bool {
        self.copy_kind() != self.source.kind
    }

    /// The labels and annotations `spec.target.metadata` sets on every copy.
    pub fn target_metadata(&self) -> Option<&ObjectMeta> {
        self.target.as_ref().map(|t| &t.metadata)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SourceRef {
    pub kind: SourceKind,
    pub name: String,
    /// The only keys to copy; every key when empty (the schema refuses an empty list).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    /// The source's own labels the copies carry: keys, `prefix/*` or `*`. None when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub copy_labels: Vec<String>,
    /// The source's own annotations the copies carry, written as `copy_labels`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub copy_annotations: Vec<String>,
    /// Keys the copies hold under another name (`{from: tls.crt, to: ca.crt}`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rename: Vec<Rename>,
}

/// One entry of `spec.source.rename`: the source's key `from` is the copy's key `to`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Rename {
    pub from: String,
    pub to: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TargetSpec {
    /// Labels and annotations set on every copy. Read as object metadata (the schema allows
    /// only `labels` and `annotations`), whose decoder the binary has anyway.
    pub metadata: ObjectMeta,
    /// The copies' kind when it is not the source's: a Secret published as a ConfigMap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<SourceKind>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MirrorStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_hash: Option<String>,
    pub selected: u32,
    pub synced: u32,
    pub conflicts: u32,
    /// Objects skiff did not manage that it took over on request (`skiff.dev/adopt`), since the
    /// Mirror was created.
    #[serde(skip_serializing_if = "is_zero")]
    pub adopted: u32,
    /// Copies deleted and created again because their type or immutability forbade an update,
    /// since the Mirror was created.
    #[serde(skip_serializing_if = "is_zero")]
    pub replaced: u32,
    /// Copies another writer keeps changing back after skiff restores them.
    #[serde(skip_serializing_if = "is_zero")]
    pub contested: u32,
    /// A fleet Mirror's member clusters, by what they last reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clusters: Option<Clusters>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// A fleet Mirror's member clusters, by what each last reported on its Placement and whether
/// it was heard from lately.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Clusters {
    /// Every selected namespace of the cluster holds the current version.
    pub current: u32,
    /// Placed, not reported current yet.
    pub pending: u32,
    /// Reported a refusal, a conflict or a contest.
    pub failing: u32,
    /// Not heard from for longer than `--member-silence-after` (counted here only).
    pub silent: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    pub reason: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_mirror_decodes_with_defaults() {
        let json = r#"{"apiVersion":"skiff.dev/v1alpha1","kind":"Mirror",
            "metadata":{"name":"ca","namespace":"skiff-system","generation":2},
            "spec":{"source":{"kind":"Secret","name":"app-ca"},"namespaceSelector":{}}}"#;
        let m: Mirror = serde_json::from_str(json).expect("valid mirror");
        assert_eq!(m.spec.conflict_policy(), ConflictPolicy::Restore);
        assert_eq!(m.spec.source.kind, SourceKind::Secret);
        assert_eq!(m.spec.target_name(), "app-ca");
        assert_eq!(m.spec.namespace_selector, Some(LabelSelector::default()));
        assert!(m.status.is_none());
    }

    #[test]
    fn conflicts_yield_decodes() {
        let json = r#"{"spec":{"source":{"kind":"ConfigMap","name":"x"},"conflicts":"Yield"}}"#;
        let m: Mirror = serde_json::from_str(json).expect("valid mirror");
        assert_eq!(m.spec.conflict_policy(), ConflictPolicy::Yield);
    }

    #[test]
    fn an_absent_selector_is_not_the_empty_selector() {
        let m: Mirror =
            serde_json::from_str(r#"{"spec":{"source":{"kind":"ConfigMap","name":"x"}}}"#)
                .expect("valid mirror");
        assert_eq!(m.spec.namespace_selector, None);
    }

    #[test]
    fn a_projection_its_renames_and_its_deletion_policy_decode() {
        let json = r#"{"spec":{"source":{"kind":"Secret","name":"ca","keys":["tls.crt"],
            "rename":[{"from":"tls.crt","to":"ca.crt"}]},
            "target":{"kind":"ConfigMap"},"deletionPolicy":"Orphan"}}"#;
        let m: Mirror = serde_json::from_str(json).expect("valid mirror");
        assert_eq!(m.spec.copy_kind(), SourceKind::ConfigMap);
        assert!(m.spec.projects());
        let rename = Rename {
            from: "tls.crt".into(),
            to: "ca.crt".into(),
        };
        assert_eq!(m.spec.source.rename, [rename]);
        assert_eq!(m.spec.deletion_policy(), DeletionPolicy::Orphan);
        let plain: Mirror =
            serde_json::from_str(r#"{"spec":{"source":{"kind":"Secret","name":"x"}}}"#)
                .expect("valid mirror");
        assert_eq!(plain.spec.copy_kind(), SourceKind::Secret);
        assert!(!plain.spec.projects());
        assert_eq!(plain.spec.deletion_policy(), DeletionPolicy::Delete);
    }

    #[test]
    fn keys_metadata_and_target_metadata_decode() {
        let json = r#"{"spec":{"source":{"kind":"Secret","name":"tls","keys":["tls.crt","tls.key"],
            "copyLabels":["cnpg.io/*"],"copyAnnotations":["*"]},
            "target":{"metadata":{"labels":{"a":"b"},"annotations":{"c":"d"}}}}}"#;
        let m: Mirror = serde_json::from_str(json).expect("valid mirror");
        assert_eq!(m.spec.source.keys, ["tls.crt", "tls.key"]);
        assert_eq!(m.spec.source.copy_labels, ["cnpg.io/*"]);
        assert_eq!(m.spec.source.copy_annotations, ["*"]);
        let target = m.spec.target_metadata().expect("target metadata");
        assert_eq!(target.labels["a"], "b");
        assert_eq!(target.annotations["c"], "d");
    }
}
