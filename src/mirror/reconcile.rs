//! One reconcile of one Mirror: read the caches, plan, have the copies written, report status.
//!
//! Writes happen only when something differs from what the caches show, so a steady state
//! and a restart with nothing changed write nothing. Objects skiff does not manage for this
//! Mirror are never written: they are counted, named in the status and reported as an Event.
//!
//! The reconciler decides; the writes are others': the `Applier` writes the copies, the
//! [`MirrorWriter`] the Mirror's status and finalizer, the [`Announcer`] its Events,
//! `Conflicts` keeps what is known of objects skiff must not touch, and [`Contests`] holds
//! back the restorations of copies another writer keeps changing back.

use super::acceptance::local_names::LocalNames;
use super::announce::{Announcer, Naming};
use super::apply::{Applier, Outcome, ProgressReport, Target};
use super::caches::{Caches, SourceScope};
use super::conflicts::Conflicts;
use super::consent::{Consent, Seen};
use super::contest::{Contests, Gate};
use super::copy::{CopyInfo, Owner};
use super::copy_requests::CopyRequests;
use super::desired::DesiredCopy;
use super::fleet_status;
use super::kind_checks::KindChecks;
use super::mirror_writer::{MirrorWriter, has_finalizer};
use super::orphan::Orphans;
use super::own_writes::CopyKey;
use super::placer::Placer;
use super::plan::{Desired, Plan, plan};
use super::refusals::Refusals;
use super::secret_targets::SecretTargets;
use super::status::{Observed, Reason, Refusal};
use super::tenancy::Tenancy;
use super::types::{DeletionPolicy, Mirror};
use crate::kube::events::Recorder;
use crate::kube::{Client, Error};
use crate::runtime::{Action, ObjectKey};
use crate::signal::Signal;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

pub struct Reconciler {
    caches: Caches,
    refusals: Refusals,
    mirrors: MirrorWriter,
    conflicts: Conflicts,
    contests: Contests,
    announce: Announcer,
    applier: Arc<Applier>,
    orphans: Orphans,
    /// With `--self-service`: tenant Mirrors' consents (see consent).
    consent: Option<Consent>,
    /// With `--fleet-hub`: where fleet Mirrors' Placements are written.
    placer: Option<Placer>,
}

impl Reconciler {
    pub fn new(
        client: Client,
        caches: Caches,
        (scope, secret_targets, kinds): (SourceScope, SecretTargets, KindChecks),
        (recorder, placer): (Recorder, Option<Placer>),
        stopping: Signal,
    ) -> Reconciler {
        let requests = CopyRequests::new(client.clone());
        let (placed, written) = (caches.placed.clone(), Arc::clone(&caches.copy_writes));
        let listed = (&kinds.kinds, &secret_targets, caches.self_service.as_ref());
        let orphans = Orphans::new(requests.clone(), listed, stopping.clone());
        let consent = (caches.self_service.clone()).map(|settings| {
            let clients = (client.clone(), recorder.clone());
            Consent::new(settings, secret_targets.clone(), caches.clone(), clients)
        });
        let hub = placer.is_some();
        Reconciler {
            consent,
            placer,
            caches,
            refusals: Refusals {
                scope,
                secret_targets,
                kinds,
                hub,
            },
            mirrors: MirrorWriter::new(client, placed),
            conflicts: Conflicts::new(requests.clone()),
            contests: Contests::default(),
            announce: Announcer::new(recorder),
            applier: Arc::new(Applier::new(requests, written, stopping)),
            orphans,
        }
    }

    pub async fn reconcile(&self, key: ObjectKey) -> Result<Action, Error> {
        let owner = Owner {
            namespace: key.namespace.to_string(),
            name: key.name.to_string(),
        };
        let Some(mirror) = self.caches.mirror(&key) else {
            // A hub's Mirror whose Placement is not here is no sign to delete anything: only
            // its tombstone is. Its copies stay until one comes.
            if owner.hub().is_none() {
                self.delete_all_copies(&owner).await?;
            }
            self.forget(&owner);
            self.report_acceptances(&owner, None).await?;
            return Ok(Action::Done);
        };
        let mirror = self.mirrors.latest(&owner, mirror);
        let consent = self.consent.as_ref();
        let tenancy = Tenancy::of(&mirror, (&self.refusals.scope, consent), &self.caches);
        let refusal = self.refusals.of(&mirror, &tenancy, consent);
        let refused = refusal.is_some();
        let action = self.reconcile_mirror(&mirror, &tenancy, refusal).await?;
        self.report_acceptances(&owner, tenancy.seen(&mirror, refused))
            .await?;
        Ok(action)
    }

    async fn reconcile_mirror(
        &self,
        mirror: &Mirror,
        tenancy: &Tenancy,
        refusal: Option<Refusal>,
    ) -> Result<Action, Error> {
        let owner = Owner::of(mirror);
        if mirror.metadata.deletion_timestamp.is_some() {
            return self.finalize(mirror, tenancy).await;
        }
        // A Mirror whose sources may not be read writes no copy, so it gets no finalizer:
        // its deletion would have nothing to clean up.
        if let Some(refusal) = refusal {
            return self.refuse(mirror, &Observed::default(), refusal).await;
        }
        // A tenant's offer gets no finalizer: its copies go when skiff sees it gone, unless they
        // outlive it (Orphan). A hub's Mirror needs none either (MirrorWriter::add_finalizer):
        // its Placement's tombstone waits for this member.
        let orphans = self.orphans.policy(mirror, tenancy.is_offer()) == DeletionPolicy::Orphan;
        let mirror = match tenancy.is_offer() && !orphans {
            true => mirror.clone(),
            false => self.mirrors.add_finalizer(mirror.clone()).await?,
        };
        let desired = match self.desired(&mirror, tenancy) {
            Ok(desired) => desired,
            Err(refusal) => {
                let observed = Observed {
                    selected: tenancy.serves.len() as u32,
                    ..Observed::default()
                };
                return self.refuse(&mirror, &observed, refusal).await;
            }
        };
        if let Some(placer) = self.placer.as_ref().filter(|_| mirror.spec.is_fleet()) {
            let want = (&desired, &tenancy.serves);
            let placing = (placer, &self.announce);
            return fleet_status::place(placing, &self.mirrors, &mirror, want).await;
        }
        let target = Arc::new(Target::new(owner, tenancy.names.clone(), desired));
        self.sync(&mirror, tenancy, &target).await
    }

    /// Writes the status of every acceptance naming the Mirror `owner` whose verdict changed:
    /// `seen` is the offer as this reconcile saw it; `None` when it is gone or not an offer.
    async fn report_acceptances(&self, owner: &Owner, seen: Option<Seen<'_>>) -> Result<(), Error> {
        let Some(consent) = &self.consent else {
            return Ok(());
        };
        let written = self.applier.written();
        let copy = |kind, ns: &str, name: &str| {
            let key = CopyKey::new(kind, ns, name);
            written.resolve(&key, self.caches.copy(kind, ns, name))
        };
        let blocked = self.conflicts.blocked(owner);
        let verdict = |key: &ObjectKey, kind| consent.verdict(seen, (key, kind), &copy, &blocked);
        let none = LocalNames::default();
        let local = seen.map_or(&none, |s| &s.offer.local);
        consent.report(owner, verdict, local).await
    }

    /// What `mirror`'s copies should hold, or why they keep what they hold: its source is
    /// missing, or it may not be copied as the Mirror asks (see desired), or it is a RoleBinding
    /// skiff may not write (see kinds: its role, subjects or the namespaces selected).
    fn desired(&self, mirror: &Mirror, tenancy: &Tenancy) -> Result<DesiredCopy, Refusal> {
        let (source, namespace) = (&mirror.spec.source, mirror.metadata.namespace());
        let Some(content) = self.caches.source(source.kind, namespace, &source.name) else {
            let message = format!(
                "{} {}/{} not found; existing copies are left as they are until it exists again",
                source.kind.as_str(),
                namespace,
                source.name
            );
            return Err(Refusal {
                reason: Reason::SourceNotFound,
                message,
            });
        };
        let selected = || tenancy.serves.clone();
        let binding = (self.refusals.kinds).binding_refusal(mirror, &content.payload, selected);
        binding.map_or_else(|| DesiredCopy::of(mirror, &content), Err)
    }

    /// Reports `refusal` in the status; nothing else is done.
    async fn refuse(
        &self,
        mirror: &Mirror,
        observed: &Observed,
        refusal: Refusal,
    ) -> Result<Action, Error> {
        self.mirrors
            .write_status(mirror, observed, refusal.reason, &refusal.message)
            .await?;
        Ok(Action::Done)
    }

    async fn sync(
        &self,
        mirror: &Mirror,
        tenancy: &Tenancy,
        target: &Arc<Target>,
    ) -> Result<Action, Error> {
        let (owner, hash) = (&target.owner, target.desired.hash);
        let first_sight = self.conflicts.first_sight(owner);
        let selected = &tenancy.serves;
        let (kind, names) = (mirror.spec.copy_kind(), &target.names);
        let cached = |ns: &str| self.caches.copy(kind, ns, names.of(ns)).is_some();
        let unmanaged = self
            .conflicts
            .find_unmanaged((mirror, owner, names), selected, first_sight, cached)
            .await;
        let mut plan = self.plan(mirror, target, selected, &unmanaged);
        let policy = mirror.spec.conflict_policy();
        let gate = self
            .contests
            .gate(owner, (hash, policy), &mut plan.update, Instant::now());
        let hex = hash.hex();
        let report = ProgressReport {
            mirrors: &self.mirrors,
            mirror,
            owner,
            hash: &hex,
            selected: selected.len(),
            conflicts: &plan.conflicts,
        };
        let outcome = self.applier.apply(target, &plan, &report).await;
        (self.conflicts).remember_blocked(owner, &outcome.blocked, &target.names);
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
        // A tenant's offer counts where, never names it: those namespaces are other tenants'.
        let naming = tenancy.naming();
        self.announce_outcome(mirror, owner, &conflicts, &outcome, first_sight, naming)
            .await;
        let contest = gate.contest();
        if gate.warn {
            self.announce.contested(mirror, &contest, naming).await;
        }
        // Progress reports during the fan-out may have written the status since.
        let mirror = &self.mirrors.refreshed(mirror);
        let observed = Observed {
            source_hash: Some(hex),
            selected: selected.len() as u32,
            synced: (plan.in_sync + outcome.written).saturating_sub(gate.contested_unheld),
            conflicts,
            adopted: outcome.adopted.len() as u32,
            replaced: outcome.replaced.len() as u32,
            contest: Some(contest),
            private: naming == Naming::Counts,
            clusters: None,
        };
        (self.mirrors)
            .write_outcome(mirror, &observed, outcome.errors)
            .await?;
        Ok(self.next_run(owner, &gate))
    }

    /// When to run again without an event: a conflict to re-check, or a copy's restoration
    /// falling due (or its contest ending).
    fn next_run(&self, owner: &Owner, gate: &Gate) -> Action {
        let recheck = self.conflicts.recheck(owner);
        let after = [recheck, gate.next].into_iter().flatten().min();
        after.map_or(Action::Done, Action::RequeueAfter)
    }

    fn plan(
        &self,
        mirror: &Mirror,
        target: &Target,
        selected: &BTreeSet<String>,
        unmanaged: &BTreeSet<String>,
    ) -> Plan {
        let (kind, names) = (mirror.spec.copy_kind(), &target.names);
        let desired = Desired {
            owner: &target.owner,
            kind,
            names,
            hash: target.desired.hash,
        };
        let existing = |ns: &str| {
            let name = names.of(ns);
            let key = CopyKey::new(kind, ns, name);
            let written = self.applier.written();
            written.resolve(&key, self.caches.copy(kind, ns, name))
        };
        let owned = self.owned(&target.owner);
        plan(&desired, selected, existing, owned.iter(), unmanaged)
    }

    /// This Mirror's copies as they are after this replica's own writes, with their keys.
    fn owned(&self, owner: &Owner) -> Vec<(ObjectKey, CopyInfo)> {
        let written = self.applier.written();
        let mut owned: Vec<(ObjectKey, CopyInfo)> = self
            .caches
            .copies_of(owner)
            .into_iter()
            .filter_map(|(key, c)| {
                let key = CopyKey::of(c.kind, key);
                let resolved = written.resolve(&key, Some(c))?;
                Some((key.object, resolved))
            })
            .collect();
        owned.extend(written.created_unseen(owner, |kind, key| {
            self.caches.copy(kind, &key.namespace, &key.name).is_some()
        }));
        owned
    }

    /// The Events of a finished fan-out: conflicts not announced yet, adoptions, replacements.
    async fn announce_outcome(
        &self,
        mirror: &Mirror,
        owner: &Owner,
        conflicts: &[String],
        outcome: &Outcome,
        first_sight: bool,
        naming: Naming,
    ) {
        let new = self
            .conflicts
            .unannounced(mirror, owner, conflicts, first_sight);
        let announce = &self.announce;
        announce.conflicts(mirror, &new, naming).await;
        announce.adopted(mirror, &outcome.adopted, naming).await;
        announce.replaced(mirror, &outcome.replaced, naming).await;
    }

    /// The copies of a deleted Mirror go, or stay without skiff's marks (see orphan); then its
    /// finalizer is removed.
    async fn finalize(&self, mirror: &Mirror, tenancy: &Tenancy) -> Result<Action, Error> {
        if !has_finalizer(mirror) {
            return Ok(Action::Done);
        }
        let owner = &Owner::of(mirror);
        let done = match self.orphans.policy(mirror, tenancy.is_offer()) {
            DeletionPolicy::Delete => self.delete_all_copies(owner).await.map(|()| "deleted"),
            DeletionPolicy::Orphan => {
                self.contests.forget(owner); // no held restoration lands once it is orphaned
                let orphaned = self.orphans.orphan_all(owner, self.applier.written()).await;
                let naming = tenancy.naming();
                self.announce.orphaned(mirror, orphaned.count, naming).await;
                orphaned.error.map_or(Ok("orphaned"), Err)
            }
        }?;
        self.mirrors.remove_finalizer(mirror).await?;
        log::info!(
            "Mirror {}/{}: copies {done}, finalizer removed",
            owner.namespace,
            owner.name
        );
        Ok(Action::Done)
    }

    /// Deletes every copy labelled for `owner` (Mirror deleted, or gone without its finalizer),
    /// as this replica's own writes left them: a copy created a moment ago counts too. A fleet
    /// Mirror's Placements are withdrawn instead (tombstones, deleted once acknowledged).
    async fn delete_all_copies(&self, owner: &Owner) -> Result<(), Error> {
        if let Some(placer) = &self.placer {
            placer.withdraw(owner, |_| false).await?;
        }
        self.applier.delete_all(self.owned(owner)).await
    }

    /// Drops what is kept about a Mirror that is gone.
    fn forget(&self, owner: &Owner) {
        self.mirrors.forget(owner);
        self.conflicts.forget(owner);
        self.contests.forget(owner);
    }
}
