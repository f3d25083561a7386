use super::*;
use crate::kube::api::{Namespace, ObjectMeta};
use crate::mirror::SecretTargets;
use crate::mirror::acceptance::{AcceptanceSpec, MirrorRef};
use crate::mirror::caches::SourceScope;
use crate::mirror::fixtures::map;
use crate::mirror::namespace_selector::expr;
use crate::mirror::offers::SelfService;
use crate::mirror::types::LabelSelector;
use crate::runtime::Change;

/// Caches with self-service on (offers from namespaces labelled `offers=yes`, at most `cap`
/// copies each), the namespaces `namespaces` (name, labels) listed.
fn world(cap: usize, namespaces: &[(&str, &[(&str, &str)])]) -> Consent {
    let settings = SelfService {
        offer_selector: expr("offers", "In", &["yes"]),
        max_copies: cap,
    };
    let scope = SourceScope::Namespaces(["skiff-system".to_owned()].into());
    let caches = Caches::new(
        &scope,
        &SecretTargets::new(Vec::new()),
        Some(&settings),
        &crate::mirror::Kinds::default(),
    );
    for (name, labels) in namespaces {
        let ns = Namespace {
            metadata: ObjectMeta {
                labels: map(labels),
                ..ObjectMeta::named(None, name)
            },
            ..Namespace::default()
        };
        caches.namespaces.apply(&Change::Applied(ns));
    }
    let nowhere = "http://127.0.0.1:9".parse().expect("url");
    let client = Client::new(crate::kube::Config::new(nowhere)).expect("client");
    Consent::new(settings, caches, client)
}

fn accept(consent: &Consent, ns: &str, from: &Owner) {
    let a = MirrorAcceptance {
        metadata: ObjectMeta::named(Some(ns), "accept"),
        spec: AcceptanceSpec {
            from: MirrorRef {
                namespace: from.namespace.clone(),
                mirror: from.name.clone(),
            },
        },
        ..MirrorAcceptance::default()
    };
    let store = consent
        .caches
        .acceptances
        .as_ref()
        .expect("self-service on");
    store.apply(&Change::Applied(a));
}

fn offer() -> Owner {
    Owner {
        namespace: "team-a".into(),
        name: "share".into(),
    }
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[test]
fn only_namespaces_labelled_by_the_admin_offer() {
    let consent = world(10, &[("team-a", &[("offers", "yes")]), ("team-b", &[])]);
    assert!(consent.offers("team-a"));
    assert!(!consent.offers("team-b"));
    assert!(!consent.offers("no-such-namespace"));
}

#[test]
fn a_copy_is_served_only_where_selected_and_accepted() {
    let consent = world(10, &[]);
    let selected = set(&["team-b", "team-c"]);
    assert!(
        consent.served(&offer(), &selected).is_empty(),
        "nobody accepted"
    );
    accept(&consent, "team-b", &offer());
    accept(&consent, "team-d", &offer());
    let other = Owner {
        namespace: "team-a".into(),
        name: "other".into(),
    };
    accept(&consent, "team-c", &other);
    assert_eq!(consent.served(&offer(), &selected), set(&["team-b"]));
}

#[test]
fn the_cap_bounds_the_copies_of_one_offer_whatever_the_acceptances() {
    let consent = world(3, &[]);
    let names: Vec<String> = (0..50).map(|i| format!("t{i:02}")).collect();
    for ns in &names {
        accept(&consent, ns, &offer());
    }
    let selected: BTreeSet<String> = names.iter().cloned().collect();
    assert_eq!(
        consent.served(&offer(), &selected),
        set(&["t00", "t01", "t02"])
    );
}

#[test]
fn an_acceptance_of_what_was_never_offered_is_told_not_available() {
    let consent = world(10, &[("team-b", &[])]);
    let none = |_: SourceKind, _: &str, _: &str| None;
    assert_eq!(
        consent.verdict(&offer(), None, "team-b", &none, &BTreeSet::new()),
        Verdict::NotAvailable
    );
    let mut mirror = crate::mirror::fixtures::mirror_of("share", SourceKind::ConfigMap);
    mirror.metadata.namespace = Some("team-a".into());
    mirror.spec.namespace_selector = Some(LabelSelector::default());
    // Selected, but the source is not there (or not labelled): the same answer.
    assert_eq!(
        consent.verdict(&offer(), Some(&mirror), "team-b", &none, &BTreeSet::new()),
        Verdict::NotAvailable
    );
    assert_eq!(
        message(Verdict::NotAvailable, &offer(), "app"),
        "nothing is offered to this namespace as Mirror team-a/share"
    );
}

#[test]
fn an_offer_of_a_secret_is_refused_and_its_acceptances_told_why() {
    let consent = world(10, &[("team-b", &[])]);
    let mut mirror = crate::mirror::fixtures::mirror_of("share", SourceKind::Secret);
    mirror.metadata.namespace = Some("team-a".into());
    mirror.spec.namespace_selector = Some(LabelSelector::default());
    let none = |_: SourceKind, _: &str, _: &str| None;
    assert_eq!(
        consent.verdict(&offer(), Some(&mirror), "team-b", &none, &BTreeSet::new()),
        Verdict::KindNotAllowed
    );
    let refusal = kind_refusal(&mirror).expect("refused");
    assert_eq!(refusal.reason, Reason::KindNotAllowed);
    mirror.spec.source.kind = SourceKind::ConfigMap;
    assert_eq!(kind_refusal(&mirror), None);
}

#[test]
fn a_copy_already_served_keeps_its_place_under_the_cap() {
    let consent = world(2, &[]);
    let mut mirror = crate::mirror::fixtures::mirror_of("share", SourceKind::ConfigMap);
    mirror.metadata.namespace = Some("team-a".into());
    let held = crate::kube::api::ConfigMap {
        metadata: crate::mirror::copy::copy_meta(&mirror, "zz-late", "h", Some("1")),
        ..Default::default()
    };
    consent
        .caches
        .configmap_copies
        .apply(&Change::Applied(held));
    for ns in ["aa", "bb", "zz-late"] {
        accept(&consent, ns, &offer());
    }
    let selected = set(&["aa", "bb", "zz-late"]);
    assert_eq!(consent.served(&offer(), &selected), set(&["aa", "zz-late"]));
}
