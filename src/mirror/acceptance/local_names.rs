//! The names the acceptances of one offer give its copies (`spec.targetName`), decided once
//! per reconcile from the acceptance cache: which namespaces may be served, under which name,
//! and which acceptances are not served for the name they ask.
//!
//! An acceptance asks the offer's usual name unless it sets `targetName`. A Secret's local
//! name must be one of `--secret-target-names` (the only Secrets skiff may write), or the
//! acceptance reads `KindNotAllowed`. One namespace holds one copy of an offer: of its
//! acceptances asking different names, the first by name wins and the others read
//! `Conflict`, naming the winner (an object of their own namespace).

use super::{Accepted, Verdict};
use crate::kind::{NameRule, SourceKind};
use crate::mirror::copy_names::CopyNames;
use crate::runtime::ObjectKey;
use std::collections::{BTreeMap, BTreeSet};

/// Why one acceptance is not served for the name it asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameRefused {
    /// A Secret under a name not in `--secret-target-names`.
    SecretName,
    /// A name another controller keeps in every namespace (the kind's row reserves it), and
    /// who keeps it.
    Reserved(&'static str),
    /// Another acceptance of the same offer in its namespace, the one named, comes first.
    Taken { by: String, name: String },
}

impl NameRefused {
    pub fn verdict(&self) -> Verdict {
        match self {
            NameRefused::SecretName => Verdict::KindNotAllowed,
            NameRefused::Reserved(_) => Verdict::Conflict,
            NameRefused::Taken { .. } => Verdict::Conflict,
        }
    }
}

/// What the acceptances of one offer ask.
#[derive(Debug, Default)]
pub struct LocalNames {
    pub names: CopyNames,
    /// The namespaces with an acceptance that may be served.
    pub accepting: BTreeSet<String>,
    /// The acceptances not served for their name.
    pub refused: BTreeMap<ObjectKey, NameRefused>,
}

/// The names `acceptances` (of one offer of `kind`, whose copies are usually named `usual`)
/// ask; `allowed_secret` says whether a Secret may be written under a name.
pub fn local_names(
    mut acceptances: Vec<(ObjectKey, Accepted)>,
    (kind, usual): (SourceKind, &str),
    allowed_secret: impl Fn(&str) -> bool,
) -> LocalNames {
    acceptances.sort_by(|a, b| a.0.cmp(&b.0));
    let mut local = LocalNames {
        names: CopyNames::new(usual),
        ..LocalNames::default()
    };
    let mut first: BTreeMap<String, (String, &str)> = BTreeMap::new();
    for (key, accepted) in acceptances.iter().filter(|(_, a)| a.kind == kind) {
        let name = accepted.target_name().unwrap_or(usual);
        let row = kind.row();
        if let Some(reserved) = row.reserved(name) {
            let refused = NameRefused::Reserved(reserved.why);
            local.refused.insert(key.clone(), refused);
            continue;
        }
        let by_name = row.names == NameRule::SecretTargetNames;
        if by_name && name != usual && !allowed_secret(name) {
            local.refused.insert(key.clone(), NameRefused::SecretName);
            continue;
        }
        match first.get(&*key.namespace) {
            Some((_, taken)) if *taken == name => {}
            Some((by, taken)) => {
                let (by, name) = (by.clone(), taken.to_string());
                local
                    .refused
                    .insert(key.clone(), NameRefused::Taken { by, name });
            }
            None => {
                local.names.rename(&key.namespace, name);
                local.accepting.insert(key.namespace.to_string());
                first.insert(key.namespace.to_string(), (key.name.to_string(), name));
            }
        }
    }
    local
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::Version;
    use std::sync::Arc;

    fn accepted(kind: SourceKind, target_name: Option<&str>) -> Accepted {
        Accepted {
            from: Arc::from("team-a/share"),
            generation: 1,
            shown: None,
            shown_current: false,
            kind,
            target_name: target_name.map(|n| Box::new(n.into())),
            version: Version::new("1"),
        }
    }

    fn of(items: &[(&str, &str, Option<&str>)], kind: SourceKind) -> LocalNames {
        let acceptances = items
            .iter()
            .map(|(ns, name, to)| (ObjectKey::new(*ns, *name), accepted(kind, *to)))
            .collect();
        local_names(acceptances, (kind, "settings"), |n| n == "app-tls")
    }

    #[test]
    fn each_namespace_gets_the_name_its_acceptance_asks() {
        let local = of(
            &[
                ("team-b", "a", Some("their-settings")),
                ("team-c", "a", None),
            ],
            SourceKind::ConfigMap,
        );
        assert_eq!(local.names.of("team-b"), "their-settings");
        assert_eq!(local.names.of("team-c"), "settings");
        assert_eq!(local.accepting.len(), 2);
        assert!(local.refused.is_empty());
    }

    #[test]
    fn of_two_names_asked_in_one_namespace_the_first_acceptance_wins() {
        let asks = [
            ("team-b", "zz-late", Some("other")),
            ("team-b", "aa-early", Some("mine")),
            ("team-b", "same", Some("mine")),
        ];
        let local = of(&asks, SourceKind::ConfigMap);
        assert_eq!(local.names.of("team-b"), "mine");
        let late = ObjectKey::new("team-b", "zz-late");
        let taken = NameRefused::Taken {
            by: "aa-early".into(),
            name: "mine".into(),
        };
        assert_eq!(local.refused.get(&late), Some(&taken));
        assert_eq!(local.refused.len(), 1, "{:?}", local.refused);
    }

    #[test]
    fn a_secret_goes_only_under_an_allowed_name() {
        let asks = [
            ("team-b", "a", Some("creds")),
            ("team-c", "a", Some("app-tls")),
        ];
        let local = of(&asks, SourceKind::Secret);
        let refused = local.refused.get(&ObjectKey::new("team-b", "a"));
        assert_eq!(refused, Some(&NameRefused::SecretName));
        assert_eq!(local.accepting, BTreeSet::from(["team-c".to_owned()]));
        assert_eq!(local.names.of("team-c"), "app-tls");
    }

    #[test]
    fn a_name_another_controller_keeps_is_never_served() {
        let asks = [
            ("team-b", "a", Some("default")),
            ("team-c", "a", Some("builder")),
        ];
        let local = of(&asks, SourceKind::ServiceAccount);
        let refused = local.refused.get(&ObjectKey::new("team-b", "a"));
        assert!(
            matches!(refused, Some(NameRefused::Reserved(_))),
            "{refused:?}"
        );
        assert_eq!(refused.map(NameRefused::verdict), Some(Verdict::Conflict));
        assert_eq!(local.accepting, BTreeSet::from(["team-c".to_owned()]));
    }

    #[test]
    fn acceptances_of_another_kind_ask_nothing() {
        let local = of(&[("team-b", "a", Some("x"))], SourceKind::ConfigMap);
        let other = local_names(
            vec![(
                ObjectKey::new("team-b", "a"),
                accepted(SourceKind::Secret, Some("x")),
            )],
            (SourceKind::ConfigMap, "settings"),
            |_| true,
        );
        assert_eq!(local.accepting.len(), 1);
        assert!(other.accepting.is_empty() && other.refused.is_empty());
    }
}
