//! Kinds as flags name them (`--kinds`, `--self-service-kinds`): `resource` or
//! `resource.group`, read by one parser for every flag.
//!
//! A name that is no row is refused with why: some resources are never copied (a table of
//! them says why each), others are simply not supported yet.

use super::row::{EnabledBy, Kind};
use super::table::TABLE;

/// Resources no flag can enable, and why.
const DENIED: [(&[&str], &str); 3] = [
    (
        &[
            "pods",
            "deployments",
            "statefulsets",
            "daemonsets",
            "replicasets",
            "replicationcontrollers",
            "jobs",
            "cronjobs",
        ],
        "it runs code: a copy in every selected namespace would run it there, under that \
         namespace's ServiceAccounts",
    ),
    (
        &["roles", "clusterroles"],
        "writing a role that grants more than skiff holds needs `escalate`, which skiff never \
         gets; bind existing ClusterRoles with rolebindings and --bindable-roles instead",
    ),
    (
        &["clusterrolebindings"],
        "it is cluster-scoped: a Mirror copies into namespaces",
    ),
];

/// The row `entry` names (`resource` or `resource.group`, any case), or why none does.
pub fn lookup(flag: &str, entry: &str) -> Result<&'static Kind, String> {
    let lower = entry.to_ascii_lowercase();
    let (resource, group) = lower.split_once('.').unwrap_or((&lower, ""));
    let found = TABLE
        .iter()
        .find(|k| k.resource == resource && (group.is_empty() || group == k.group));
    if let Some(kind) = found {
        return Ok(kind);
    }
    let supported = every_name();
    if let Some((_, why)) = DENIED.iter().find(|(names, _)| names.contains(&resource)) {
        return Err(format!(
            "{flag} {entry:?}: skiff never copies {resource}: {why}. Supported: {supported}"
        ));
    }
    Err(format!(
        "{flag} {entry:?}: not a kind skiff can copy. Supported: {supported}. Custom resources \
         are not supported yet: skiff copies only kinds whose user-set fields it knows, so that \
         nothing a server or webhook defaults is copied or seen as drift"
    ))
}

/// A `--kinds` entry: a row that flag enables, or why it names none.
pub fn kinds_flag_entry(entry: &str) -> Result<&'static Kind, String> {
    let kind = lookup("--kinds", entry)?;
    let why = match kind.enabled_by {
        EnabledBy::KindsFlag => return Ok(kind),
        EnabledBy::Always => "they are always copied and need no --kinds entry".to_owned(),
        EnabledBy::SecretTargetNames => "they are copied by Mirrors of their kind, limited by \
             --secret-target-names, and a ServiceAccount token Secret never"
            .to_owned(),
    };
    let supported: Vec<String> = (TABLE.iter())
        .filter(|k| k.enabled_by == EnabledBy::KindsFlag)
        .map(Kind::flag_name)
        .collect();
    Err(format!(
        "--kinds {entry:?}: {}s are not enabled by --kinds: {why}. --kinds takes: {}",
        kind.name,
        supported.join(", ")
    ))
}

/// Every row's flag name, comma-separated.
pub fn every_name() -> String {
    let names: Vec<String> = TABLE.iter().map(Kind::flag_name).collect();
    names.join(", ")
}
