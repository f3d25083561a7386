//! Where skiff may write a kit kind's copy, and to whom a RoleBinding may grant: what the
//! shipped admission policies `skiff-kit-namespaces` and `skiff-rolebindings`
//! (manifests/components/kinds/) let skiff's own ServiceAccount do, checked here before any
//! write, so a Mirror is refused with a reason rather than meeting a policy's denial.
//!
//! `bind` by `resourceNames` limits the role a binding grants, not where nor to whom; the
//! policy closes that for a stolen token. A copy goes only into namespaces carrying the label
//! `--binding-namespace-label` names (an admin sets it; skiff may not write namespaces), never
//! into a `kube-*` namespace or skiff's own, and never grants anything to skiff itself.

use super::status::{Reason, Refusal};
use super::types::Mirror;
use crate::kind::Kind;
use serde_json::Value;
use std::collections::BTreeSet;

/// The groups every ServiceAccount of skiff's namespace belongs to (the one of the namespace
/// itself is added per namespace).
const GROUPS_HOLDING_SKIFF: [&str; 2] = ["system:serviceaccounts", "system:authenticated"];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BindingGuard {
    /// The label key a namespace must carry to receive a RoleBinding copy.
    label: String,
    /// The namespace skiff runs in, when known (in a pod it always is).
    own: Option<String>,
}

impl BindingGuard {
    pub fn new(label: String) -> BindingGuard {
        BindingGuard { label, own: None }
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    pub fn in_namespace(mut self, own: Option<String>) -> BindingGuard {
        self.own = own;
        self
    }

    /// Why `mirror`, of the kind `row`, may select namespaces the policies refuse: its
    /// namespaceSelector does not require the label.
    pub fn selector_refusal(&self, row: &Kind, mirror: &Mirror) -> Option<Refusal> {
        let label = self.label.as_str();
        let requires = mirror.spec.namespace_selector.as_ref().is_some_and(|s| {
            s.match_labels.contains_key(label)
                || (s.match_expressions.iter())
                    .any(|e| e.key == label && matches!(e.operator.as_str(), "In" | "Exists"))
        });
        (!requires).then(|| Refusal {
            reason: Reason::NamespaceNotLabelled,
            message: format!(
                "a {} is copied only into namespaces labelled {label} \
                 (--binding-namespace-label), which only an admin sets; this Mirror's \
                 namespaceSelector does not require that label, so nothing is copied. Add \
                 {label} to spec.namespaceSelector.matchLabels",
                row.name
            ),
        })
    }

    /// Why the selected namespaces may not receive a RoleBinding: one is a `kube-*` namespace
    /// or skiff's own.
    pub fn namespace_refusal(&self, selected: &BTreeSet<String>) -> Option<Refusal> {
        let own = self.own.as_deref();
        let protected: Vec<&str> = (selected.iter().map(String::as_str))
            .filter(|ns| ns.starts_with("kube-") || Some(*ns) == own)
            .collect();
        (!protected.is_empty()).then(|| {
            refused(format!(
                "the namespaceSelector selects {}, where skiff never writes a RoleBinding \
                 (kube-* namespaces and its own); nothing is copied. Remove the label {} from \
                 those namespaces",
                protected.join(", "),
                self.label
            ))
        })
    }

    /// Why `subjects` may not be copied: one of them is, or holds, a ServiceAccount of
    /// skiff's namespace. (A ServiceAccount without a namespace is one of the copy's namespace,
    /// never skiff's: see `namespace_refusal`.)
    pub fn subject_refusal(&self, subjects: &Value) -> Option<Refusal> {
        let own = self.own.as_deref()?;
        let own_group = format!("system:serviceaccounts:{own}");
        let own_user = format!("system:serviceaccount:{own}:");
        let text = |s: &Value, key: &str| s[key].as_str().unwrap_or_default().to_owned();
        let holds_skiff = |s: &&Value| {
            let name = text(s, "name");
            match text(s, "kind").as_str() {
                "ServiceAccount" => s["namespace"].as_str() == Some(own),
                "User" => name.starts_with(&own_user),
                "Group" => name == own_group || GROUPS_HOLDING_SKIFF.contains(&name.as_str()),
                _ => false,
            }
        };
        let subject = subjects.as_array()?.iter().find(holds_skiff)?;
        Some(refused(format!(
            "the RoleBinding grants its role to {} {}, which is or holds skiff's own \
             ServiceAccount (namespace {own}); skiff never grants anything to itself, so nothing \
             is copied. Bind another subject",
            text(subject, "kind"),
            text(subject, "name")
        )))
    }
}

fn refused(message: String) -> Refusal {
    Refusal {
        reason: Reason::BindingNotAllowed,
        message,
    }
}

#[cfg(test)]
mod tests;
