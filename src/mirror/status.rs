//! The status a Mirror reports: counts, the source hash, a `Ready` condition and, once copies
//! were contested, a `Contested` one (`contested.rs`).
//!
//! Built from scratch on each reconcile and written only when it differs from what the
//! object already shows, so a steady state writes nothing.

mod contested;

use super::contest::Contest;
use super::types::{Condition, Mirror, MirrorStatus};

/// Why the Mirror is (not) Ready; the condition's `reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Synced,
    /// A fan-out is under way; the message counts the copies up to date so far.
    Progressing,
    SourceNotFound,
    Conflict,
    /// Another writer keeps changing copies back (see `contest`).
    Contested,
    SourceNamespaceNotAllowed,
    /// A Secret Mirror while `--secret-target-names` is empty.
    SecretTargetsDisabled,
    /// A Secret Mirror whose target name is not in `--secret-target-names`.
    SecretTargetNotAllowed,
    /// A source skiff never copies: a ServiceAccount token.
    SourceNotAllowed,
    /// A tenant's offer of a kind tenants may not share (see consent).
    KindNotAllowed,
    /// `spec.source.keys` lists a key the source does not hold.
    SourceKeyMissing,
    /// `spec.source.keys` leaves out a key the source Secret's type requires.
    RequiredKeyNotListed,
    /// A Mirror of a kit kind `--kinds` does not enable.
    KindNotEnabled,
    /// `spec.source.keys` on a kind copied whole.
    KeysNotApplicable,
    /// A RoleBinding whose role is not in `--bindable-roles`.
    RoleNotBindable,
    /// A RoleBinding the policy `skiff-rolebindings` would deny (see binding_guard).
    BindingNotAllowed,
    /// A copy name another controller keeps in every namespace (a kind's row reserves it).
    NameReserved,
    Error,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Synced => "Synced",
            Reason::Progressing => "Progressing",
            Reason::SourceNotFound => "SourceNotFound",
            Reason::Conflict => "Conflict",
            Reason::Contested => "Contested",
            Reason::SourceNamespaceNotAllowed => "SourceNamespaceNotAllowed",
            Reason::SecretTargetsDisabled => "SecretTargetsDisabled",
            Reason::SecretTargetNotAllowed => "SecretTargetNotAllowed",
            Reason::SourceNotAllowed => "SourceNotAllowed",
            Reason::KindNotAllowed => "KindNotAllowed",
            Reason::SourceKeyMissing => "SourceKeyMissing",
            Reason::RequiredKeyNotListed => "RequiredKeyNotListed",
            Reason::KindNotEnabled => "KindNotEnabled",
            Reason::KeysNotApplicable => "KeysNotApplicable",
            Reason::RoleNotBindable => "RoleNotBindable",
            Reason::BindingNotAllowed => "BindingNotAllowed",
            Reason::NameReserved => "NameReserved",
            Reason::Error => "Error",
        }
    }
}

/// Why a Mirror copies nothing (its Secret target names not allowed, its source not to be
/// copied as asked): the condition to report instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: Reason,
    pub message: String,
}

/// How many namespaces a condition or Event message names before it summarises.
const NAMED_NAMESPACES: usize = 10;

/// What one reconcile found.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub source_hash: Option<String>,
    pub selected: u32,
    pub synced: u32,
    pub conflicts: Vec<String>,
    /// Objects adopted and copies replaced by this reconcile (the status adds them up).
    pub adopted: u32,
    pub replaced: u32,
    /// The copies other writers keep changing back; `None`: not known to this write (a
    /// fan-out's progress), so the status keeps what it shows.
    pub contest: Option<Contest>,
    /// A tenant's offer: its conflicts are counted, never named (each is in a namespace of
    /// another tenant, who sees it on its own acceptance).
    pub private: bool,
}

/// The status to show for `mirror` after a reconcile that ended in `reason`.
///
/// `message` is used for every reason but `Synced`/`Conflict`, whose messages are derived.
/// The condition's `lastTransitionTime` moves to `now` only when its status changes.
pub fn build(
    mirror: &Mirror,
    observed: &Observed,
    reason: Reason,
    message: &str,
    now: &str,
) -> MirrorStatus {
    let contest = contested::current(mirror, observed);
    let reason = match reason {
        Reason::Synced if !observed.conflicts.is_empty() => Reason::Conflict,
        Reason::Synced if contest.count() > 0 => Reason::Contested,
        other => other,
    };
    let ready = reason == Reason::Synced && observed.synced == observed.selected;
    let message = match reason {
        Reason::Synced => format!(
            "{} of {} selected namespaces hold an up-to-date copy",
            observed.synced, observed.selected
        ),
        Reason::Conflict if observed.private => format!(
            "{} of the namespaces that accepted hold an object of the copy's name there ({}, or the name their acceptance gives it) that this Mirror does not manage; it is left untouched, and their acceptances say so",
            observed.conflicts.len(),
            mirror.spec.target_name()
        ),
        Reason::Conflict => conflict_message(mirror, &observed.conflicts),
        Reason::Contested => format!(
            "{} of {} selected namespaces hold an up-to-date copy; {} contested (see the Contested condition)",
            observed.synced,
            observed.selected,
            contest.count()
        ),
        Reason::Progressing => format!(
            "{} of {} copies up to date",
            grouped(observed.synced),
            grouped(observed.selected)
        ),
        _ => message.to_owned(),
    };
    let status = if ready { "True" } else { "False" };
    let (adopted, replaced) = mirror
        .status
        .as_ref()
        .map_or((0, 0), |s| (s.adopted, s.replaced));
    MirrorStatus {
        observed_generation: mirror.metadata.generation,
        source_hash: observed.source_hash.clone(),
        selected: observed.selected,
        synced: observed.synced,
        conflicts: observed.conflicts.len() as u32,
        adopted: adopted.saturating_add(observed.adopted),
        replaced: replaced.saturating_add(observed.replaced),
        contested: contest.count(),
        conditions: [
            Some(condition(
                mirror,
                "Ready",
                status,
                reason.as_str(),
                message,
                now,
            )),
            contest.condition(mirror, observed.private, now),
        ]
        .into_iter()
        .flatten()
        .collect(),
    }
}

/// The condition `type_` of `mirror`, whose `lastTransitionTime` moves to `now` only when its
/// status changes.
fn condition(
    mirror: &Mirror,
    type_: &str,
    status: &str,
    reason: &str,
    message: String,
    now: &str,
) -> Condition {
    let previous = mirror
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_));
    let last_transition_time = match previous {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => Some(now.to_owned()),
    };
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message,
        last_transition_time,
        observed_generation: mirror.metadata.generation,
    }
}

/// Whether `mirror`'s status already reports exactly `conflicts` (sorted), as written by an
/// earlier run: those conflicts were announced then, so a restart need not announce them again.
pub fn already_reports(mirror: &Mirror, conflicts: &[String]) -> bool {
    let Some(status) = &mirror.status else {
        return false;
    };
    !conflicts.is_empty()
        && status.conflicts as usize == conflicts.len()
        && status.conditions.iter().any(|c| {
            c.type_ == "Ready"
                && c.reason == Reason::Conflict.as_str()
                && c.message == conflict_message(mirror, conflicts)
        })
}

/// `1234567` as `1,234,567`.
fn grouped(n: u32) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn conflict_message(mirror: &Mirror, namespaces: &[String]) -> String {
    format!(
        "{} {} named {} exists that this Mirror does not manage, left untouched in: {}",
        namespaces.len(),
        mirror.spec.source.kind.as_str(),
        mirror.spec.target_name(),
        name_some(namespaces)
    )
}

/// The first few of `namespaces`, then how many more: `a, b, c and 5 more`.
pub fn name_some(namespaces: &[String]) -> String {
    let mut named = namespaces
        .iter()
        .take(NAMED_NAMESPACES)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if namespaces.len() > NAMED_NAMESPACES {
        named.push_str(&format!(
            " and {} more",
            namespaces.len() - NAMED_NAMESPACES
        ));
    }
    named
}

#[cfg(test)]
mod tests {
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
}
