//! `metav1.LabelSelector`: which objects a selector selects, as Mirrors and flags write it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A Kubernetes `metav1.LabelSelector`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LabelSelector {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LabelSelectorRequirement {
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

impl LabelSelector {
    /// Whether the labels `label(key)` reads satisfy this selector (Kubernetes
    /// `metav1.LabelSelector` semantics). An unknown operator matches nothing: the CRD schema
    /// rejects it, so this is only a guard.
    pub fn matches<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        (self.match_labels.iter()).all(|(k, v)| label(k) == Some(v.as_str()))
            && (self.match_expressions.iter()).all(|req| req.matches(label(&req.key)))
    }
}

impl LabelSelectorRequirement {
    /// Whether a label whose value is `value` (`None`: absent) satisfies this requirement.
    fn matches(&self, value: Option<&str>) -> bool {
        let listed = |v: &str| self.values.iter().any(|listed| listed == v);
        match self.operator.as_str() {
            "In" => value.is_some_and(listed),
            "NotIn" => value.is_none_or(|v| !listed(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    }
}
