//! One reconcile of one Mirror: read the caches, plan, write what differs, report status.
//!
//! Writes happen only when something differs from what the caches show, so a steady state
//! and a restart with nothing changed write nothing. Objects skiff does not manage for this
//! Mirror are never written: they are counted, named in the status and reported as an Event.

use super::announce::Announcer;
use super::apply::Target;
use super::caches::{Caches, SourceScope};
use super::conflicts::Conflicts;
use super::copy::{CopyInfo, Owner};
use super::copy_requests::CopyRequests;
use super::desired::DesiredCopy;
use super::mirror_writer::{MirrorWriter, has_finalizer};
use super::own_writes::{CopyKey, CopyWrites};
use super::payload::Digest;
use super::plan::{Desired, Plan, plan};
use super::secret_targets::SecretTargets;
use super::status::{Observed, Reason};
use super::types::Mirror;
use crate::kube::events::Recorder;
use crate::kube::{Client, Error};
use crate::runtime::{Action, ObjectKey};
use crate::signal::Signal;
use std::collections::BTreeSet;
use std::sync::Arc;

pub struct Reconciler {
    /// The requests on copies, whatever their kind.
    pub(super) requests: CopyRequests,
    pub(super) caches: Caches,
    scope: SourceScope,
    secret_targets: SecretTargets,
    /// Copies as this replica last wrote them, until the copy caches catch up.
    pub(super) written: CopyWrites,
    /// The Mirror's own status and finalizer.
    pub(super) mirrors: MirrorWriter,
    /// Objects skiff must not touch: found, remembered, announced once.
    conflicts: Conflicts,
    pub(super) announce: Announcer,
    /// Set when the controller stops: writes not yet made are left to the next run.
    pub(super) stopping: Signal,
}

impl Reconciler {
    pub fn new(
        client: Client,
        caches: Caches,
        scope: SourceScope,
        secret_targets: SecretTargets,
        recorder: Recorder,
        stopping: Signal,
    ) -> Reconciler {
        let requests = CopyRequests::new(client.clone());
        Reconciler {
            conflicts: Conflicts::new(requests.clone()),
            requests,
            caches,
            scope,
            secret_targets,
            written: CopyWrites::default(),
            mirrors: MirrorWriter::new(client),
            announce: Announcer::new(recorder),
            stopping,
        }
    }

    pub async fn reconcile(self: Arc<Self>, key: ObjectKey) -> Result<Action, Error> {
        let Some(mirror) = self.caches.mirrors.get(&key.namespace, &key.name) else {
            let owner = Owner {
                namespace: key.namespace,
                name: key.name,
            };
            self.delete_all_copies(&owner).await?;
            self.forget(&owner);
            return Ok(Action::Done);
        };
        let owner = Owner::of(&mirror);
        let mirror = self.mirrors.latest(&owner, mirror);
        if mirror.metadata.deletion_timestamp.is_some() {
            return self.finalize(&mirror, &owner).await;
        }
        // A Mirror whose sources may not be read writes no copy, so it gets no finalizer:
        // its deletion would have nothing to clean up.
        if !self.scope.allows(mirror.metadata.namespace()) {
            let message = format!(
                "sources may only be read from namespaces {} (--source-namespaces); nothing is copied from {}",
                self.scope.describe(),
                mirror.metadata.namespace()
            );
            self.mirrors
                .write_status(
                    &mirror,
                    &Observed::default(),
                    Reason::SourceNamespaceNotAllowed,
                    &message,
                )
                .await?;
            return Ok(Action::Done);
        }
        // Likewise a Secret Mirror whose target name RBAC does not cover (see secret_targets).
        if let Some(refusal) = self.secret_targets.refusal(&mirror) {
            let observed = Observed::default();
            self.mirrors
                .write_status(&mirror, &observed, refusal.reason, &refusal.message)
                .await?;
            return Ok(Action::Done);
        }
        let mirror = self.mirrors.add_finalizer(mirror).await?;
        let source = &mirror.spec.source;
        let Some(content) =
            self.caches
                .source(source.kind, mirror.metadata.namespace(), &source.name)
        else {
            let message = format!(
                "{} {}/{} not found; existing copies are left as they are until it exists again",
                source.kind.as_str(),
                mirror.metadata.namespace(),
                source.name
            );
            let observed = Observed {
                selected: self.selected(&mirror).len() as u32,
                ..Observed::default()
            };
            self.mirrors
                .write_status(&mirror, &observed, Reason::SourceNotFound, &message)
                .await?;
            return Ok(Action::Done);
        };
        let desired = match DesiredCopy::of(&mirror, &content) {
            Ok(desired) => desired,
            Err(refusal) => {
                let observed = Observed {
                    selected: self.selected(&mirror).len() as u32,
                    ..Observed::default()
                };
                self.mirrors
                    .write_status(&mirror, &observed, refusal.reason, &refusal.message)
                    .await?;
                return Ok(Action::Done);
            }
        };
        let target = Arc::new(Target {
            owner: owner.clone(),
            name: mirror.spec.target_name().to_owned(),
            desired,
        });
        self.sync(&mirror, &target).await
    }

    /// Drops what is kept about a Mirror that is gone.
    fn forget(&self, owner: &Owner) {
        self.mirrors.forget(owner);
        self.conflicts.forget(owner);
    }

    async fn sync(
        self: &Arc<Self>,
        mirror: &Mirror,
        target: &Arc<Target>,
    ) -> Result<Action, Error> {
        let (owner, hash) = (&target.owner, target.desired.hash);
        let first_sight = self.conflicts.first_sight(owner);
        let selected = self.selected(mirror);
        let (kind, name) = (mirror.spec.source.kind, mirror.spec.target_name());
        let cached = |ns: &str| self.caches.copy(kind, ns, name).is_some();
        let unmanaged = self
            .conflicts
            .find_unmanaged(mirror, owner, &selected, first_sight, cached)
            .await;
        let plan = self.plan(mirror, owner, hash, &selected, &unmanaged);
        let outcome = self.apply(mirror, target, &plan, selected.len()).await;
        self.conflicts.remember_blocked(owner, &outcome.blocked);
        if outcome.stopped {
            log::info!(
                "Mirror {}/{}: stopping with writes left for the next run",
                owner.namespace,
                owner.name
            );
            return Ok(Action::Done);
        }
        let mut conflicts = plan.conflicts.clone();
        conflicts.extend(outcome.new_conflicts.iter().cloned());
        conflicts.sort();
        let new = self
            .conflicts
            .unannounced(mirror, owner, &conflicts, first_sight);
        self.announce.conflicts(mirror, &new).await;
        self.announce.adopted(mirror, &outcome.adopted).await;
        self.announce.replaced(mirror, &outcome.replaced).await;
        // Progress reports during the fan-out may have written the status since.
        let mirror = &self.mirrors.latest(owner, mirror.clone());
        let observed = Observed {
            source_hash: Some(hash.hex()),
            selected: selected.len() as u32,
            synced: plan.in_sync + outcome.written,
            conflicts,
            adopted: outcome.adopted.len() as u32,
            replaced: outcome.replaced.len() as u32,
        };
        let reason = if outcome.errors.is_empty() {
            Reason::Synced
        } else {
            Reason::Error
        };
        let message = outcome
            .errors
            .first()
            .map(Error::to_string)
            .unwrap_or_default();
        self.mirrors
            .write_status(mirror, &observed, reason, &message)
            .await?;
        if let Some(e) = outcome.errors.into_iter().next() {
            return Err(e);
        }
        Ok(self
            .conflicts
            .recheck(owner)
            .map_or(Action::Done, Action::RequeueAfter))
    }

    fn plan(
        &self,
        mirror: &Mirror,
        owner: &Owner,
        hash: Digest,
        selected: &BTreeSet<String>,
        unmanaged: &BTreeSet<String>,
    ) -> Plan {
        let kind = mirror.spec.source.kind;
        let name = mirror.spec.target_name();
        let desired = Desired {
            owner,
            kind,
            name,
            hash,
        };
        let existing = |ns: &str| {
            let key = CopyKey::new(kind, ns, name);
            self.written.resolve(&key, self.caches.copy(kind, ns, name))
        };
        plan(
            &desired,
            selected,
            existing,
            self.owned(owner).iter(),
            unmanaged,
        )
    }

    /// This Mirror's copies as they are after this replica's own writes.
    pub(super) fn owned(&self, owner: &Owner) -> Vec<CopyInfo> {
        let mut owned: Vec<CopyInfo> = self
            .caches
            .copies_of(owner)
            .into_iter()
            .filter_map(|c| {
                let key = CopyKey::new(c.kind, &c.namespace, &c.name);
                self.written.resolve(&key, Some(c))
            })
            .collect();
        owned.extend(self.written.created_unseen(owner, |kind, ns, name| {
            self.caches.copy(kind, ns, name).is_some()
        }));
        owned
    }

    fn selected(&self, mirror: &Mirror) -> BTreeSet<String> {
        self.caches.selections.of(mirror)
    }

    async fn finalize(self: &Arc<Self>, mirror: &Mirror, owner: &Owner) -> Result<Action, Error> {
        if !has_finalizer(mirror) {
            return Ok(Action::Done);
        }
        self.delete_all_copies(owner).await?;
        self.mirrors.remove_finalizer(mirror).await?;
        log::info!(
            "Mirror {}/{}: copies deleted, finalizer removed",
            owner.namespace,
            owner.name
        );
        Ok(Action::Done)
    }
}
