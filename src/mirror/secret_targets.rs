//! Which Secret names skiff may write in target namespaces (`--secret-target-names`).
//!
//! RBAC can restrict Secret access by name only (`resourceNames`), so the install names the
//! Secrets skiff may manage, and the controller must ask for no more: a Mirror of a Secret whose
//! target name is not listed is refused here, before anything is read or written, with a
//! condition saying how to allow it. With no names, Secret copies are off and skiff neither
//! reads nor watches any Secret.

use super::status::{Reason, Refusal};
use super::types::Mirror;
use crate::kind::NameRule;
use std::collections::BTreeSet;

/// Where the RBAC for Secret copies comes from, as the refusal messages name it.
pub const COMPONENT: &str = "manifests/components/secret-targets";

/// The allow-list; empty = Secret copies disabled (the default install).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecretTargets {
    names: BTreeSet<String>,
}

impl SecretTargets {
    pub fn new(names: impl IntoIterator<Item = String>) -> SecretTargets {
        SecretTargets {
            names: names.into_iter().collect(),
        }
    }

    pub fn enabled(&self) -> bool {
        !self.names.is_empty()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// `None` when `mirror` may write: its copies' kind may take any name (a Secret published
    /// as a ConfigMap too), or its target name is listed.
    pub fn refusal(&self, mirror: &Mirror) -> Option<Refusal> {
        if mirror.spec.copy_kind().row().names != NameRule::SecretTargetNames {
            return None;
        }
        let target = mirror.spec.target_name();
        if self.names.contains(target) {
            return None;
        }
        Some(if self.enabled() {
            self.not_allowed(target)
        } else {
            disabled(target)
        })
    }

    fn not_allowed(&self, target: &str) -> Refusal {
        let listed = self.names().collect::<Vec<_>>().join(",");
        Refusal {
            reason: Reason::SecretTargetNotAllowed,
            message: format!(
                "Secret target name {target} is not in --secret-target-names ({listed}); nothing \
                 is copied. Add {target} to that flag and to resourceNames of the \
                 skiff-secret-targets ClusterRole ({COMPONENT}), or set spec.targetName to a \
                 listed name"
            ),
        }
    }
}

fn disabled(target: &str) -> Refusal {
    Refusal {
        reason: Reason::SecretTargetsDisabled,
        message: format!(
            "Secret copies are disabled: skiff runs without --secret-target-names and may not \
             read or write Secrets; nothing is copied. To enable them, install the kustomize \
             component {COMPONENT} with {target} in both its --secret-target-names flag and its \
             ClusterRole's resourceNames"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::SourceKind;
    use crate::kube::api::ObjectMeta;
    use crate::testing::assert_mentions;

    fn mirror(kind: SourceKind, target: &str) -> Mirror {
        let mut m = Mirror {
            metadata: ObjectMeta::named(Some("skiff-system"), "m"),
            ..Mirror::default()
        };
        m.spec.source.kind = kind;
        m.spec.source.name = "source".into();
        m.spec.target_name = Some(target.into());
        m
    }

    #[test]
    fn configmap_mirrors_are_never_refused() {
        let none = SecretTargets::default();
        assert_eq!(none.refusal(&mirror(SourceKind::ConfigMap, "x")), None);
        let mut published = mirror(SourceKind::Secret, "ca-bundle");
        published.spec.target = Some(crate::mirror::types::TargetSpec {
            kind: Some(SourceKind::ConfigMap),
            ..Default::default()
        });
        let names = SecretTargets::new(["app-tls".to_string()]);
        assert_eq!(
            names.refusal(&published),
            None,
            "a Secret published as a ConfigMap is named as a ConfigMap"
        );
    }

    #[test]
    fn without_names_a_secret_mirror_is_told_how_to_enable_copies() {
        let refusal = SecretTargets::default()
            .refusal(&mirror(SourceKind::Secret, "app-tls"))
            .expect("refused");
        assert_eq!(refusal.reason, Reason::SecretTargetsDisabled);
        let parts = [
            "--secret-target-names",
            COMPONENT,
            "app-tls",
            "resourceNames",
        ];
        assert_mentions(&refusal.message, &parts);
    }

    #[test]
    fn only_listed_target_names_may_be_written() {
        let targets = SecretTargets::new(["app-tls".to_string(), "pull".to_string()]);
        assert!(targets.enabled());
        assert_eq!(targets.refusal(&mirror(SourceKind::Secret, "pull")), None);
        let refusal = targets
            .refusal(&mirror(SourceKind::Secret, "db"))
            .expect("refused");
        assert_eq!(refusal.reason, Reason::SecretTargetNotAllowed);
        let names = "db is not in --secret-target-names (app-tls,pull)";
        assert_mentions(&refusal.message, &[names]);
    }
}
