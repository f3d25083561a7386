//! Which kinds a Mirror may copy besides ConfigMaps and Secrets (`--kinds`), and which roles a
//! copied RoleBinding may bind (`--bindable-roles`).
//!
//! "Any kind" is a fixed table: each entry names the API version skiff uses and the top-level
//! fields a user sets, which are all a copy carries. A kind is copied only when the table
//! knows which of its fields are the user's, so that nothing the server defaults, allocates or
//! reports (`status`, a ServiceAccount's `secrets`) is ever copied or seen as drift. A deny-list
//! names the kinds no flag can enable, and why. Custom resources are not supported yet: skiff
//! cannot know which of their fields a webhook or controller defaults.
//!
//! A RoleBinding grants what its role grants, so skiff binds only roles the admin names: its
//! RBAC holds `bind` on exactly those ClusterRoles (by `resourceNames`), and a Mirror of a
//! RoleBinding to any other role is refused here, before any write, rather than left to a 403.

use super::binding_guard::BindingGuard;
use super::kit_table::{KitKind, TABLE, kit};
use super::payload::Payload;
use super::status::{Reason, Refusal};
use super::types::{Mirror, SourceKind};
use std::collections::BTreeSet;

/// Resources no flag can enable, and why.
const DENIED: [(&[&str], &str); 5] = [
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
        &["configmaps"],
        "ConfigMaps are always copied and need no --kinds entry",
    ),
    (
        &["secrets"],
        "Secrets are copied by Mirrors of kind Secret, limited by --secret-target-names, and a \
         ServiceAccount token Secret never",
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

/// The RBAC-bearing resource: enabling it needs `--bindable-roles`.
const ROLEBINDINGS: &str = "rolebindings";

/// The enabled kit kinds and the bindable roles.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kinds {
    enabled: BTreeSet<SourceKind>,
    bindable_roles: BTreeSet<String>,
    /// With RoleBindings enabled: where and to whom a copy may bind (see binding_guard).
    guard: Option<BindingGuard>,
}

impl Kinds {
    /// `--kinds` entries (each a comma list) and `--bindable-roles` names, checked together;
    /// the error names the entry and the fix.
    pub fn parse(kinds: &[String], bindable_roles: &[String]) -> Result<Kinds, String> {
        let mut enabled = BTreeSet::new();
        for entry in kinds.iter().flat_map(|e| e.split(',')).map(str::trim) {
            if !entry.is_empty() {
                enabled.insert(lookup(entry)?.kind);
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
        let binds = enabled.contains(&SourceKind::RoleBinding);
        match (binds, bindable_roles.is_empty()) {
            (true, true) => Err(format!(
                "--kinds enables {ROLEBINDINGS} but --bindable-roles names no ClusterRole, so \
                 every RoleBinding Mirror would be refused; name the ClusterRoles skiff may \
                 bind, e.g. --bindable-roles=edit,view, and grant `bind` on exactly those \
                 (see README, RBAC)"
            )),
            (false, false) => Err(format!(
                "--bindable-roles is set but --kinds does not enable {ROLEBINDINGS}; add \
                 rolebindings.rbac.authorization.k8s.io to --kinds or drop --bindable-roles"
            )),
            _ => Ok(Kinds {
                enabled,
                bindable_roles,
                guard: None,
            }),
        }
    }

    /// `--binding-namespace-label`: needed with RoleBindings, refused without.
    pub fn with_binding_namespace_label(mut self, label: &str) -> Result<Kinds, String> {
        let binds = self.enabled.contains(&SourceKind::RoleBinding);
        match (binds, label.is_empty()) {
            (true, true) => Err(format!(
                "--kinds enables {ROLEBINDINGS} but --binding-namespace-label is not set; name \
                 the label key an admin sets on the namespaces that may receive RoleBinding \
                 copies, e.g. --binding-namespace-label=skiff.dev/kit, the same as the \
                 admission policy skiff-rolebindings requires (README, Namespace kit kinds)"
            )),
            (false, false) => Err(format!(
                "--binding-namespace-label is set but --kinds does not enable {ROLEBINDINGS}; \
                 add rolebindings.rbac.authorization.k8s.io to --kinds or drop the flag"
            )),
            (true, false) => {
                self.guard = Some(BindingGuard::new(label.to_owned()));
                Ok(self)
            }
            (false, true) => Ok(self),
        }
    }

    /// The namespace skiff runs in, where it never writes a RoleBinding.
    pub fn in_namespace(mut self, own: Option<String>) -> Kinds {
        self.guard = self.guard.map(|g| g.in_namespace(own));
        self
    }

    pub fn binding_namespace_label(&self) -> Option<&str> {
        self.guard.as_ref().map(BindingGuard::label)
    }

    pub fn enabled(&self) -> impl Iterator<Item = &'static KitKind> + '_ {
        TABLE.iter().filter(|k| self.enabled.contains(&k.kind))
    }

    pub fn is_enabled(&self, kind: SourceKind) -> bool {
        !kind.is_kit() || self.enabled.contains(&kind)
    }

    pub fn bindable_roles(&self) -> impl Iterator<Item = &str> {
        self.bindable_roles.iter().map(String::as_str)
    }

    /// Why `mirror` may copy nothing: its kind is a kit kind `--kinds` does not enable, or it
    /// lists keys, which only ConfigMaps and Secrets have.
    pub fn refusal(&self, mirror: &Mirror) -> Option<Refusal> {
        let kind = mirror.spec.source.kind;
        let entry = kit(kind)?;
        if !self.is_enabled(kind) {
            return Some(Refusal {
                reason: Reason::KindNotEnabled,
                message: format!(
                    "{} copies are not enabled: skiff runs without {} in --kinds and may not \
                     read or write them; nothing is copied. Add it to --kinds (Helm value \
                     `kinds`) with the RBAC it needs (README, RBAC)",
                    kind.as_str(),
                    entry.flag_name()
                ),
            });
        }
        if !mirror.spec.source.keys.is_empty() {
            return Some(Refusal {
                reason: Reason::KeysNotApplicable,
                message: format!(
                    "spec.source.keys picks keys of a ConfigMap or Secret; a {} is copied whole \
                     ({}); nothing is copied. Remove spec.source.keys",
                    kind.as_str(),
                    entry.fields.join(" and ")
                ),
            });
        }
        let guard = self
            .guard
            .as_ref()
            .filter(|_| kind == SourceKind::RoleBinding)?;
        guard.selector_refusal(mirror)
    }

    /// Why the RoleBinding `payload` of `mirror` may not be copied into the namespaces
    /// `selected` returns: its role is not one the admin named bindable, or the admission
    /// policy would deny it (see binding_guard). `None` for every other kind.
    pub fn binding_refusal(
        &self,
        mirror: &Mirror,
        payload: &Payload,
        selected: impl FnOnce() -> BTreeSet<String>,
    ) -> Option<Refusal> {
        let role_ref = payload.field("roleRef")?;
        let kind = role_ref["kind"].as_str().unwrap_or_default();
        let name = role_ref["name"].as_str().unwrap_or_default();
        if kind == "ClusterRole" && self.bindable_roles.contains(name) {
            let guard = self.guard.as_ref()?;
            let subjects = payload.field("subjects");
            return (subjects.and_then(|s| guard.subject_refusal(s)))
                .or_else(|| guard.namespace_refusal(&selected()));
        }
        let named: Vec<&str> = self.bindable_roles().collect();
        Some(Refusal {
            reason: Reason::RoleNotBindable,
            message: format!(
                "RoleBinding {}/{} binds {kind} {name}, which is not in --bindable-roles ({}); \
                 skiff binds only the ClusterRoles the admin names, so nothing is copied. Bind \
                 a listed ClusterRole, or add {name} to --bindable-roles and to the \
                 resourceNames of skiff's `bind` rule (Helm value `bindableRoles`)",
                mirror.metadata.namespace(),
                mirror.spec.source.name,
                named.join(",")
            ),
        })
    }
}

/// The table entry `entry` names (`resource` or `resource.group`), or why none may be used.
fn lookup(entry: &str) -> Result<&'static KitKind, String> {
    let lower = entry.to_ascii_lowercase();
    let (resource, group) = lower.split_once('.').unwrap_or((&lower, ""));
    if let Some(kind) = TABLE
        .iter()
        .find(|k| k.resource == resource && (group.is_empty() || group == k.group))
    {
        return Ok(kind);
    }
    let supported: Vec<String> = TABLE.iter().map(KitKind::flag_name).collect();
    let supported = supported.join(", ");
    if let Some((_, why)) = DENIED.iter().find(|(names, _)| names.contains(&resource)) {
        return Err(format!(
            "--kinds {entry:?}: skiff never copies {resource}: {why}. Supported: {supported}"
        ));
    }
    Err(format!(
        "--kinds {entry:?}: not a kind skiff can copy. Supported: {supported}. Custom resources \
         are not supported yet: skiff copies only kinds whose user-set fields it knows, so that \
         nothing a server or webhook defaults is copied or seen as drift"
    ))
}

#[cfg(test)]
mod tests;
