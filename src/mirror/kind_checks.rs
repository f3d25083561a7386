//! What a Mirror meets before any write, by its kinds' rows: the kinds of its source and of its
//! copies enabled, keys picked and renamed only of a kind that has keys, a projection its
//! source's row allows, with keys, a copy name no other controller keeps, and for a kind that
//! binds roles, the binding guard.
//!
//! Each is refused before anything is read or written, with a condition naming the fix, rather
//! than left to a 403 or to a copy that would take another controller's object.

use super::binding_guard::BindingGuard;
use super::payload::Payload;
use super::secret_targets::COMPONENT;
use super::status::{Reason, Refusal};
use super::types::Mirror;
use crate::kind::{EnabledBy, Guard, Kind, Kinds};
use std::collections::BTreeSet;

/// The enabled kinds and the checks their rows ask for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KindChecks {
    pub kinds: Kinds,
    /// With a kind that binds roles enabled: where and to whom a copy may bind.
    guard: Option<BindingGuard>,
}

impl KindChecks {
    /// The checks of `kinds`, for a replica running in the namespace `own`, where it never
    /// writes a RoleBinding.
    pub fn new(kinds: Kinds, own: Option<String>) -> KindChecks {
        let label = kinds.binding_namespace_label().map(str::to_owned);
        KindChecks {
            guard: label.map(|l| BindingGuard::new(l).in_namespace(own)),
            kinds,
        }
    }

    /// Why `mirror` may copy nothing: its source's or its copies' kind is not enabled, it lists
    /// or renames keys of a kind copied whole, it asks a projection its source's row does not
    /// allow or lists no keys for one, its copies would take a reserved name, or (a kind copied
    /// only into labelled namespaces) its selector does not require the label.
    pub fn refusal(&self, mirror: &Mirror) -> Option<Refusal> {
        let spec = &mirror.spec;
        let (source, copy) = (spec.source.kind.row(), spec.copy_kind().row());
        let off = [source, copy]
            .into_iter()
            .find(|row| !self.kinds.is_enabled(row.id));
        if let Some(row) = off {
            return Some(not_enabled(row));
        }
        let keyed = !spec.source.keys.is_empty() || !spec.source.rename.is_empty();
        if !source.has_keys() && keyed {
            return Some(Refusal {
                reason: Reason::KeysNotApplicable,
                message: format!(
                    "spec.source.keys and spec.source.rename name keys of a kind that has them; \
                     a {} is copied whole ({}); nothing is copied. Remove them",
                    source.name,
                    fields(source)
                ),
            });
        }
        (spec
            .projects()
            .then(|| projection_refusal(mirror))
            .flatten())
        .or_else(|| reserved(copy, spec.target_name()))
        .or_else(|| {
            let guard = self.guard.as_ref();
            let guard = guard.filter(|_| copy.guard != Guard::None)?;
            guard.selector_refusal(copy, mirror)
        })
    }

    /// Why the `payload` of `mirror`, of a kind that binds roles, may not be copied into the
    /// namespaces `selected` returns: its role is not one the admin named bindable, or the
    /// admission policy would deny it (see binding_guard). `None` for every other kind.
    pub fn binding_refusal(
        &self,
        mirror: &Mirror,
        payload: &Payload,
        selected: impl FnOnce() -> BTreeSet<String>,
    ) -> Option<Refusal> {
        if payload.row().guard != Guard::BindableRoles {
            return None;
        }
        let role_ref = payload.field("roleRef")?;
        let kind = role_ref["kind"].as_str().unwrap_or_default();
        let name = role_ref["name"].as_str().unwrap_or_default();
        if kind == "ClusterRole" && self.kinds.may_bind(name) {
            let guard = self.guard.as_ref()?;
            let subjects = payload.field("subjects");
            return (subjects.and_then(|s| guard.subject_refusal(s)))
                .or_else(|| guard.namespace_refusal(&selected()));
        }
        let named: Vec<&str> = self.kinds.bindable_roles().collect();
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

/// Why no copy of the kind `row` may be named `name`, if none may.
pub fn reserved(row: &Kind, name: &str) -> Option<Refusal> {
    let reserved = row.reserved(name)?;
    Some(Refusal {
        reason: Reason::NameReserved,
        message: format!(
            "a {} copy may not be named {name}: {}; skiff would take that object over and \
             delete it with the Mirror, so nothing is copied. Set spec.targetName to another \
             name",
            row.name, reserved.why
        ),
    })
}

/// Why a projection may not be made: its source's row does not publish as the copies' kind,
/// or no keys are listed (a projection publishes only what is named).
fn projection_refusal(mirror: &Mirror) -> Option<Refusal> {
    let (from, to) = (mirror.spec.source.kind.row(), mirror.spec.copy_kind().row());
    let Some(projection) = from.projection(to.id) else {
        return Some(Refusal {
            reason: Reason::ProjectionNotSupported,
            message: format!(
                "spec.target.kind {}: a {} is not published as a {}; nothing is copied. Remove \
                 spec.target.kind to copy it as it is",
                to.name, from.name, to.name
            ),
        });
    };
    mirror.spec.source.keys.is_empty().then(|| Refusal {
        reason: Reason::KeysRequired,
        message: format!(
            "a {} is published as a {} only with spec.source.keys naming the keys to publish \
             (each must hold {}); nothing is copied. List them, e.g. keys: [ca.crt]",
            from.name, to.name, projection.admits
        ),
    })
}

/// Why a kind that is not enabled copies nothing: the flag that enables it, as its row says.
fn not_enabled(row: &Kind) -> Refusal {
    let (reason, message) = match row.enabled_by {
        EnabledBy::SecretTargetNames => (
            Reason::SecretTargetsDisabled,
            format!(
                "{}s are not enabled: skiff runs without --secret-target-names and may not \
                 read or write them; nothing is copied. Install the kustomize component \
                 {COMPONENT} (Helm value `secretTargetNames`), which lets skiff read them in \
                 its source namespaces",
                row.name
            ),
        ),
        EnabledBy::KindsFlag | EnabledBy::Always => (
            Reason::KindNotEnabled,
            format!(
                "{} copies are not enabled: skiff runs without {} in --kinds and may not read \
                 or write them; nothing is copied. Add it to --kinds (Helm value `kinds`) with \
                 the RBAC it needs (README, RBAC)",
                row.name,
                row.flag_name()
            ),
        ),
    };
    Refusal { reason, message }
}

/// The fields a copy of `row` carries, as a message lists them.
fn fields(row: &Kind) -> String {
    let names: Vec<&str> = row.content.iter().map(|f| f.name).collect();
    names.join(" and ")
}

#[cfg(test)]
mod tests;
