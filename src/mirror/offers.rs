//! Which sources tenants offer (their label), and the Mirrors a namespace's offer label wakes
//! when it comes or goes. The admin's guardrails of `--self-service` are
//! [`crate::flags::SelfService`]; the caches and the consent checks ([`super::consent`]) read
//! both.

use super::copy::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use super::namespace::{NamespaceEntry, NamespaceInfo};
use super::types::{LabelSelector, Mirror};
use crate::kube::api::Namespace;
use crate::runtime::{Change, ObjectKey, Store};

/// The label a tenant's ConfigMap must carry (`true`) to be offered.
pub const SOURCE_LABEL: &str = "skiff.dev/offered";

/// The label selector of the tenant source watch: offered, and not a skiff copy.
pub fn offered_selector() -> String {
    format!("{SOURCE_LABEL}=true,{MANAGED_BY_LABEL}!={MANAGED_BY_VALUE}")
}

/// The Mirrors a Namespace event concerns beyond its selections: those of a namespace that
/// started or stopped matching the offer selector (their offers open or close). The first
/// list is skipped: every Mirror is reconciled after it anyway.
pub fn offer_moved(
    offer: &LabelSelector,
    mirrors: &Store<Mirror, Mirror>,
    event: &Change<Namespace>,
    previous: Option<&NamespaceEntry>,
) -> Vec<ObjectKey> {
    let (Change::Listed(ns) | Change::Applied(ns)) = event else {
        return Vec::new();
    };
    if previous.is_none() && matches!(event, Change::Listed(_)) {
        return Vec::new();
    }
    let offers = |info: &NamespaceInfo| offer.matches(|k| info.label(k));
    let was = previous.map(|e| NamespaceInfo::view(ns.metadata.name(), e));
    if was.as_ref().is_some_and(offers) == offers(&NamespaceInfo::of(ns)) {
        return Vec::new();
    }
    let name = ns.metadata.name();
    let mut keys = mirrors.keys();
    keys.retain(|k| &*k.namespace == name);
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::ObjectMeta;
    use crate::mirror::fixtures::map;
    use crate::mirror::namespace_selector::expr;

    #[test]
    fn a_namespace_that_starts_or_stops_offering_wakes_its_mirrors_only() {
        let mirrors = crate::mirror::index::mirror_store();
        for (ns, name) in [("team-a", "one"), ("team-a", "two"), ("team-b", "three")] {
            let m = Mirror {
                metadata: ObjectMeta::named(Some(ns), name),
                ..Mirror::default()
            };
            mirrors.apply(&Change::Applied(m));
        }
        let offer = expr("offers", "In", &["yes"]);
        let ns = |labels: &[(&str, &str)]| Namespace {
            metadata: ObjectMeta {
                labels: map(labels),
                ..ObjectMeta::named(None, "team-a")
            },
            ..Namespace::default()
        };
        let before = NamespaceEntry::of(&ns(&[]));
        let labelled = Change::Applied(ns(&[("offers", "yes")]));
        let mut woken = offer_moved(&offer, &mirrors, &labelled, Some(&before));
        woken.sort();
        let keys = [
            ObjectKey::new("team-a", "one"),
            ObjectKey::new("team-a", "two"),
        ];
        assert_eq!(woken, keys);
        let after = NamespaceEntry::of(&ns(&[("offers", "yes")]));
        let relabel = Change::Applied(ns(&[("offers", "yes"), ("x", "y")]));
        assert!(offer_moved(&offer, &mirrors, &relabel, Some(&after)).is_empty());
        let first_list = Change::Listed(ns(&[("offers", "yes")]));
        assert!(offer_moved(&offer, &mirrors, &first_list, None).is_empty());
    }
}
