//! The Events a reconcile posts on its Mirror: objects adopted, copies replaced and copies
//! orphaned (Normal, and logged), conflicts found and copies contested (Warning); on a hub,
//! member clusters turning silent or failing (Warning) and well again (Normal), named.
//!
//! One Event per reconcile and reason, naming the namespaces concerned, rather than one per
//! namespace: a fan-out to thousands of namespaces must not post thousands of Events. A tenant's
//! offer gets the same Events with the namespaces counted, not named, and no writer named: those
//! are other tenants' namespaces and managers, and each tenant hears of its own on its acceptance.

use super::cluster_troubles::{News, SILENT};
use super::contest::Contest;
use super::status::name_some;
use super::types::Mirror;
use crate::kube::events::{Recorder, reference_to};
use std::collections::BTreeMap;

/// How a Mirror's Events speak of where: an admin's Mirror names namespaces and writers; a
/// tenant's offer only counts the namespaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    Names,
    Counts,
    /// No Event: a hub's Mirror has no local object to post on.
    Silent,
}

impl Naming {
    /// Counts for a tenant's offer, names otherwise.
    pub fn counting_if(tenant_offer: bool) -> Naming {
        if tenant_offer {
            Naming::Counts
        } else {
            Naming::Names
        }
    }

    /// `namespaces` as this naming speaks of them: `a, b and 3 more`, or `2 accepting namespaces`.
    fn places(self, namespaces: &[String]) -> String {
        match (self, namespaces.len()) {
            (Naming::Names, _) => name_some(namespaces),
            (Naming::Counts, 1) => "1 accepting namespace".to_owned(),
            (Naming::Counts, n) => format!("{n} accepting namespaces"),
            (Naming::Silent, _) => String::new(),
        }
    }
}

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
    pub async fn conflicts(&self, mirror: &Mirror, namespaces: &[String], naming: Naming) {
        if namespaces.is_empty() || naming == Naming::Silent {
            return;
        }
        let message = format!(
            "{} exists in {} and is not managed by this Mirror; it is left untouched",
            the_copy(mirror),
            naming.places(namespaces)
        );
        self.recorder
            .warning(reference_to(mirror), "Conflict", &message)
            .await;
    }

    /// One Warning Event (and a log line) naming where copies are contested and by whom; the
    /// caller rate-limits it.
    pub async fn contested(&self, mirror: &Mirror, contest: &Contest, naming: Naming) {
        let writers = match naming {
            Naming::Names => format!(", reported as {},", contest.writers.join(", ")),
            Naming::Counts => String::new(),
            Naming::Silent => return,
        };
        let message = format!(
            "{} is changed back after each restoration by another writer{writers} in {}; \
             skiff now restores it with backoff",
            the_copy(mirror),
            naming.places(&contest.namespaces)
        );
        self.warn(mirror, "Contested", &message).await;
    }

    /// One Normal Event naming the namespaces where this reconcile adopted an object.
    pub async fn adopted(&self, mirror: &Mirror, namespaces: &[String], naming: Naming) {
        if namespaces.is_empty() || naming == Naming::Silent {
            return;
        }
        let message = format!(
            "{} in {} was handed to this Mirror (skiff.dev/adopt) and is now its copy",
            the_copy(mirror),
            naming.places(namespaces)
        );
        self.tell(mirror, "Adopted", &message).await;
    }

    /// One Normal Event per reason this reconcile replaced copies for, naming where.
    pub async fn replaced(&self, mirror: &Mirror, replaced: &[(String, String)], naming: Naming) {
        if naming == Naming::Silent {
            return;
        }
        let mut by_reason: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (namespace, reason) in replaced {
            by_reason.entry(reason).or_default().push(namespace.clone());
        }
        for (reason, namespaces) in by_reason {
            let message = format!(
                "{} was deleted and created again in {}: {reason}",
                the_copy(mirror),
                naming.places(&namespaces)
            );
            self.tell(mirror, "Replaced", &message).await;
        }
    }

    /// On a hub: a Warning naming the member clusters of a fleet Mirror that turned silent or
    /// failing, and a Normal Event naming those well again.
    pub async fn clusters(&self, mirror: &Mirror, news: &News) {
        let (silent, failing): (Vec<_>, Vec<_>) =
            (news.troubled.iter()).partition(|(_, trouble)| trouble == SILENT);
        if !silent.is_empty() {
            let clusters: Vec<String> = silent.into_iter().map(|(c, _)| c.clone()).collect();
            let message = format!(
                "no heartbeat lately from {}: counted silent; its copies stay as they are",
                name_some(&clusters)
            );
            self.warn(mirror, "ClustersSilent", &message).await;
        }
        if !failing.is_empty() {
            let clusters: Vec<String> = (failing.into_iter())
                .map(|(cluster, reason)| format!("{cluster} ({reason})"))
                .collect();
            let message = format!("{} report failures", name_some(&clusters));
            self.warn(mirror, "ClustersFailing", &message).await;
        }
        if !news.back.is_empty() {
            let message = format!("{} heard from and well again", name_some(&news.back));
            self.tell(mirror, "ClustersBack", &message).await;
        }
    }

    /// Logs `message` and records it as a Warning Event on `mirror`.
    async fn warn(&self, mirror: &Mirror, reason: &str, message: &str) {
        log::warn!(
            "Mirror {}/{}: {message}",
            mirror.metadata.namespace(),
            mirror.metadata.name()
        );
        self.recorder
            .warning(reference_to(mirror), reason, message)
            .await;
    }

    /// One Normal Event counting the copies a deleted Mirror left in place without skiff's
    /// marks (`spec.deletionPolicy: Orphan`).
    pub async fn orphaned(&self, mirror: &Mirror, count: u32, naming: Naming) {
        if count == 0 {
            return;
        }
        let copies = match count {
            1 => "1 copy".to_owned(),
            n => format!("{n} copies"),
        };
        let where_ = match naming {
            Naming::Names => "",
            Naming::Counts => " in accepting namespaces",
            Naming::Silent => return,
        };
        let message = format!(
            "{copies} of {}{where_} left in place without skiff's labels and annotations \
             (spec.deletionPolicy: Orphan): they keep their content, and skiff no longer \
             updates or deletes them",
            the_copy(mirror)
        );
        self.tell(mirror, "Orphaned", &message).await;
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
        mirror.spec.copy_kind().as_str(),
        mirror.spec.target_name()
    )
}

#[cfg(test)]
mod tests {
    use super::Naming;

    #[test]
    fn a_tenant_offer_counts_namespaces_and_an_admin_mirror_names_them() {
        let namespaces = ["team-b".to_owned(), "team-c".to_owned()];
        let counted = Naming::counting_if(true).places(&namespaces);
        assert_eq!(counted, "2 accepting namespaces");
        assert_eq!(
            Naming::Counts.places(&namespaces[..1]),
            "1 accepting namespace"
        );
        assert_eq!(
            Naming::counting_if(false).places(&namespaces),
            "team-b, team-c"
        );
    }
}
