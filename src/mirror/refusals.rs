//! Why a Mirror may copy nothing at all, decided before anything is read or written, by whose
//! it is ([`Tenancy`]): a tenant's offer meets consent's checks; a hub's Mirror placed here
//! meets this member's terms; an admin's Mirror, the source namespaces; a fleet Mirror needs a
//! hub. Then every Mirror meets the names RBAC grants one by one (`secret_targets`) and its
//! kind's row (`kind_checks`).

use super::caches::SourceScope;
use super::consent::Consent;
use super::kind_checks::KindChecks;
use super::secret_targets::SecretTargets;
use super::status::{Reason, Refusal};
use super::tenancy::Tenancy;
use super::types::Mirror;

/// The admin's limits on every Mirror.
pub struct Refusals {
    pub scope: SourceScope,
    pub secret_targets: SecretTargets,
    pub kinds: KindChecks,
    /// This skiff runs as a hub (`--fleet-hub`).
    pub hub: bool,
}

impl Refusals {
    /// Why `mirror`, whose `tenancy` it is, may copy nothing; `consent` is self-service's.
    pub fn of(
        &self,
        mirror: &Mirror,
        tenancy: &Tenancy,
        consent: Option<&Consent>,
    ) -> Option<Refusal> {
        if let Some(consent) = consent.filter(|_| tenancy.is_offer()) {
            return consent.refusal(mirror, &self.kinds);
        }
        if mirror.spec.is_fleet() && (!self.hub || tenancy.is_offer()) {
            return Some(fleet_not_enabled());
        }
        if tenancy.placed.is_some() {
            return (tenancy.placed_refusal(mirror)).or_else(|| self.any(mirror));
        }
        let namespace = mirror.metadata.namespace();
        if !self.scope.allows(namespace) {
            let message = format!(
                "sources may only be read from namespaces {} (--source-namespaces); nothing is copied from {}",
                self.scope.describe(),
                namespace
            );
            return Some(Refusal {
                reason: Reason::SourceNamespaceNotAllowed,
                message,
            });
        }
        self.any(mirror)
    }

    /// What every Mirror meets: the names RBAC grants, and its kind's row.
    fn any(&self, mirror: &Mirror) -> Option<Refusal> {
        (self.secret_targets.refusal(mirror)).or_else(|| self.kinds.refusal(mirror))
    }
}

fn fleet_not_enabled() -> Refusal {
    Refusal {
        reason: Reason::FleetNotEnabled,
        message: "spec.clusterSelector places copies in member clusters, which only a hub's own \
                  Mirrors do (a skiff run with --fleet-hub, in its source namespaces); nothing \
                  is copied. Remove spec.clusterSelector, or apply the Mirror on the hub"
            .to_owned(),
    }
}
