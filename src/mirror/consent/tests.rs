use super::*;
use crate::flags::SelfService;
use crate::kind::Kinds;
use crate::kube::api::{Namespace, ObjectMeta};
use crate::mirror::SecretTargets;
use crate::mirror::acceptance::local_names::NameRefused;
use crate::mirror::acceptance::{AcceptanceSpec, MirrorRef};
use crate::mirror::caches::SourceScope;
use crate::mirror::fixtures::map;
use crate::mirror::kind_checks::KindChecks;
use crate::mirror::namespace_selector::expr;
use crate::mirror::tenancy::Tenancy;
use crate::mirror::types::LabelSelector;
use crate::runtime::Change;
use crate::testing::assert_mentions;

mod report;

/// Caches with self-service on (offers from namespaces labelled `offers=yes`, at most `cap`
/// copies each), the namespaces `namespaces` (name, labels) listed.
fn world(cap: usize, namespaces: &[(&str, &[(&str, &str)])]) -> Consent {
    sharing(&[SourceKind::ConfigMap], &[], cap, namespaces)
}

/// As [`world`], tenants sharing `kinds`, and Secrets only under `secret_names`.
fn sharing(
    kinds: &[SourceKind],
    secret_names: &[&str],
    cap: usize,
    namespaces: &[(&str, &[(&str, &str)])],
) -> Consent {
    sharing_as(settings(kinds, cap), secret_names, namespaces)
}

/// Offers from namespaces labelled `offers=yes`, of `kinds`, at most `cap` copies each.
fn settings(kinds: &[SourceKind], cap: usize) -> SelfService {
    SelfService {
        offer_selector: expr("offers", "In", &["yes"]),
        max_copies: cap,
        kinds: kinds.iter().copied().collect(),
        projections: BTreeSet::new(),
        orphan: false,
    }
}

/// Caches with self-service on as `settings` say, Secrets only under `secret_names`.
fn sharing_as(
    settings: SelfService,
    secret_names: &[&str],
    namespaces: &[(&str, &[(&str, &str)])],
) -> Consent {
    sharing_at("http://127.0.0.1:9", settings, secret_names, namespaces)
}

/// As [`sharing_as`], writing to the API server at `api`.
fn sharing_at(
    api: &str,
    settings: SelfService,
    secret_names: &[&str],
    namespaces: &[(&str, &[(&str, &str)])],
) -> Consent {
    let scope = SourceScope::Namespaces(["skiff-system".to_owned()].into());
    let secret_targets = SecretTargets::new(secret_names.iter().map(|n| n.to_string()));
    let caches = Caches::new(
        &scope,
        &secret_targets,
        Some(&settings),
        &Kinds::default().with_secret_targets(!secret_names.is_empty()),
        (None, None),
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
    let api = api.parse().expect("url");
    let client = Client::new(crate::kube::Config::new(api)).expect("client");
    let recorder = Recorder::new(&client, "skiff", "test");
    Consent::new(settings, secret_targets, caches, (client, recorder))
}

fn accept(consent: &Consent, ns: &str, from: &Owner) {
    accept_kind(consent, ns, from, SourceKind::ConfigMap);
}

fn accept_kind(consent: &Consent, ns: &str, from: &Owner, kind: SourceKind) {
    let a = MirrorAcceptance {
        metadata: ObjectMeta::named(Some(ns), "accept"),
        spec: AcceptanceSpec {
            from: MirrorRef {
                namespace: from.namespace.clone(),
                mirror: from.name.clone(),
            },
            kind,
            target_name: None,
        },
        ..MirrorAcceptance::default()
    };
    cache(consent, a);
}

/// The acceptance cache now holds `acceptance`.
fn cache(consent: &Consent, acceptance: MirrorAcceptance) {
    let store = consent.caches.acceptances.as_ref();
    store
        .expect("self-service on")
        .apply(&Change::Applied(acceptance));
}

/// The namespaces the offer `team-a/share` of `kind` serves of `selected`.
fn served(consent: &Consent, kind: SourceKind, selected: &BTreeSet<String>) -> BTreeSet<String> {
    let mut mirror = offered(kind, "share");
    mirror.metadata.name = Some("share".into());
    let local = consent.local_names(&offer(), &mirror);
    consent.served(&offer(), &local, selected)
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
        served(&consent, SourceKind::ConfigMap, &selected).is_empty(),
        "nobody accepted"
    );
    accept(&consent, "team-b", &offer());
    accept(&consent, "team-d", &offer());
    let other = Owner {
        namespace: "team-a".into(),
        name: "other".into(),
    };
    accept(&consent, "team-c", &other);
    assert_eq!(
        served(&consent, SourceKind::ConfigMap, &selected),
        set(&["team-b"])
    );
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
        served(&consent, SourceKind::ConfigMap, &selected),
        set(&["t00", "t01", "t02"])
    );
}

/// Whose `mirror` is, as a reconcile decides it.
fn tenancy(consent: &Consent, mirror: &Mirror) -> Tenancy {
    let scope = SourceScope::Namespaces(["skiff-system".to_owned()].into());
    Tenancy::of(mirror, (&scope, Some(consent)), &consent.caches)
}

/// A Mirror `share` in team-a of `kind`, selecting every namespace.
fn offered(kind: SourceKind, source: &str) -> Mirror {
    let mut mirror = crate::mirror::fixtures::mirror_of("share", kind);
    mirror.spec.source.name = source.into();
    mirror.metadata.namespace = Some("team-a".into());
    mirror.spec.namespace_selector = Some(LabelSelector::default());
    mirror
}

#[test]
fn an_acceptance_of_what_was_never_offered_is_told_not_available() {
    let consent = world(10, &[("team-a", &[("offers", "yes")]), ("team-b", &[])]);
    let none = |_: SourceKind, _: &str, _: &str| None;
    let key = ObjectKey::new("team-b", "accept");
    let b = (&key, SourceKind::ConfigMap);
    let verdict = |seen: Option<Seen>, b| consent.verdict(seen, b, &none, &BTreeSet::new());
    assert_eq!(verdict(None, b), Verdict::NotAvailable);
    let mirror = offered(SourceKind::ConfigMap, "share");
    let tenancy = tenancy(&consent, &mirror);
    assert!(tenancy.is_offer());
    let seen = tenancy.seen(&mirror, false);
    // Selected, but the source is not there (or not labelled): the same answer.
    assert_eq!(verdict(seen, b), Verdict::NotAvailable);
    // An acceptance of another kind than the offer's: the same answer again.
    assert_eq!(
        verdict(seen, (&key, SourceKind::Secret)),
        Verdict::NotAvailable
    );
    let kind = SourceKind::ConfigMap;
    assert_eq!(
        message(Verdict::NotAvailable, &offer(), (kind, "app"), None),
        "no ConfigMap is offered to this namespace as Mirror team-a/share"
    );
}

#[test]
fn an_offer_of_a_kind_tenants_may_not_share_is_refused_and_its_acceptances_told_why() {
    let consent = world(10, &[("team-a", &[("offers", "yes")]), ("team-b", &[])]);
    let mirror = offered(SourceKind::Secret, "app-tls");
    let kinds = KindChecks::default();
    let refusal = consent.refusal(&mirror, &kinds).expect("refused");
    assert_eq!(refusal.reason, Reason::KindNotAllowed);
    assert!(
        refusal.message.contains("--self-service-kinds"),
        "{refusal:?}"
    );
    let none = |_: SourceKind, _: &str, _: &str| None;
    let key = ObjectKey::new("team-b", "accept");
    let tenancy = tenancy(&consent, &mirror);
    let seen = tenancy.seen(&mirror, true);
    assert_eq!(
        consent.verdict(seen, (&key, SourceKind::Secret), &none, &BTreeSet::new()),
        Verdict::KindNotAllowed
    );
    assert_eq!(
        consent.refusal(&offered(SourceKind::ConfigMap, "x"), &kinds),
        None
    );
}

#[test]
fn a_tenant_secret_is_shared_only_under_an_allowed_name() {
    let shared = [SourceKind::ConfigMap, SourceKind::Secret];
    let consent = sharing(&shared, &["app-tls"], 10, &[]);
    let kinds = KindChecks::new(Kinds::default().with_secret_targets(true), None);
    assert_eq!(
        consent.refusal(&offered(SourceKind::Secret, "app-tls"), &kinds),
        None
    );
    let other = consent.refusal(&offered(SourceKind::Secret, "db-password"), &kinds);
    let other = other.expect("a name not allowed");
    assert_eq!(other.reason, Reason::SecretTargetNotAllowed);
    assert!(other.message.contains("app-tls"), "{other:?}");
    // Allowed as a source, but copied to a name that is not: refused as for any Mirror.
    let mut renamed = offered(SourceKind::Secret, "app-tls");
    renamed.spec.target_name = Some("elsewhere".into());
    let renamed = consent
        .refusal(&renamed, &kinds)
        .expect("a target not allowed");
    assert_eq!(renamed.reason, Reason::SecretTargetNotAllowed);
}

#[test]
fn only_acceptances_of_the_offered_kind_count() {
    let consent = world(10, &[]);
    accept(&consent, "team-b", &offer());
    accept_kind(&consent, "team-c", &offer(), SourceKind::Secret);
    let selected = set(&["team-b", "team-c"]);
    assert_eq!(
        served(&consent, SourceKind::ConfigMap, &selected),
        set(&["team-b"])
    );
    assert_eq!(
        served(&consent, SourceKind::Secret, &selected),
        set(&["team-c"])
    );
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
    let held = crate::mirror::fixtures::object(&held);
    consent
        .caches
        .apply_copy(SourceKind::ConfigMap, &Change::Applied(held));
    for ns in ["aa", "bb", "zz-late"] {
        accept(&consent, ns, &offer());
    }
    let selected = set(&["aa", "bb", "zz-late"]);
    assert_eq!(
        served(&consent, SourceKind::ConfigMap, &selected),
        set(&["aa", "zz-late"])
    );
}

#[test]
fn an_acceptance_refused_its_local_name_is_told_why_naming_only_its_own_objects() {
    let (kind, secret) = (SourceKind::ConfigMap, SourceKind::Secret);
    let taken = NameRefused::Taken {
        by: "first".into(),
        name: "settings".into(),
    };
    let told = message(Verdict::Conflict, &offer(), (kind, "mine"), Some(&taken));
    assert!(told.contains("acceptance first here"), "{told}");
    assert!(told.contains("ConfigMap settings"), "{told}");
    let refused = Some(&NameRefused::SecretName);
    let told = message(
        Verdict::KindNotAllowed,
        &offer(),
        (secret, "db-creds"),
        refused,
    );
    assert!(told.contains("spec.targetName db-creds"), "{told}");
    assert!(told.contains("--secret-target-names"), "{told}");
    let told = message(Verdict::Served, &offer(), (kind, "mine"), None);
    assert_eq!(
        told,
        "ConfigMap mine here is a copy offered by team-a/share"
    );
    let told = message(Verdict::Conflict, &offer(), (kind, "mine"), None);
    assert!(told.contains("an object named mine"), "{told}");
}

/// The offer `share` publishing the Secret `source`'s `ca.crt` as a ConfigMap.
fn publishing(source: &str) -> Mirror {
    let mut mirror = offered(SourceKind::Secret, source);
    mirror.spec.source.keys = vec!["ca.crt".into()];
    mirror.spec.target = Some(crate::mirror::types::TargetSpec {
        kind: Some(SourceKind::ConfigMap),
        ..Default::default()
    });
    mirror
}

#[test]
fn a_tenant_publishes_a_secret_as_a_configmap_only_when_the_admin_names_the_projection() {
    let kinds = KindChecks::new(Kinds::default().with_secret_targets(true), None);
    let configmaps = sharing(&[SourceKind::ConfigMap], &["app-tls"], 10, &[]);
    let refused = configmaps
        .refusal(&publishing("app-tls"), &kinds)
        .expect("not named");
    assert_eq!(refused.reason, Reason::KindNotAllowed);
    assert_mentions(
        &refused.message,
        &[
            "--self-service-projections",
            "Secret published as a ConfigMap",
            "none",
        ],
    );
    let mut settings = configmaps.settings.clone();
    settings
        .projections
        .insert((SourceKind::Secret, SourceKind::ConfigMap));
    let consent = sharing_as(settings, &["app-tls"], &[]);
    assert_eq!(consent.refusal(&publishing("app-tls"), &kinds), None);
    assert!(
        consent.settings.reads(SourceKind::Secret) && !consent.settings.shares(SourceKind::Secret)
    );
    let unnamed = consent
        .refusal(&publishing("db-password"), &kinds)
        .expect("a source not allowed");
    assert_eq!(unnamed.reason, Reason::SecretTargetNotAllowed);
    // Its copies are ConfigMaps: acceptances of ConfigMaps are served, of Secrets not.
    accept(&consent, "team-b", &offer());
    accept_kind(&consent, "team-c", &offer(), SourceKind::Secret);
    let local = consent.local_names(&offer(), &publishing("app-tls"));
    let served = consent.served(&offer(), &local, &set(&["team-b", "team-c"]));
    assert_eq!(served, set(&["team-b"]));
}

#[test]
fn an_offers_copies_outlive_it_only_when_the_admin_allows() {
    let kinds = KindChecks::default();
    let consent = world(10, &[]);
    let mut mirror = offered(SourceKind::ConfigMap, "x");
    mirror.spec.deletion_policy = Some(crate::mirror::types::DeletionPolicy::Orphan);
    let refused = consent.refusal(&mirror, &kinds).expect("not allowed");
    assert_eq!(refused.reason, Reason::OrphanNotAllowed);
    assert_mentions(
        &refused.message,
        &["--self-service-orphan", "spec.deletionPolicy"],
    );
    let mut settings = consent.settings.clone();
    settings.orphan = true;
    assert_eq!(
        sharing_as(settings, &[], &[]).refusal(&mirror, &kinds),
        None
    );
}
