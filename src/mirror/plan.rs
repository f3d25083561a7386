//! The decision at the heart of a reconcile: from what is cached, which copies to create,
//! update and delete, and which namespaces hold an object skiff must not touch.
//!
//! Pure: it reads the caches' projections and returns a [`Plan`]; the reconciler carries it out.

use super::copy::{CopyInfo, Owner};
use super::copy_names::CopyNames;
use super::managed::Record;
use super::own_writes::CopyKey;
use super::payload::{Digest, HeldMaps};
use super::types::SourceKind;
use crate::kube::api::FieldManager;
use crate::kube::api::Version;
use crate::runtime::ObjectKey;
use std::collections::BTreeSet;

/// What a Mirror wants: its copies named `names`, of `kind`, holding content hashed `hash`.
pub struct Desired<'a> {
    pub owner: &'a Owner,
    pub kind: SourceKind,
    pub names: &'a CopyNames,
    pub hash: Digest,
}

/// A copy whose content differs: where, at which version, the keys it records as skiff's, and
/// who changed it last if not skiff.
#[derive(Debug, PartialEq, Eq)]
pub struct Update {
    pub namespace: String,
    pub resource_version: Version,
    pub record: Option<Record>,
    pub changed_by: Option<FieldManager>,
    pub held: HeldMaps,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Namespaces that need a new copy.
    pub create: Vec<String>,
    /// Copies whose content differs.
    pub update: Vec<Update>,
    /// Copies that must go, and the version each was seen at.
    pub delete: Vec<(CopyKey, Version)>,
    /// Namespaces where an object with the target name is not this Mirror's.
    pub conflicts: Vec<String>,
    /// Selected namespaces whose copy is already right.
    pub in_sync: u32,
}

impl Plan {
    pub fn writes(&self) -> usize {
        self.create.len() + self.update.len() + self.delete.len()
    }
}

/// Plans the copies of one Mirror.
///
/// - `selected`: the namespaces that should hold a copy;
/// - `existing(ns)`: the skiff-managed object of `desired.kind` named as `desired.names` says
///   in `ns`;
/// - `owned`: every copy labelled for this Mirror, whatever its name or kind, with its key;
/// - `unmanaged`: namespaces where the server refused a create because an object that is not
///   skiff's already has the name (the cache only holds skiff's objects, so it can't see them).
pub fn plan<'a>(
    desired: &Desired<'_>,
    selected: &BTreeSet<String>,
    existing: impl Fn(&str) -> Option<CopyInfo>,
    owned: impl IntoIterator<Item = &'a (ObjectKey, CopyInfo)>,
    unmanaged: &BTreeSet<String>,
) -> Plan {
    let mut plan = Plan::default();
    for ns in selected {
        match existing(ns) {
            Some(copy) if copy.owner.as_deref() == Some(desired.owner) => {
                if copy.content_hash == desired.hash {
                    plan.in_sync += 1;
                } else {
                    plan.update.push(Update {
                        namespace: ns.clone(),
                        resource_version: copy.resource_version,
                        record: copy.record,
                        changed_by: copy.changed_by,
                        held: copy.held,
                    });
                }
            }
            Some(_) => plan.conflicts.push(ns.clone()),
            None if unmanaged.contains(ns) => plan.conflicts.push(ns.clone()),
            None => plan.create.push(ns.clone()),
        }
    }
    for (key, copy) in owned {
        let ns = &*key.namespace;
        let wanted = copy.kind == desired.kind
            && *key.name == *desired.names.of(ns)
            && selected.contains(ns);
        if !wanted {
            let at = copy.resource_version.clone();
            plan.delete.push((CopyKey::of(copy.kind, key.clone()), at));
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(name: &str) -> Owner {
        Owner {
            namespace: "src".into(),
            name: name.into(),
        }
    }

    fn copy(ns: &str, name: &str, owner_name: Option<&str>, hash: &str) -> (ObjectKey, CopyInfo) {
        let info = CopyInfo {
            kind: SourceKind::ConfigMap,
            owner: owner_name.map(|n| owner(n).into()),
            resource_version: Version::new(&format!("rv-{ns}")),
            content_hash: Digest::of(hash.as_bytes()),
            record: None,
            changed_by: None,
            held: HeldMaps::default(),
        };
        (ObjectKey::new(ns, name), info)
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn run(selected: &[&str], copies: &[(ObjectKey, CopyInfo)], unmanaged: &[&str]) -> Plan {
        run_named(&CopyNames::new("ca"), selected, copies, unmanaged)
    }

    fn run_named(
        names: &CopyNames,
        selected: &[&str],
        copies: &[(ObjectKey, CopyInfo)],
        unmanaged: &[&str],
    ) -> Plan {
        let me = owner("m");
        let desired = Desired {
            owner: &me,
            kind: SourceKind::ConfigMap,
            names,
            hash: Digest::of(b"h1"),
        };
        let existing = |ns: &str| {
            let here = ObjectKey::new(ns, names.of(ns));
            let found = copies.iter().find(|(key, _)| *key == here);
            found.map(|(_, c)| c.clone())
        };
        let owned: Vec<&(ObjectKey, CopyInfo)> = copies
            .iter()
            .filter(|(_, c)| c.owner.as_deref() == Some(&owner("m")))
            .collect();
        plan(&desired, &set(selected), existing, owned, &set(unmanaged))
    }

    #[test]
    fn missing_copies_are_created_and_right_ones_left_alone() {
        let p = run(&["a", "b"], &[copy("a", "ca", Some("m"), "h1")], &[]);
        assert_eq!(p.create, vec!["b".to_string()]);
        assert_eq!(p.in_sync, 1);
        assert_eq!(p.writes(), 1);
    }

    #[test]
    fn a_copy_with_other_content_is_updated_at_the_version_seen() {
        let p = run(&["a"], &[copy("a", "ca", Some("m"), "edited")], &[]);
        let update = Update {
            namespace: "a".into(),
            resource_version: "rv-a".into(),
            record: None,
            changed_by: None,
            held: HeldMaps::default(),
        };
        assert_eq!(p.update, vec![update]);
    }

    #[test]
    fn copies_in_namespaces_no_longer_selected_are_deleted() {
        let p = run(
            &["a"],
            &[
                copy("a", "ca", Some("m"), "h1"),
                copy("b", "ca", Some("m"), "h1"),
            ],
            &[],
        );
        assert_eq!(p.delete.len(), 1);
        assert_eq!(
            p.delete[0].0,
            CopyKey::new(SourceKind::ConfigMap, "b", "ca")
        );
        assert_eq!(p.delete[0].1, Version::new("rv-b"), "at the version seen");
    }

    #[test]
    fn a_copy_under_an_old_target_name_is_deleted() {
        let p = run(&["a"], &[copy("a", "old", Some("m"), "h1")], &[]);
        assert_eq!(p.create, vec!["a".to_string()]);
        assert_eq!(&*p.delete[0].0.object.name, "old");
    }

    #[test]
    fn a_copy_renamed_in_one_namespace_moves_there_alone() {
        let mut names = CopyNames::new("ca");
        names.rename("a", "local-ca");
        let copies = [
            copy("a", "ca", Some("m"), "h1"),
            copy("b", "ca", Some("m"), "h1"),
        ];
        let p = run_named(&names, &["a", "b"], &copies, &[]);
        assert_eq!(p.create, vec!["a".to_string()]);
        assert_eq!(p.delete.len(), 1);
        assert_eq!(p.delete[0].0.object, ObjectKey::new("a", "ca"));
        assert_eq!(p.in_sync, 1);
        let moved = [copy("a", "local-ca", Some("m"), "h1"), copies[1].clone()];
        let p = run_named(&names, &["a", "b"], &moved, &["a"]);
        assert_eq!((p.writes(), p.in_sync), (0, 2));
    }

    #[test]
    fn an_unmanaged_object_under_a_local_name_is_a_conflict() {
        let mut names = CopyNames::new("ca");
        names.rename("a", "theirs");
        let p = run_named(&names, &["a"], &[], &["a"]);
        assert_eq!(p.conflicts, vec!["a".to_string()]);
        assert_eq!(p.writes(), 0);
    }

    #[test]
    fn another_mirrors_copy_and_unmanaged_objects_are_conflicts_never_writes() {
        let p = run(&["a", "b"], &[copy("a", "ca", Some("other"), "x")], &["b"]);
        assert_eq!(p.conflicts, vec!["a".to_string(), "b".to_string()]);
        assert_eq!(p.writes(), 0);
    }

    #[test]
    fn steady_state_plans_no_writes() {
        let copies: Vec<_> = ["a", "b", "c"]
            .iter()
            .map(|ns| copy(ns, "ca", Some("m"), "h1"))
            .collect();
        let p = run(&["a", "b", "c"], &copies, &[]);
        assert_eq!((p.writes(), p.in_sync), (0, 3));
    }
}
