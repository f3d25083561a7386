use super::*;
use crate::kube::api::ObjectMeta;
use crate::testing::assert_mentions;

fn mirror() -> Mirror {
    let mut m = Mirror {
        metadata: ObjectMeta::named(Some("src"), "m"),
        ..Mirror::default()
    };
    m.metadata.generation = Some(3);
    m.spec.source.name = "app-ca".into();
    m
}

fn observed(selected: u32, synced: u32, conflicts: &[&str]) -> Observed {
    Observed {
        source_hash: Some("h".into()),
        selected,
        synced,
        conflicts: conflicts.iter().map(|s| s.to_string()).collect(),
        ..Observed::default()
    }
}

/// The status of [`mirror`] built at `t1` from `observed`, with no message of its own.
fn first_status(observed: &Observed, reason: Reason) -> MirrorStatus {
    build(&mirror(), observed, reason, "", "t1")
}

/// The Ready condition's status and reason.
fn ready(s: &MirrorStatus) -> (&str, &str) {
    let c = &s.conditions[0];
    (c.status.as_str(), c.reason.as_str())
}

#[test]
fn all_copies_synced_is_ready() {
    let s = first_status(&observed(2, 2, &[]), Reason::Synced);
    assert_eq!(ready(&s), ("True", "Synced"));
    assert_eq!(s.observed_generation, Some(3));
    assert_eq!((s.selected, s.synced, s.conflicts), (2, 2, 0));
}

#[test]
fn conflicts_make_it_not_ready_and_are_named() {
    let s = first_status(&observed(3, 2, &["team-b"]), Reason::Synced);
    assert_eq!(ready(&s), ("False", "Conflict"));
    assert_mentions(&s.conditions[0].message, &["team-b", "app-ca"]);
    assert_eq!(s.conflicts, 1);
}

#[test]
fn a_status_reporting_the_same_conflicts_already_reports_them() {
    let mut m = mirror();
    let conflicts = vec!["team-b".to_string(), "team-c".to_string()];
    assert!(!already_reports(&m, &conflicts));
    m.status = Some(build(
        &m,
        &observed(3, 1, &["team-b", "team-c"]),
        Reason::Synced,
        "",
        "t1",
    ));
    assert!(already_reports(&m, &conflicts));
    assert!(!already_reports(&m, &conflicts[..1]));
    assert!(!already_reports(&m, &["team-b".into(), "team-d".into()]));
}

#[test]
fn a_long_conflict_list_is_summarised() {
    let many: Vec<String> = (0..15).map(|i| format!("ns{i}")).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let s = first_status(&observed(15, 0, &refs), Reason::Synced);
    assert!(
        s.conditions[0].message.ends_with("and 5 more"),
        "{}",
        s.conditions[0].message
    );
}

#[test]
fn transition_time_moves_only_when_the_status_changes() {
    let mut m = mirror();
    m.status = Some(build(&m, &observed(1, 1, &[]), Reason::Synced, "", "t1"));
    let same = build(&m, &observed(2, 2, &[]), Reason::Synced, "", "t2");
    assert_eq!(
        same.conditions[0].last_transition_time.as_deref(),
        Some("t1")
    );
    let flipped = build(
        &m,
        &observed(0, 0, &[]),
        Reason::SourceNotFound,
        "gone",
        "t3",
    );
    assert_eq!(
        flipped.conditions[0].last_transition_time.as_deref(),
        Some("t3")
    );
    assert_eq!(flipped.conditions[0].message, "gone");
}

#[test]
fn an_unchanged_outcome_builds_an_equal_status() {
    let mut m = mirror();
    m.status = Some(build(&m, &observed(2, 2, &[]), Reason::Synced, "", "t1"));
    assert_eq!(
        m.status,
        Some(build(&m, &observed(2, 2, &[]), Reason::Synced, "", "t9"))
    );
}

#[test]
fn adoptions_and_replacements_add_up_across_reconciles() {
    let mut m = mirror();
    let mut first = observed(2, 2, &[]);
    (first.adopted, first.replaced) = (1, 2);
    m.status = Some(build(&m, &first, Reason::Synced, "", "t1"));
    let quiet = build(&m, &observed(2, 2, &[]), Reason::Progressing, "", "t2");
    assert_eq!(
        (quiet.adopted, quiet.replaced),
        (1, 2),
        "kept when nothing new"
    );
    let mut again = observed(2, 2, &[]);
    again.replaced = 1;
    let later = build(&m, &again, Reason::Synced, "", "t3");
    assert_eq!((later.adopted, later.replaced), (1, 3));
}

#[test]
fn progress_is_not_ready_and_counts_the_copies_done() {
    let s = first_status(&observed(1000, 412, &[]), Reason::Progressing);
    assert_eq!(ready(&s), ("False", "Progressing"));
    assert_eq!(s.conditions[0].message, "412 of 1,000 copies up to date");
    assert_eq!((s.selected, s.synced), (1000, 412));
    assert_eq!(grouped(1_234_567), "1,234,567");
    assert_eq!(grouped(999), "999");
}

#[test]
fn a_private_status_counts_conflicts_without_naming_them() {
    let mut seen = observed(3, 2, &["team-c"]);
    seen.private = true;
    let s = first_status(&seen, Reason::Synced);
    assert_eq!(s.conflicts, 1);
    assert!(
        !s.conditions[0].message.contains("team-c"),
        "{}",
        s.conditions[0].message
    );
    seen.private = false;
    let named = first_status(&seen, Reason::Synced);
    assert!(named.conditions[0].message.contains("team-c"));
}

fn contest(namespaces: &[&str], writers: &[&str]) -> Contest {
    Contest {
        namespaces: namespaces.iter().map(|s| s.to_string()).collect(),
        writers: writers.iter().map(|s| s.to_string()).collect(),
        yielded: false,
    }
}

fn condition<'a>(s: &'a MirrorStatus, type_: &str) -> Option<&'a Condition> {
    s.conditions.iter().find(|c| c.type_ == type_)
}

#[test]
fn a_private_status_counts_contested_copies_without_naming_where_or_who() {
    let mut seen = observed(5, 3, &[]);
    seen.contest = Some(contest(&["team-b", "team-c"], &["argocd-controller"]));
    seen.private = true;
    let s = first_status(&seen, Reason::Synced);
    assert_eq!((s.contested, ready(&s)), (2, ("False", "Contested")));
    for c in &s.conditions {
        for secret in ["team-b", "team-c", "argocd"] {
            assert!(!c.message.contains(secret), "{}: {}", c.type_, c.message);
        }
    }
    let c = condition(&s, "Contested").expect("a Contested condition");
    assert_mentions(&c.message, &["2 copies", "app-ca"]);
}

#[test]
fn contested_copies_make_ready_false_and_are_named_with_their_writers() {
    let mut seen = observed(5, 3, &[]);
    seen.contest = Some(contest(&["team-a", "team-b"], &["argocd-controller"]));
    let s = first_status(&seen, Reason::Synced);
    assert_eq!(ready(&s), ("False", "Contested"));
    assert_eq!(s.contested, 2);
    let c = condition(&s, "Contested").expect("a Contested condition");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "ChangedBack")
    );
    assert_mentions(
        &c.message,
        &[
            "team-a",
            "team-b",
            "reported as argocd-controller",
            "app-ca",
        ],
    );
}

#[test]
fn a_mirror_never_contested_has_no_contested_condition_and_one_contested_before_says_false() {
    let mut m = mirror();
    let mut seen = observed(2, 2, &[]);
    seen.contest = Some(Contest::default());
    let s = build(&m, &seen, Reason::Synced, "", "t1");
    assert_eq!((s.conditions.len(), ready(&s)), (1, ("True", "Synced")));
    let mut fight = observed(2, 1, &[]);
    fight.contest = Some(contest(&["team-a"], &["unknown"]));
    m.status = Some(build(&m, &fight, Reason::Synced, "", "t2"));
    let over = build(&m, &seen, Reason::Synced, "", "t3");
    let c = condition(&over, "Contested").expect("kept once contested");
    assert_eq!(
        (c.status.as_str(), c.last_transition_time.as_deref()),
        ("False", Some("t3"))
    );
    assert_eq!((over.contested, ready(&over)), (0, ("True", "Synced")));
}

#[test]
fn a_yielded_copy_is_reported_as_left_to_the_other_writer() {
    let mut seen = observed(2, 1, &[]);
    let mut yielded = contest(&["team-a"], &["argocd-controller"]);
    yielded.yielded = true;
    seen.contest = Some(yielded);
    let s = first_status(&seen, Reason::Synced);
    let c = condition(&s, "Contested").expect("a Contested condition");
    assert_mentions(
        &c.message,
        &["1 copy of", "team-a", "spec.conflicts: Yield"],
    );
    assert_eq!(ready(&s), ("False", "Contested"));
}

#[test]
fn a_progress_report_keeps_the_contest_the_status_shows() {
    let mut m = mirror();
    let mut fight = observed(2, 1, &[]);
    fight.contest = Some(contest(&["team-a"], &["fighter"]));
    m.status = Some(build(&m, &fight, Reason::Synced, "", "t1"));
    let progress = build(&m, &observed(2, 1, &[]), Reason::Progressing, "", "t2");
    assert_eq!(progress.contested, 1);
    assert_eq!(
        condition(&progress, "Contested"),
        condition(m.status.as_ref().unwrap(), "Contested")
    );
}

/// Every reason, the compiler checking none is left out.
macro_rules! every_reason {
    ($($reason:ident),* $(,)?) => {{
        fn _exhaustive(reason: Reason) {
            match reason {
                $(Reason::$reason)|* => {}
            }
        }
        [$(Reason::$reason),*]
    }};
}

#[test]
fn readme_names_every_ready_reason_in_its_status_section() {
    let reasons = every_reason![
        Synced,
        Progressing,
        SourceNotFound,
        Conflict,
        Contested,
        SourceNamespaceNotAllowed,
        SecretTargetsDisabled,
        SecretTargetNotAllowed,
        SourceNotAllowed,
        KindNotAllowed,
        SourceKeyMissing,
        RequiredKeyNotListed,
        KindNotEnabled,
        KeysNotApplicable,
        RoleNotBindable,
        BindingNotAllowed,
        NamespaceNotLabelled,
        NameReserved,
        ClustersPending,
        ClustersFailing,
        ClustersSilent,
        FleetNotEnabled,
        ProjectionNotSupported,
        KeysRequired,
        KeyNotPublishable,
        RenameCollides,
        OrphanNotAllowed,
        Error,
    ];
    let readme = include_str!("../../../README.md");
    let section = readme
        .split("\n### Status\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("README has a Status section");
    let missing: Vec<&str> = (reasons.iter().map(|r| r.as_str()))
        .filter(|r| !section.contains(&format!("`{r}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md's Status section does not name these Ready reasons: {missing:?}"
    );
}
