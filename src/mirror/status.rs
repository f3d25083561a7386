//! The status a Mirror reports: counts, the source hash, a `Ready` condition and, once copies
//! were contested, a `Contested` one (`contested.rs`).
//!
//! Built from scratch on each reconcile and written only when it differs from what the
//! object already shows, so a steady state writes nothing.

mod contested;

use super::contest::Contest;
use super::types::{Clusters, Condition, Mirror, MirrorStatus};

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
    /// A kit kind's Mirror whose selector does not require `--binding-namespace-label`.
    NamespaceNotLabelled,
    /// A copy name another controller keeps in every namespace (a kind's row reserves it).
    NameReserved,
    /// A fleet Mirror whose member clusters have not all reported the current version.
    ClustersPending,
    /// A fleet Mirror some member cluster reported a refusal, conflict or contest for.
    ClustersFailing,
    /// A fleet Mirror some member cluster has not been heard from lately.
    ClustersSilent,
    /// A fleet Mirror (`spec.clusterSelector`) on a skiff that is no hub (`--fleet-hub`).
    FleetNotEnabled,
    /// `spec.target.kind` names a kind the source's row is not published as.
    ProjectionNotSupported,
    /// A projection without `spec.source.keys`: it publishes only what is named.
    KeysRequired,
    /// A listed key whose value a projection may not publish (not a certificate).
    KeyNotPublishable,
    /// `spec.source.rename` would give two keys of a copy one name.
    RenameCollides,
    /// A tenant's offer asks `deletionPolicy: Orphan`, which the admin does not allow.
    OrphanNotAllowed,
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
            Reason::NamespaceNotLabelled => "NamespaceNotLabelled",
            Reason::NameReserved => "NameReserved",
            Reason::ClustersPending => "ClustersPending",
            Reason::ClustersFailing => "ClustersFailing",
            Reason::ClustersSilent => "ClustersSilent",
            Reason::FleetNotEnabled => "FleetNotEnabled",
            Reason::ProjectionNotSupported => "ProjectionNotSupported",
            Reason::KeysRequired => "KeysRequired",
            Reason::KeyNotPublishable => "KeyNotPublishable",
            Reason::RenameCollides => "RenameCollides",
            Reason::OrphanNotAllowed => "OrphanNotAllowed",
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
    /// A fleet Mirror's member clusters, by what they reported.
    pub clusters: Option<Clusters>,
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
        Reason::Synced if observed.clusters.is_none() => format!(
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
        clusters: observed.clusters,
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
        mirror.spec.copy_kind().as_str(),
        mirror.spec.target_name(),
        name_some(namespaces)
    )
}

/// `a`, `a and b`, `a, b and c`.
pub fn and_list<S: AsRef<str>>(items: &[S]) -> String {
    match items {
        [] => String::new(),
        [one] => one.as_ref().to_owned(),
        [rest @ .., last] => {
            let rest: Vec<&str> = rest.iter().map(AsRef::as_ref).collect();
            format!("{} and {}", rest.join(", "), last.as_ref())
        }
    }
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
mod tests;
