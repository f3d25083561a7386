//! Which of a source's own labels and annotations its copies carry.
//!
//! None, unless the Mirror opts in (`spec.source.copyLabels`, `copyAnnotations`): tools select
//! objects by label, so a label copied without being asked for can make a copy part of
//! something it is not. Even when opted in, the keys GitOps tools and package managers use to
//! track what they own are never copied: a copy carrying its source's Argo CD tracking id or
//! Flux or Helm ownership would be pruned by them, or shown out of sync. Nor are skiff's own
//! keys: they say which Mirror a copy belongs to.

use std::collections::BTreeMap;

/// Keys never copied from a source, whatever the Mirror asks.
pub const NEVER_COPIED: [&str; 3] = [
    // Argo CD: the tracking annotation (the default since 3.0) and the tracking label.
    "argocd.argoproj.io/tracking-id",
    "app.kubernetes.io/instance",
    // `kubectl apply`'s record of what it last applied, the whole source included.
    "kubectl.kubernetes.io/last-applied-configuration",
];

/// Key prefixes never copied from a source: Flux's and Helm's ownership, and skiff's own.
pub const NEVER_COPIED_PREFIXES: [&str; 4] = [
    "kustomize.toolkit.fluxcd.io/",
    "helm.toolkit.fluxcd.io/",
    "meta.helm.sh/",
    "skiff.dev/",
];

/// skiff sets it on every copy (`skiff`); a source's value (Helm's `Helm`, say) never passes.
const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// Whether `key` may ever be copied from a source.
pub fn may_copy(key: &str) -> bool {
    key != MANAGED_BY
        && !NEVER_COPIED.contains(&key)
        && !NEVER_COPIED_PREFIXES.iter().any(|p| key.starts_with(p))
}

/// Whether `key` is chosen by `pattern`: the key itself, `prefix/*` (every key under that
/// prefix) or `*` (every key).
pub fn chooses(pattern: &str, key: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) if prefix.is_empty() || prefix.ends_with('/') => key.starts_with(prefix),
        _ => pattern == key,
    }
}

/// The entries of `source` that `patterns` choose and that may be copied.
pub fn carried(patterns: &[String], source: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    if patterns.is_empty() {
        return BTreeMap::new();
    }
    only(source, |key| {
        may_copy(key) && patterns.iter().any(|p| chooses(p, key))
    })
}

/// `source` without what may never be copied: all a source cache needs to keep.
pub fn copyable(source: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    only(source, may_copy)
}

/// The entries of `source` whose key passes `keep`, inserted one by one: collecting them would
/// compile the standard library's sort once more for each call site (4 KB each).
fn only(
    source: &BTreeMap<String, String>,
    keep: impl Fn(&str) -> bool,
) -> BTreeMap<String, String> {
    let mut kept = BTreeMap::new();
    for (key, value) in source.iter().filter(|(key, _)| keep(key)) {
        kept.insert(key.clone(), value.clone());
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::fixtures::map;

    fn patterns(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn nothing_is_carried_without_an_opt_in() {
        assert!(carried(&[], &map(&[("team", "a")])).is_empty());
    }

    #[test]
    fn keys_prefixes_and_everything() {
        let source = map(&[("cnpg.io/reload", "1"), ("cnpg.io/x", "2"), ("team", "a")]);
        let only = carried(&patterns(&["cnpg.io/reload"]), &source);
        assert_eq!(only, map(&[("cnpg.io/reload", "1")]));
        let prefix = carried(&patterns(&["cnpg.io/*"]), &source);
        assert_eq!(prefix, map(&[("cnpg.io/reload", "1"), ("cnpg.io/x", "2")]));
        assert_eq!(carried(&patterns(&["*"]), &source), source);
        assert!(!chooses("cnpg.io*", "cnpg.io/x"), "a prefix ends with /");
    }

    #[test]
    fn the_crd_refuses_and_documents_every_key_never_copied() {
        let crd = include_str!("../../manifests/crd.yaml");
        let rule = crd
            .split("&neverCopied")
            .nth(1)
            .and_then(|rest| rest.split("messageExpression").next())
            .expect("the CRD's never-copied rule");
        let description = crd
            .split("copyLabels:")
            .nth(1)
            .and_then(|rest| rest.split("type: array").next())
            .expect("copyLabels' description");
        for key in NEVER_COPIED.iter().chain([&MANAGED_BY]) {
            assert!(
                rule.contains(&format!("'{key}'")),
                "{key} missing from the rule"
            );
            assert!(
                description.contains(key),
                "{key} missing from the description"
            );
        }
        for prefix in NEVER_COPIED_PREFIXES {
            let starts = format!("startsWith('{prefix}')");
            assert!(rule.contains(&starts), "{prefix} missing from the rule");
            assert!(
                description.contains(prefix),
                "{prefix} missing from the description"
            );
        }
    }

    #[test]
    fn tracking_and_ownership_keys_are_never_carried_even_when_asked_for() {
        let source = map(&[
            ("argocd.argoproj.io/tracking-id", "app:/ConfigMap:ns/x"),
            ("argocd.argoproj.io/secret-type", "repository"),
            ("app.kubernetes.io/instance", "app"),
            ("app.kubernetes.io/managed-by", "Helm"),
            ("app.kubernetes.io/name", "ca"),
            ("kustomize.toolkit.fluxcd.io/name", "apps"),
            ("helm.toolkit.fluxcd.io/namespace", "flux"),
            ("meta.helm.sh/release-name", "r"),
            ("kubectl.kubernetes.io/last-applied-configuration", "{}"),
            ("skiff.dev/adopt", "a/b"),
        ]);
        let all = carried(&patterns(&["*"]), &source);
        let wanted = map(&[
            ("argocd.argoproj.io/secret-type", "repository"),
            ("app.kubernetes.io/name", "ca"),
        ]);
        assert_eq!(all, wanted);
        assert_eq!(copyable(&source), wanted);
        let named = patterns(&["app.kubernetes.io/instance", "meta.helm.sh/*"]);
        assert!(carried(&named, &source).is_empty());
    }
}
