//! Writes to the Mirror object itself: its status, and the finalizer that makes its deletion
//! wait until its copies are gone.
//!
//! A status equal to the one the Mirror shows is not written, so a steady state writes
//! nothing. Each write is recorded in [`MirrorWrites`] and the Mirror is read through it
//! ([`MirrorWriter::latest`]), so a status or finalizer is not written twice before the Mirror
//! cache catches up.

use super::copy::Owner;
use super::own_writes::MirrorWrites;
use super::placed::PlacedStores;
use super::status::{self, Observed, Reason};
use super::types::Mirror;
use crate::kube::{Client, Error};
use serde_json::json;

pub use super::types::FINALIZER;

/// Whether `mirror` carries skiff's finalizer.
pub fn has_finalizer(mirror: &Mirror) -> bool {
    mirror.metadata.finalizers.iter().any(|f| f == FINALIZER)
}

/// The Mirror writes of one replica, and what it wrote until the cache catches up.
pub struct MirrorWriter {
    client: Client,
    /// On a member: where the Mirrors its hub placed report (their Placements' status).
    placed: Option<PlacedStores>,
    written: MirrorWrites,
}

impl MirrorWriter {
    pub fn new(client: Client, placed: Option<PlacedStores>) -> MirrorWriter {
        MirrorWriter {
            client,
            placed,
            written: MirrorWrites::default(),
        }
    }

    /// The hub's stores, when `mirror` is one a hub placed.
    fn placed_of(&self, mirror: &Mirror) -> Option<&PlacedStores> {
        self.placed
            .as_ref()
            .filter(|_| Owner::of(mirror).hub().is_some())
    }

    /// The Mirror as this replica last wrote it, or as cached when the cache has caught up;
    /// `cached` must come from the Mirror cache (it tells whether the cache caught up).
    pub fn latest(&self, owner: &Owner, cached: Mirror) -> Mirror {
        self.written
            .resolve(owner, Some(cached.clone()))
            .unwrap_or(cached)
    }

    /// `mirror`, which a reconcile holds (read at its start or written since), as this
    /// replica's later writes left it: what a status written now must be based on.
    pub fn refreshed(&self, mirror: &Mirror) -> Mirror {
        self.written.newest(&Owner::of(mirror), mirror.clone())
    }

    /// Drops what is kept about a Mirror that is gone.
    pub fn forget(&self, owner: &Owner) {
        self.written.forget(owner);
    }

    /// Writes the status a reconcile that ended in `reason` reports, unless the Mirror shows it.
    pub async fn write_status(
        &self,
        mirror: &Mirror,
        observed: &Observed,
        reason: Reason,
        message: &str,
    ) -> Result<(), Error> {
        let status = status::build(
            mirror,
            observed,
            reason,
            message,
            &crate::time::now_seconds(),
        );
        if mirror.status.as_ref() == Some(&status) {
            return Ok(());
        }
        let written = match self.placed_of(mirror) {
            Some(placed) => placed.report(mirror, status).await?,
            None => {
                let mut updated = mirror.clone();
                updated.status = Some(status);
                self.client.replace_status(&updated).await?
            }
        };
        self.remember(mirror, written);
        Ok(())
    }

    /// Writes the status a finished fan-out ends in; its first write error, if any, is the
    /// reconcile's (it is retried).
    pub async fn write_outcome(
        &self,
        mirror: &Mirror,
        observed: &Observed,
        errors: Vec<Error>,
    ) -> Result<(), Error> {
        let (reason, message) = match errors.first() {
            None => (Reason::Synced, String::new()),
            Some(e) => (Reason::Error, e.to_string()),
        };
        self.write_status(mirror, observed, reason, &message)
            .await?;
        errors.into_iter().next().map_or(Ok(()), Err)
    }

    /// `mirror` with skiff's finalizer, added if it lacks it. A hub's Mirror needs none: its
    /// Placement's tombstone is its deletion, and waits for the member's acknowledgement.
    pub async fn add_finalizer(&self, mirror: Mirror) -> Result<Mirror, Error> {
        if has_finalizer(&mirror) || self.placed_of(&mirror).is_some() {
            return Ok(mirror);
        }
        let mut finalizers = mirror.metadata.finalizers.clone();
        finalizers.push(FINALIZER.to_owned());
        self.patch_finalizers(&mirror, finalizers).await
    }

    /// Removes skiff's finalizer, letting the Mirror's deletion finish; for a hub's Mirror,
    /// acknowledges its Placement's tombstone.
    pub async fn remove_finalizer(&self, mirror: &Mirror) -> Result<(), Error> {
        if let Some(placed) = self.placed_of(mirror) {
            return placed.acknowledge(mirror).await;
        }
        let rest = mirror
            .metadata
            .finalizers
            .iter()
            .filter(|f| *f != FINALIZER)
            .cloned()
            .collect();
        self.patch_finalizers(mirror, rest).await?;
        Ok(())
    }

    /// Sets the finalizers, conditional on the version the cache saw (a concurrent change
    /// gets a 409 and the reconcile is retried).
    async fn patch_finalizers(
        &self,
        mirror: &Mirror,
        finalizers: Vec<String>,
    ) -> Result<Mirror, Error> {
        let patch = json!({"metadata": {
            "finalizers": finalizers,
            "resourceVersion": mirror.metadata.resource_version(),
        }});
        let patched: Mirror = self
            .client
            .patch_merge(
                Some(mirror.metadata.namespace()),
                mirror.metadata.name(),
                &patch,
            )
            .await?;
        self.remember(mirror, patched.clone());
        Ok(patched)
    }

    /// Records `written` as replacing the version of `replaced`.
    fn remember(&self, replaced: &Mirror, written: Mirror) {
        let version = replaced.metadata.resource_version();
        self.written
            .record(Owner::of(&written), Some(version), Some(written));
    }
}

#[cfg(test)]
mod tests;
