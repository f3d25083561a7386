//! The Events a reconcile posts on its Mirror: objects adopted and copies replaced (Normal, and
//! logged), conflicts found and copies contested (Warning).
//!
//! One Event per reconcile and reason, naming the namespaces concerned, rather than one per
//! namespace: a fan-out to thousands of namespaces must not post thousands of Events.

use super::contest::Contest;
use super::status::name_some;
use super::types::Mirror;
use crate::kube::events::{Recorder, reference_to};
use std::collections::BTreeMap;

/// Posts a reconcile's Events through the controller's recorder.
pub struct Announcer {
    recorder: Recorder,
}

impl Announcer {
    pub fn new(recorder: Recorder) -> Announcer {
        Announcer { recorder }
    }

    /// One Warning Event naming the namespaces where an object skiff does not manage holds the
    /// copy's name (those not announced before; none: no Event).
    pub async fn conflicts(&self, mirror: &Mirror, namespaces: &[String]) {
        if namespaces.is_empty() {
            return;
        }
        let message = format!(
            "{} exists in {} and is not managed by this Mirror; it is left untouched",
            the_copy(mirror),
            namespaces.join(", ")
        );
        self.recorder
            .warning(reference_to(mirror), "Conflict", &message)
            .await;
    }

    /// One Warning Event (and a log line) naming where copies are contested and by whom; the
    /// caller rate-limits it.
    pub async fn contested(&self, mirror: &Mirror, contest: &Contest) {
        let message = format!(
            "{} is changed back after each restoration by another writer, reported as {}, in {}; \
             skiff now restores it with backoff",
            the_copy(mirror),
            contest.writers.join(", "),
            name_some(&contest.namespaces)
        );
        log::warn!(
            "Mirror {}/{}: {message}",
            mirror.metadata.namespace(),
            mirror.metadata.name()
        );
        self.recorder
            .warning(reference_to(mirror), "Contested", &message)
            .await;
    }

    /// One Normal Event naming the namespaces where this reconcile adopted an object.
    pub async fn adopted(&self, mirror: &Mirror, namespaces: &[String]) {
        if namespaces.is_empty() {
            return;
        }
        let message = format!(
            "{} in {} was handed to this Mirror (skiff.dev/adopt) and is now its copy",
            the_copy(mirror),
            name_some(namespaces)
        );
        self.tell(mirror, "Adopted", &message).await;
    }

    /// One Normal Event per reason this reconcile replaced copies for, naming where.
    pub async fn replaced(&self, mirror: &Mirror, replaced: &[(String, String)]) {
        let mut by_reason: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (namespace, reason) in replaced {
            by_reason.entry(reason).or_default().push(namespace.clone());
        }
        for (reason, namespaces) in by_reason {
            let message = format!(
                "{} was deleted and created again in {}: {reason}",
                the_copy(mirror),
                name_some(&namespaces)
            );
            self.tell(mirror, "Replaced", &message).await;
        }
    }

    /// Logs `message` and records it as a Normal Event on `mirror`.
    async fn tell(&self, mirror: &Mirror, reason: &str, message: &str) {
        log::info!(
            "Mirror {}/{}: {message}",
            mirror.metadata.namespace(),
            mirror.metadata.name()
        );
        self.recorder
            .normal(reference_to(mirror), reason, message)
            .await;
    }
}

/// The kind and name of `mirror`'s copies, as messages name them: `ConfigMap app-ca`.
fn the_copy(mirror: &Mirror) -> String {
    format!(
        "{} {}",
        mirror.spec.source.kind.as_str(),
        mirror.spec.target_name()
    )
}
