//! The `Contested` condition: which copies other writers keep changing back, and who.
//!
//! Present from a Mirror's first contest on: `True` while copies are contested, `False` once
//! none is (so `kubectl wait --for=condition=Contested=false` can wait for the end of a
//! fight). A Mirror never contested has no such condition, so its status is as before.
//! The message holds no counter that moves with each restoration: a fight that goes on the
//! same way writes no status.

use super::{condition, name_some};
use crate::mirror::contest::{Contest, MAX_STEP};
use crate::mirror::types::{Condition, Mirror};

pub const TYPE: &str = "Contested";

/// The contest a status reports: what this reconcile found, or what the status shows.
pub(super) enum Current<'a> {
    Found(&'a Contest),
    Kept(&'a Mirror),
}

/// What the status built for `observed` reports of contests.
pub(super) fn current<'a>(mirror: &'a Mirror, observed: &'a super::Observed) -> Current<'a> {
    match &observed.contest {
        Some(contest) => Current::Found(contest),
        None => Current::Kept(mirror),
    }
}

fn shown(mirror: &Mirror) -> Option<&Condition> {
    let status = mirror.status.as_ref()?;
    status.conditions.iter().find(|c| c.type_ == TYPE)
}

impl Current<'_> {
    pub(super) fn count(&self) -> u32 {
        match self {
            Current::Found(contest) => contest.namespaces.len() as u32,
            Current::Kept(mirror) => mirror.status.as_ref().map_or(0, |s| s.contested),
        }
    }

    /// `private`: a tenant's offer, whose message counts the copies without naming where they
    /// are or who wrote them (those namespaces are other tenants').
    pub(super) fn condition(&self, mirror: &Mirror, private: bool, now: &str) -> Option<Condition> {
        let contest = match self {
            Current::Kept(_) => return shown(mirror).cloned(),
            Current::Found(contest) => contest,
        };
        if contest.namespaces.is_empty() {
            shown(mirror)?;
            let message = "no copy is contested".to_owned();
            return Some(condition(mirror, TYPE, "False", "NoContest", message, now));
        }
        let message = if private {
            private_message(mirror, contest)
        } else {
            message(mirror, contest)
        };
        Some(condition(mirror, TYPE, "True", "ChangedBack", message, now))
    }
}

fn message(mirror: &Mirror, contest: &Contest) -> String {
    let (kind, name) = (mirror.spec.copy_kind().as_str(), mirror.spec.target_name());
    if contest.yielded {
        return format!(
            "{} {kind} {name} changed back by another writer, reported as {}, in: {}; left as it \
             wrote it until the source changes (spec.conflicts: Yield)",
            copies(contest.namespaces.len()),
            contest.writers.join(", "),
            name_some(&contest.namespaces),
        );
    }
    let minutes = MAX_STEP.as_secs() / 60;
    format!(
        "{} {kind} {name} changed back after each restoration by another writer, reported as {}, in: {}; \
         skiff restores it with backoff, at most once every {minutes}-{} min: remove the other writer \
         or exclude the namespace",
        copies(contest.namespaces.len()),
        contest.writers.join(", "),
        name_some(&contest.namespaces),
        minutes * 2,
    )
}

fn private_message(mirror: &Mirror, contest: &Contest) -> String {
    let (kind, name) = (mirror.spec.copy_kind().as_str(), mirror.spec.target_name());
    let handling = if contest.yielded {
        "left as another writer wrote them until the source changes (spec.conflicts: Yield)"
    } else {
        "changed back by another writer after each restoration; skiff restores them with backoff"
    };
    format!(
        "{} {kind} {name} (or the name an acceptance gives it) in namespaces that accepted are {handling}; their namespaces' owners see which on their copies",
        copies(contest.namespaces.len())
    )
}

fn copies(n: usize) -> String {
    if n == 1 {
        "1 copy of".to_owned()
    } else {
        format!("{n} copies of")
    }
}
