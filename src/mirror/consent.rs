//! Self-service: tenant Mirrors, which copy only where both ends consent.
//!
//! With `--self-service`, a Mirror outside `--source-namespaces` is a tenant's *offer* when its
//! namespace matches `--offer-namespace-selector`. It goes through the same reconcile as any
//! Mirror, with three differences, all decided here:
//! - it copies only into the namespaces it selects that also hold a [`MirrorAcceptance`]
//!   naming it, the first `--max-copies-per-tenant-mirror` of them by name;
//! - it shares ConfigMaps only, read from the ConfigMaps labelled `skiff.dev/offered=true` that
//!   are not skiff's copies (so copies cannot chain), and gets no finalizer (its copies are
//!   deleted when skiff sees it gone, so a tenant namespace never waits for skiff to delete);
//! - each acceptance of it gets a `Served` condition whose reason is one of [`Verdict`]'s.
//!   "Not offered to you" and "no such Mirror or source" read the same, so an acceptance
//!   cannot probe another namespace's objects; no message names anything the acceptance's
//!   own spec does not.

use super::acceptance::{MirrorAcceptance, SERVED, Verdict, acceptances_of, accepting};
use super::caches::Caches;
use super::copy::{CopyInfo, Owner};
use super::namespace::NamespaceInfo;
use super::namespace_selector::matches;
use super::offers::SelfService;
use super::status::{Reason, Refusal};
use super::types::{Mirror, SourceKind};
use crate::kube::{Client, Error};
use crate::runtime::ObjectKey;
use serde_json::json;
use std::collections::BTreeSet;

/// Why a tenant's offer `mirror` may copy nothing: it shares a kind other than ConfigMap.
pub fn kind_refusal(mirror: &Mirror) -> Option<Refusal> {
    let kind = mirror.spec.source.kind;
    (kind != SourceKind::ConfigMap).then(|| Refusal {
        reason: Reason::KindNotAllowed,
        message: format!(
            "a Mirror outside the admin's source namespaces may share ConfigMaps only, not a {}",
            kind.as_str()
        ),
    })
}

/// What the acceptance of `from` is told with `verdict`; `copy` is the copy's name.
fn message(verdict: Verdict, from: &Owner, copy: &str) -> String {
    let (ns, name) = (&from.namespace, &from.name);
    match verdict {
        Verdict::Served => format!("ConfigMap {copy} here is a copy offered by {ns}/{name}"),
        Verdict::NotAvailable => {
            format!("nothing is offered to this namespace as Mirror {ns}/{name}")
        }
        Verdict::Conflict => format!(
            "an object named {copy} that is not skiff's is in this namespace; it is left alone (delete or rename it to receive the copy)"
        ),
        Verdict::KindNotAllowed => {
            format!("Mirror {ns}/{name} shares a kind tenants may not share (ConfigMaps only)")
        }
        Verdict::Pending => format!(
            "offered and accepted; the copy {copy} is not written yet (the offer may be at its cap of copies)"
        ),
    }
}

/// The consent checks and acceptance statuses of one controller.
pub struct Consent {
    pub settings: SelfService,
    caches: Caches,
    client: Client,
}

impl Consent {
    pub fn new(settings: SelfService, caches: Caches, client: Client) -> Consent {
        Consent {
            settings,
            caches,
            client,
        }
    }

    /// Whether a Mirror in `namespace` is an offer: the namespace matches the offer selector.
    pub fn offers(&self, namespace: &str) -> bool {
        self.caches
            .namespaces
            .get("", namespace)
            .is_some_and(|entry| {
                let ns = NamespaceInfo::view(namespace, &entry);
                matches(&self.settings.offer_selector, |k| ns.label(k))
            })
    }

    /// The namespaces a tenant Mirror copies into: those it selects that accept it, at most
    /// `max_copies`. Namespaces already holding its copy keep their place, the rest are
    /// filled by name, so a newcomer never displaces a copy that is served.
    pub fn served(&self, owner: &Owner, selected: &BTreeSet<String>) -> BTreeSet<String> {
        let acceptances = self.caches.acceptances.as_ref();
        let accepting = acceptances.map(|a| accepting(a, owner)).unwrap_or_default();
        let wanted: BTreeSet<&String> = accepting.intersection(selected).collect();
        let max = self.settings.max_copies;
        let held = self
            .caches
            .copies_of(owner)
            .into_iter()
            .map(|c| c.namespace);
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

    /// What the acceptance in `ns` of the Mirror `owner` is told. `mirror` is the offer as the
    /// reconcile saw it (`None`: gone or not an offer); `copy` reads a copy as this replica's
    /// own writes left it; `blocked` are the namespaces known to hold an object of the copy's
    /// name that skiff does not manage.
    pub fn verdict(
        &self,
        owner: &Owner,
        mirror: Option<&Mirror>,
        ns: &str,
        copy: &impl Fn(SourceKind, &str, &str) -> Option<CopyInfo>,
        blocked: &BTreeSet<String>,
    ) -> Verdict {
        let Some(mirror) = mirror.filter(|m| m.metadata.deletion_timestamp.is_none()) else {
            return Verdict::NotAvailable;
        };
        let selected = self.caches.selections.of(mirror);
        if !selected.contains(ns) {
            return Verdict::NotAvailable;
        }
        let source = &mirror.spec.source;
        if source.kind != SourceKind::ConfigMap {
            return Verdict::KindNotAllowed;
        }
        let namespace = mirror.metadata.namespace();
        if self
            .caches
            .source(source.kind, namespace, &source.name)
            .is_none()
        {
            return Verdict::NotAvailable;
        }
        if !self.served(owner, &selected).contains(ns) {
            return Verdict::Pending;
        }
        match copy(source.kind, ns, mirror.spec.target_name()) {
            Some(c) if c.owner.as_ref() == Some(owner) => Verdict::Served,
            Some(_) => Verdict::Conflict,
            None if blocked.contains(ns) => Verdict::Conflict,
            None => Verdict::Pending,
        }
    }

    /// Writes the `Served` condition of every acceptance of `owner` whose verdict changed.
    pub async fn report(
        &self,
        owner: &Owner,
        verdict: impl Fn(&str) -> Verdict,
        copy_name: &str,
    ) -> Result<(), Error> {
        let Some(acceptances) = self.caches.acceptances.as_ref() else {
            return Ok(());
        };
        for (key, accepted) in acceptances_of(acceptances, owner) {
            let v = verdict(&key.namespace);
            let shown = accepted.shown.as_ref();
            if shown == Some(&(v, accepted.generation)) {
                continue;
            }
            self.write(&key, owner, accepted.generation, v, copy_name)
                .await?;
        }
        Ok(())
    }

    async fn write(
        &self,
        key: &ObjectKey,
        from: &Owner,
        generation: i64,
        verdict: Verdict,
        copy_name: &str,
    ) -> Result<(), Error> {
        let status = if verdict == Verdict::Served {
            "True"
        } else {
            "False"
        };
        let patch = json!({"status": {"conditions": [{
            "type": SERVED,
            "status": status,
            "reason": verdict.as_str(),
            "message": message(verdict, from, copy_name),
            "lastTransitionTime": crate::time::now_seconds(),
            "observedGeneration": generation,
        }]}});
        let written = self
            .client
            .patch_status::<MirrorAcceptance>(Some(&key.namespace), &key.name, &patch)
            .await;
        match written {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests;
