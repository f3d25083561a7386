//! Whose a Mirror is, decided once per reconcile: an admin's, or a tenant's offer, and so
//! where its copies go and what they are named.
//!
//! An admin's Mirror copies into every namespace it selects, under its target name. A tenant's
//! offer (with `--self-service`, a Mirror outside the admin's source namespaces in a namespace
//! the offer selector matches) copies only where an acceptance consents, under the names the
//! acceptances ask, at most its cap (see [`super::consent`]). The reconcile asks this value,
//! never the question again: the plan, the writes, the status, the Events and the acceptances'
//! statuses all read the one answer.

use super::announce::Naming;
use super::caches::{Caches, SourceScope};
use super::consent::{Consent, Offer, Seen};
use super::copy::Owner;
use super::copy_names::CopyNames;
use super::placed::PlacedStores;
use super::placement::FORMAT;
use super::status::{Reason, Refusal};
use super::types::Mirror;
use crate::runtime::ObjectKey;
use std::collections::BTreeSet;

pub struct Tenancy {
    /// For a tenant's offer: what its acceptances ask, and the namespaces it selects.
    pub offer: Option<Offer>,
    /// The namespaces the Mirror copies into.
    pub serves: BTreeSet<String>,
    /// Its copies' names.
    pub names: CopyNames,
    /// A hub's Mirror, placed for this member: it copies within the member's limits and
    /// reports on its Placement, never on a local object.
    pub placed: Option<PlacedStores>,
}

impl Tenancy {
    /// Whose `mirror` is: a tenant's offer when `consent` says its namespace offers and it is
    /// not an admin's source namespace (`scope`), an admin's otherwise.
    pub fn of(
        mirror: &Mirror,
        (scope, consent): (&SourceScope, Option<&Consent>),
        caches: &Caches,
    ) -> Tenancy {
        let selected = caches.selections.of(mirror);
        let names = CopyNames::new(mirror.spec.target_name());
        let placed = caches
            .placed
            .as_ref()
            .filter(|_| Owner::of(mirror).hub().is_some());
        if let Some(placed) = placed {
            return Tenancy {
                offer: None,
                serves: super::placed::eligible(placed, selected),
                names,
                placed: Some(placed.clone()),
            };
        }
        let namespace = mirror.metadata.namespace();
        let consent = consent.filter(|c| !scope.allows(namespace) && c.offers(namespace));
        let Some(consent) = consent else {
            return Tenancy {
                offer: None,
                serves: selected,
                names,
                placed: None,
            };
        };
        let owner = Owner::of(mirror);
        let local = consent.local_names(&owner, mirror);
        Tenancy {
            serves: consent.served(&owner, &local, &selected),
            names: local.names.clone(),
            offer: Some(Offer { local, selected }),
            placed: None,
        }
    }

    /// The offer as this reconcile saw it, for its acceptances' verdicts: `refused` says it
    /// may copy nothing. `None` for an admin's Mirror.
    pub fn seen<'a>(&'a self, mirror: &'a Mirror, refused: bool) -> Option<Seen<'a>> {
        Some(Seen {
            mirror,
            offer: self.offer.as_ref()?,
            serves: &self.serves,
            refused,
        })
    }

    pub fn is_offer(&self) -> bool {
        self.offer.is_some()
    }

    /// How its Events speak of where: a tenant's offer only counts namespaces, which are
    /// other tenants'; a hub's Mirror has no local object to post on (its Placement's status
    /// on the hub says it all).
    pub fn naming(&self) -> Naming {
        match self.placed {
            Some(_) => Naming::Silent,
            None => Naming::counting_if(self.is_offer()),
        }
    }

    /// Why a hub's Mirror may copy nothing here, beyond what any Mirror meets: a kind this
    /// member does not take from its hub, or a Placement format this build does not read.
    pub fn placed_refusal(&self, mirror: &Mirror) -> Option<Refusal> {
        let placed = self.placed.as_ref()?;
        let kind = mirror.spec.source.kind;
        if !placed.takes(kind) {
            let takes: Vec<String> = (placed.hub.kinds.iter())
                .map(|k| k.row().flag_name())
                .collect();
            return Some(Refusal {
                reason: Reason::KindNotAllowed,
                message: format!(
                    "this member takes only {} from hub {} (--hub-kinds), not a {}; nothing is \
                     copied. Its admin may add the kind to --hub-kinds",
                    takes.join(","),
                    placed.hub.name,
                    kind.as_str()
                ),
            });
        }
        let key = ObjectKey::from_meta(&mirror.metadata)?;
        let format = placed.get(&key)?.format;
        (format != FORMAT).then(|| Refusal {
            reason: Reason::SourceNotAllowed,
            message: format!(
                "its Placement is in format {format}, which this skiff does not read (it reads \
                 {FORMAT}); nothing is copied until the member's skiff is upgraded"
            ),
        })
    }
}
