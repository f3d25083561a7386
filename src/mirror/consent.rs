//! Self-service: tenant Mirrors, which copy only where both ends consent.
//!
//! With `--self-service`, a Mirror outside `--source-namespaces` is a tenant's *offer* when its
//! namespace matches `--offer-namespace-selector`. It goes through the same reconcile as any
//! Mirror, with three differences, all decided here:
//! - it copies only into the namespaces it selects that also hold a [`MirrorAcceptance`]
//!   naming it, the first `--max-copies-per-tenant-mirror` of them by name;
//! - it shares only the kinds `--self-service-kinds` names (ConfigMaps by default; Secrets
//!   only under `--secret-target-names`, source and copy alike), read from the sources
//!   labelled `skiff.dev/offered=true` that are not skiff's copies (so copies cannot chain,
//!   see [`super::tenant_sources`]), and gets no finalizer (its copies are deleted when skiff
//!   sees it gone, so a tenant namespace never waits for skiff to delete);
//! - it publishes a Secret's certificates as a ConfigMap only when the admin names that
//!   projection (`--self-service-projections`), and its copies outlive it (`deletionPolicy:
//!   Orphan`, which gives it a finalizer) only under `--self-service-orphan`;
//! - each acceptance of it (of its copies' kind) gets a `Served` condition whose reason is one
//!   of [`Verdict`]'s, and an Event when that reason changes (Normal when served, Warning
//!   when not, none while pending).
//!   "Not offered to you" and "no such Mirror or source" read the same, so an acceptance
//!   cannot probe another namespace's objects; no message names anything the acceptance's
//!   own spec does not.

use super::acceptance::local_names::{LocalNames, NameRefused, local_names};
use super::acceptance::{Accepted, MirrorAcceptance, SERVED, Verdict};
use super::caches::Caches;
use super::copy::{CopyInfo, Owner};
use super::kind_checks::KindChecks;
use super::namespace::NamespaceInfo;
use super::own_writes::{OwnWrites, Versioned as _};
use super::secret_targets::SecretTargets;
use super::status::{Reason, Refusal};
use super::types::{DeletionPolicy, Mirror, SourceKind};
use crate::flags::SelfService;
use crate::kind::NameRule;
use crate::kube::events::{Recorder, reference_to};
use crate::kube::{Client, Error};
use crate::runtime::ObjectKey;
use serde_json::json;
use std::collections::BTreeSet;

/// What the acceptance of `from` is told with `verdict`; `copy` is the copy's kind and name
/// there, `refused` why its name was refused, if it was.
fn message(
    verdict: Verdict,
    from: &Owner,
    (kind, copy): (SourceKind, &str),
    refused: Option<&NameRefused>,
) -> String {
    let (ns, name, kind) = (&from.namespace, &from.name, kind.as_str());
    match (verdict, refused) {
        (Verdict::Served, _) => format!("{kind} {copy} here is a copy offered by {ns}/{name}"),
        (Verdict::NotAvailable, _) => {
            format!("no {kind} is offered to this namespace as Mirror {ns}/{name}")
        }
        (Verdict::Conflict, Some(NameRefused::Taken { by, name })) => format!(
            "the acceptance {by} here already receives this offer as {kind} {name}; one namespace holds one copy of an offer, so this one is not served (accept under the same targetName, or delete one of them)"
        ),
        (Verdict::Conflict, Some(NameRefused::Reserved(why))) => format!(
            "{kind} {copy} is kept by another controller in every namespace ({why}); skiff never takes it, so this acceptance is not served (set spec.targetName to another name)"
        ),
        (Verdict::Conflict, _) => format!(
            "an object named {copy} that is not skiff's is in this namespace; it is left alone (delete or rename it, or set spec.targetName, to receive the copy)"
        ),
        (Verdict::KindNotAllowed, Some(NameRefused::SecretName)) => format!(
            "a Secret may be copied only under a name in --secret-target-names; spec.targetName {copy} is not one, so nothing is read or written for this acceptance"
        ),
        (Verdict::KindNotAllowed, _) => format!(
            "Mirror {ns}/{name} shares a kind, or a Secret name, tenants may not share; nothing is copied"
        ),
        (Verdict::Pending, _) => format!(
            "offered and accepted; the copy {copy} is not written yet (the offer may be at its cap of copies)"
        ),
    }
}

/// A tenant's offer, as its acceptances see it: what they ask, and where it is selected.
pub struct Offer {
    pub local: LocalNames,
    pub selected: BTreeSet<String>,
}

/// An offer as a reconcile saw it.
#[derive(Clone, Copy)]
pub struct Seen<'a> {
    pub mirror: &'a Mirror,
    pub offer: &'a Offer,
    /// The namespaces it copies into.
    pub serves: &'a BTreeSet<String>,
    /// It may copy nothing ([`Consent::refusal`]).
    pub refused: bool,
}

/// The consent checks and acceptance statuses of one controller.
pub struct Consent {
    pub settings: SelfService,
    secret_targets: SecretTargets,
    caches: Caches,
    client: Client,
    recorder: Recorder,
    /// The statuses this replica wrote that the acceptance cache may not show yet: read
    /// through it, a reconcile running before the watch delivered them neither writes the
    /// same status again nor posts its Event twice.
    told: OwnWrites<ObjectKey, Accepted>,
}

impl Consent {
    pub fn new(
        settings: SelfService,
        secret_targets: SecretTargets,
        caches: Caches,
        (client, recorder): (Client, Recorder),
    ) -> Consent {
        Consent {
            settings,
            secret_targets,
            caches,
            client,
            recorder,
            told: OwnWrites::default(),
        }
    }

    /// Why the tenant's offer `mirror` may copy nothing: it shares a kind not in
    /// `--self-service-kinds` or publishes one as another not in `--self-service-projections`,
    /// reads a Secret whose name is not in `--secret-target-names` (the only Secrets skiff may
    /// read outside the admin's source namespaces), or asks its copies to outlive it while
    /// `--self-service-orphan` is off. Then the Secret target name, the kinds' own checks, as
    /// for any Mirror.
    pub fn refusal(&self, mirror: &Mirror, kinds: &KindChecks) -> Option<Refusal> {
        let source = &mirror.spec.source;
        let copy = mirror.spec.copy_kind();
        if !self.settings.shares_as(source.kind, copy) {
            let what = match copy == source.kind {
                true => source.kind.as_str().to_owned(),
                false => format!("{} published as a {}", source.kind.as_str(), copy.as_str()),
            };
            return Some(Refusal {
                reason: Reason::KindNotAllowed,
                message: format!(
                    "a Mirror outside the admin's source namespaces may share only {} \
                     (--self-service-kinds) and publish only {} (--self-service-projections), \
                     not a {what}; nothing is read or copied",
                    self.settings.kinds_flag(),
                    self.settings.projections_flag(),
                ),
            });
        }
        if mirror.spec.deletion_policy() == DeletionPolicy::Orphan && !self.settings.orphan {
            return Some(Refusal {
                reason: Reason::OrphanNotAllowed,
                message: "spec.deletionPolicy Orphan would leave this offer's copies, unlabelled, \
                          in other tenants' namespaces once it is deleted, and the admin does not \
                          allow it (--self-service-orphan); nothing is copied. Remove \
                          spec.deletionPolicy, or ask the admin"
                    .to_owned(),
            });
        }
        let names = &self.secret_targets;
        let by_name = source.kind.row().names == NameRule::SecretTargetNames;
        if by_name && !names.names().any(|n| n == source.name) {
            let listed: Vec<&str> = names.names().collect();
            return Some(Refusal {
                reason: Reason::SecretTargetNotAllowed,
                message: format!(
                    "a tenant's {kind} source must itself carry one of the names in \
                     --secret-target-names ({}), the only {kind}s skiff may read outside the \
                     admin's source namespaces; {} is not one, so nothing is read or copied. \
                     Rename the {kind}",
                    listed.join(","),
                    source.name,
                    kind = source.kind.as_str(),
                ),
            });
        }
        names.refusal(mirror).or_else(|| kinds.refusal(mirror))
    }

    /// Whether a Mirror in `namespace` is an offer: the namespace matches the offer selector.
    pub fn offers(&self, namespace: &str) -> bool {
        self.caches
            .namespaces
            .get("", namespace)
            .is_some_and(|entry| {
                let ns = NamespaceInfo::view(namespace, &entry);
                self.settings.offer_selector.matches(|k| ns.label(k))
            })
    }

    /// What the acceptances of the offer `mirror` ask: the names of its copies, and which
    /// acceptances may be served under them ([`local_names`]).
    pub fn local_names(&self, owner: &Owner, mirror: &Mirror) -> LocalNames {
        let acceptances = self.caches.acceptances.as_ref();
        let of = acceptances.map(|a| a.of(owner)).unwrap_or_default();
        let asked = (mirror.spec.copy_kind(), mirror.spec.target_name());
        local_names(of, asked, |name| {
            self.secret_targets.names().any(|n| n == name)
        })
    }

    /// The namespaces a tenant Mirror copies into: those it selects that accept it (`local`,
    /// [`Consent::local_names`]), at most `max_copies`. Namespaces already holding its copy
    /// keep their place, the rest are filled by name, so a newcomer never displaces a copy
    /// that is served.
    pub fn served(
        &self,
        owner: &Owner,
        local: &LocalNames,
        selected: &BTreeSet<String>,
    ) -> BTreeSet<String> {
        let wanted: BTreeSet<&String> = local.accepting.intersection(selected).collect();
        let max = self.settings.max_copies;
        let held = self
            .caches
            .copies_of(owner)
            .into_iter()
            .map(|(key, _)| String::from(key.namespace));
        let mut served: BTreeSet<String> =
            held.filter(|ns| wanted.contains(ns)).take(max).collect();
        for ns in wanted {
            if served.len() >= max {
                break;
            }
            served.insert(ns.clone());
        }
        served
    }

    /// What the acceptance `key` of `kind` is told of the offer `seen` (`None`: gone, or not
    /// an offer). `copy` reads a copy as this replica's own writes left it; `blocked` are the
    /// namespaces known to hold an object of the copy's name that skiff does not manage.
    pub fn verdict(
        &self,
        seen: Option<Seen>,
        (key, kind): (&ObjectKey, SourceKind),
        copy: &impl Fn(SourceKind, &str, &str) -> Option<CopyInfo>,
        blocked: &BTreeSet<String>,
    ) -> Verdict {
        let live = seen.filter(|s| s.mirror.metadata.deletion_timestamp.is_none());
        let Some(Seen {
            mirror,
            offer,
            serves,
            refused,
        }) = live
        else {
            return Verdict::NotAvailable;
        };
        let (source, ns) = (&mirror.spec.source, &*key.namespace);
        if !offer.selected.contains(ns) || mirror.spec.copy_kind() != kind {
            return Verdict::NotAvailable;
        }
        if refused {
            return Verdict::KindNotAllowed;
        }
        let namespace = mirror.metadata.namespace();
        if (self.caches.source(source.kind, namespace, &source.name)).is_none() {
            return Verdict::NotAvailable;
        }
        if let Some(refused) = offer.local.refused.get(key) {
            return refused.verdict();
        }
        if !serves.contains(ns) {
            return Verdict::Pending;
        }
        let owner = Owner::of(mirror);
        match copy(kind, ns, offer.local.names.of(ns)) {
            Some(c) if c.owner.as_deref() == Some(&owner) => Verdict::Served,
            Some(_) => Verdict::Conflict,
            None if blocked.contains(ns) => Verdict::Conflict,
            None => Verdict::Pending,
        }
    }

    /// Writes the `Served` condition of every acceptance of `owner` whose verdict changed, and
    /// posts an Event on it when its reason did. `local` names the copies.
    pub async fn report(
        &self,
        owner: &Owner,
        verdict: impl Fn(&ObjectKey, SourceKind) -> Verdict,
        local: &LocalNames,
    ) -> Result<(), Error> {
        let Some(acceptances) = self.caches.acceptances.as_ref() else {
            return Ok(());
        };
        for (key, cached) in acceptances.of(owner) {
            let Some(accepted) = self.told.resolve(&key, Some(cached)) else {
                continue;
            };
            let v = verdict(&key, accepted.kind);
            if accepted.shows(v) {
                continue;
            }
            let asked = accepted.target_name();
            let copy = asked.unwrap_or_else(|| local.names.of(&key.namespace));
            let refused = local.refused.get(&key);
            let message = message(v, owner, (accepted.kind, copy), refused);
            let changed = accepted.changes_reason(v);
            let written = self.write(&key, (accepted.generation, v), &message).await?;
            let Some(acceptance) = written else {
                continue;
            };
            let replaced = accepted.version().to_string();
            let ours = acceptances.project(&acceptance);
            self.told.record(key, Some(&replaced), Some(ours));
            if changed {
                announce(&self.recorder, &acceptance, v, &message).await;
            }
        }
        Ok(())
    }

    /// The acceptance as written, `None` when it is gone.
    async fn write(
        &self,
        key: &ObjectKey,
        (generation, verdict): (i64, Verdict),
        message: &str,
    ) -> Result<Option<MirrorAcceptance>, Error> {
        let status = if verdict == Verdict::Served {
            "True"
        } else {
            "False"
        };
        let patch = json!({"status": {"conditions": [{
            "type": SERVED,
            "status": status,
            "reason": verdict.as_str(),
            "message": message,
            "lastTransitionTime": crate::time::now_seconds(),
            "observedGeneration": generation,
        }]}});
        let written = self
            .client
            .patch_status::<MirrorAcceptance>(Some(&key.namespace), &key.name, &patch)
            .await;
        match written {
            Ok(acceptance) => Ok(Some(acceptance)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The Event of a new verdict on `acceptance`, saying what its condition says (so it names
/// only what the acceptance names). Pending is passing and gets none.
async fn announce(recorder: &Recorder, acceptance: &MirrorAcceptance, v: Verdict, message: &str) {
    let regarding = reference_to(acceptance);
    match v {
        Verdict::Pending => {}
        Verdict::Served => recorder.normal(regarding, v.as_str(), message).await,
        _ => recorder.warning(regarding, v.as_str(), message).await,
    }
}

#[cfg(test)]
mod tests;
