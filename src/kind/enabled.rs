//! Which kinds an install copies, and which roles a copied RoleBinding may bind: the admin's
//! choices of `--kinds`, `--bindable-roles`, `--binding-namespace-label` and
//! `--secret-target-names`, checked together at start so that no Mirror meets a refusal a
//! flag could have named.
//!
//! A RoleBinding grants what its role grants, so skiff binds only roles the admin names: its
//! RBAC holds `bind` on exactly those ClusterRoles (by `resourceNames`), and a Mirror of a
//! RoleBinding to any other role is refused before any write.

use super::SourceKind;
use super::names::kinds_flag_entry;
use super::row::{EnabledBy, Guard, Kind};
use super::table::TABLE;
use std::collections::BTreeSet;

/// The kinds an install copies and the roles its RoleBinding copies may bind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kinds {
    /// The rows `--kinds` enables.
    flagged: BTreeSet<SourceKind>,
    /// `--secret-target-names` names at least one name.
    secret_targets: bool,
    bindable_roles: BTreeSet<String>,
    /// The label an admin sets on namespaces that may receive RoleBinding copies.
    binding_namespace_label: Option<String>,
}

impl Kinds {
    /// `--kinds` entries (each a comma list) and `--bindable-roles` names, checked together;
    /// the error names the entry and the fix.
    pub fn parse(kinds: &[String], bindable_roles: &[String]) -> Result<Kinds, String> {
        let mut flagged = BTreeSet::new();
        for entry in kinds.iter().flat_map(|e| e.split(',')).map(str::trim) {
            if !entry.is_empty() {
                flagged.insert(kinds_flag_entry(entry)?.id);
            }
        }
        let bindable_roles: BTreeSet<String> = bindable_roles
            .iter()
            .flat_map(|e| e.split(','))
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_owned)
            .collect();
        if bindable_roles.iter().any(|r| r.contains('*')) {
            return Err(
                "--bindable-roles takes ClusterRole names, e.g. edit,view; a wildcard \
                        would let skiff bind any role, cluster-admin included"
                    .to_owned(),
            );
        }
        let kinds = Kinds {
            flagged,
            bindable_roles,
            ..Kinds::default()
        };
        match (kinds.binds(), kinds.bindable_roles.is_empty()) {
            (Some(binding), true) => Err(format!(
                "--kinds enables {} but --bindable-roles names no ClusterRole, so every \
                 RoleBinding Mirror would be refused; name the ClusterRoles skiff may bind, \
                 e.g. --bindable-roles=edit,view, and grant `bind` on exactly those (see \
                 README, RBAC)",
                binding.resource
            )),
            (None, false) => Err(format!(
                "--bindable-roles is set but --kinds does not enable a kind that binds roles; \
                 add {} to --kinds or drop --bindable-roles",
                binding_kinds()
            )),
            _ => Ok(kinds),
        }
    }

    /// `--binding-namespace-label`: needed with a kind whose copies go only into labelled
    /// namespaces, refused without one.
    pub fn with_binding_namespace_label(mut self, label: &str) -> Result<Kinds, String> {
        let guarded = self.flagged().find(|k| k.guard != Guard::None);
        match (guarded, label.is_empty()) {
            (Some(kind), true) => Err(format!(
                "--kinds enables {} but --binding-namespace-label is not set; name the label \
                 key an admin sets on the namespaces that may receive copies of the kit kinds, \
                 e.g. --binding-namespace-label=skiff.dev/kit, the same as the admission \
                 policies skiff-kit-namespaces and skiff-rolebindings require (README, \
                 Namespace kit kinds)",
                kind.resource
            )),
            (None, false) => Err(
                "--binding-namespace-label is set but --kinds enables no kit kind; add one to \
                 --kinds or drop the flag"
                    .to_owned(),
            ),
            (Some(_), false) => {
                self.binding_namespace_label = Some(label.to_owned());
                Ok(self)
            }
            (None, true) => Ok(self),
        }
    }

    /// Whether `--secret-target-names` names any Secret, which enables Secret copies.
    pub fn with_secret_targets(mut self, any: bool) -> Kinds {
        self.secret_targets = any;
        self
    }

    /// Whether copies of `kind` are on, as its row's `enabled_by` says.
    pub fn is_enabled(&self, kind: SourceKind) -> bool {
        match kind.row().enabled_by {
            EnabledBy::Always => true,
            EnabledBy::SecretTargetNames => self.secret_targets,
            EnabledBy::KindsFlag => self.flagged.contains(&kind),
        }
    }

    /// The rows copies are on for.
    pub fn enabled(&self) -> impl Iterator<Item = &'static Kind> + '_ {
        TABLE.iter().filter(|k| self.is_enabled(k.id))
    }

    /// The rows `--kinds` enables.
    pub fn flagged(&self) -> impl Iterator<Item = &'static Kind> + '_ {
        TABLE.iter().filter(|k| self.flagged.contains(&k.id))
    }

    pub fn bindable_roles(&self) -> impl Iterator<Item = &str> {
        self.bindable_roles.iter().map(String::as_str)
    }

    pub fn may_bind(&self, role: &str) -> bool {
        self.bindable_roles.contains(role)
    }

    pub fn binding_namespace_label(&self) -> Option<&str> {
        self.binding_namespace_label.as_deref()
    }

    /// The enabled row that binds roles, if any.
    fn binds(&self) -> Option<&'static Kind> {
        self.flagged().find(|k| k.guard == Guard::BindableRoles)
    }
}

/// The flag names of the kinds that bind roles.
fn binding_kinds() -> String {
    let names: Vec<String> = (TABLE.iter())
        .filter(|k| k.guard == Guard::BindableRoles)
        .map(Kind::flag_name)
        .collect();
    names.join(", ")
}
