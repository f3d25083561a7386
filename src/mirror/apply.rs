//! Carrying out a plan: the creates, updates and deletes, several at a time.
//!
//! Writes go out concurrently (bounded) so a fan-out is paced by the client's token bucket,
//! not by round trips. Each success is recorded in [`CopyWrites`](super::own_writes::CopyWrites) so the
//! next reconcile doesn't repeat it before the watch catches up.

use super::copy::{
    CopyInfo, Owner, Payload, SourceContent, configmap_copy, copy_meta, owner_of, secret_copy,
};
use super::own_writes::CopyKey;
use super::plan::Plan;
use super::progress::{Fanout, Progress};
use super::reconcile::Reconciler;
use super::types::{Mirror, SourceKind};
use crate::kube::Error;
use crate::kube::api::{ConfigMap, ObjectMeta, Secret};
use smol::future::FutureExt as _;
use smol::lock::Semaphore;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Writes in flight at once for one reconcile: enough to keep a 20 QPS bucket busy over a
/// slow link, few enough not to flood a throttled server.
pub const MAX_IN_FLIGHT: usize = 16;

/// What carrying out a plan achieved.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Copies created or updated (now in sync).
    pub written: u32,
    /// Namespaces where a create met an object that is not this Mirror's.
    pub new_conflicts: Vec<String>,
    pub errors: Vec<Error>,
    /// The controller began stopping; some writes were not made.
    pub stopped: bool,
}

/// One planned write, borrowed from the plan.
enum Write<'a> {
    Create(&'a String),
    Update(&'a String, &'a String),
    Delete(&'a SourceKind, &'a String, &'a String, &'a String),
}

fn writes(plan: &Plan) -> impl Iterator<Item = Write<'_>> {
    let creates = plan.create.iter().map(Write::Create);
    let updates = plan.update.iter().map(|(ns, rv)| Write::Update(ns, rv));
    let deletes = plan
        .delete
        .iter()
        .map(|(kind, ns, name, rv)| Write::Delete(kind, ns, name, rv));
    creates.chain(updates).chain(deletes)
}

/// A write with everything it needs, owned by its task.
enum Job {
    Write(Box<ObjectMeta>, Arc<SourceContent>, Option<String>),
    Delete(SourceKind, String, String, String),
}

enum Done {
    Written,
    Deleted,
    Conflict(String),
    Failed(Error),
    /// Not done: the controller is stopping.
    Stopped,
}

impl Reconciler {
    /// Makes the plan's writes, reporting progress in the status of a long fan-out to the
    /// `selected` namespaces.
    pub(super) async fn apply(
        self: &Arc<Self>,
        mirror: &Mirror,
        content: &Arc<SourceContent>,
        plan: &Plan,
        selected: usize,
    ) -> Outcome {
        let hash = &content.hash;
        let limit = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
        let mut outcome = Outcome::default();
        let mut tasks = Vec::with_capacity(plan.writes());
        let mut progress = Progress::new(plan.in_sync);
        let fanout = Fanout {
            owner: &Owner::of(mirror),
            hash,
            selected,
            conflicts: &plan.conflicts,
        };
        for write in writes(plan) {
            // The permit is taken before the task exists, so a fan-out of thousands holds at
            // most MAX_IN_FLIGHT objects in memory at once.
            let Some(permit) = self.permit(&limit).await else {
                outcome.stopped = true;
                break;
            };
            let this = Arc::clone(self);
            let job = match write {
                Write::Create(ns) => Job::Write(
                    Box::new(copy_meta(mirror, ns, hash, None)),
                    Arc::clone(content),
                    None,
                ),
                Write::Update(ns, rv) => Job::Write(
                    Box::new(copy_meta(mirror, ns, hash, Some(rv))),
                    Arc::clone(content),
                    Some(rv.clone()),
                ),
                Write::Delete(kind, ns, name, rv) => {
                    Job::Delete(*kind, ns.clone(), name.clone(), rv.clone())
                }
            };
            let written = progress.counter();
            tasks.push(smol::spawn(async move {
                let done = this.run(job).await;
                if let Done::Written = done {
                    written.fetch_add(1, Ordering::Relaxed);
                }
                drop(permit);
                done
            }));
            if let Some(synced) = progress.due(Instant::now()) {
                self.report_progress(mirror, &fanout, synced).await;
            }
        }
        for task in tasks {
            match task.await {
                Done::Written => outcome.written += 1,
                Done::Deleted => {}
                Done::Conflict(ns) => outcome.new_conflicts.push(ns),
                Done::Failed(e) => outcome.errors.push(e),
                Done::Stopped => outcome.stopped = true,
            }
        }
        outcome
    }

    /// A write permit, or `None` once the controller stops: a write not yet started is simply
    /// dropped (each is idempotent; the next run redoes what is left).
    async fn permit(&self, limit: &Arc<Semaphore>) -> Option<smol::lock::SemaphoreGuardArc> {
        if self.stopping.is_fired() {
            return None;
        }
        let permit = async { Some(limit.acquire_arc().await) };
        let stopped = async {
            self.stopping.wait().await;
            None
        };
        permit.or(stopped).await
    }

    /// One write, run to its reply once started: the client sends nothing new after the stop,
    /// and a request already sent must not be abandoned, so no write of this replica lands
    /// after it released its lease.
    async fn run(&self, job: Job) -> Done {
        let done = match job {
            Job::Write(meta, content, replaced) => self.write_copy(*meta, &content, replaced).await,
            Job::Delete(kind, ns, name, rv) => self.delete_copy(kind, &ns, &name, &rv).await,
        };
        match done {
            Done::Failed(_) if self.stopping.is_fired() => Done::Stopped,
            done => done,
        }
    }

    /// Creates (`replaced` = None) or updates a copy; a create that meets an existing object
    /// looks at it before anything else is written.
    async fn write_copy(
        &self,
        meta: ObjectMeta,
        content: &SourceContent,
        replaced: Option<String>,
    ) -> Done {
        let payload = &content.payload;
        let (kind, ns, name) = (
            payload.kind(),
            meta.namespace().to_owned(),
            meta.name().to_owned(),
        );
        let result = match replaced {
            None => self.send(meta.clone(), payload, false).await,
            Some(_) => self.send(meta.clone(), payload, true).await,
        };
        match result {
            Ok(info) => {
                let key = CopyKey::new(kind, &ns, &name);
                self.written.record(key, replaced.as_deref(), Some(info));
                Done::Written
            }
            Err(e) if e.is_already_exists() => self.adopt_or_refuse(meta, content).await,
            Err(e) => Done::Failed(e),
        }
    }

    /// The create found an object with the copy's name: update it if it is this Mirror's
    /// (the cache had not seen it yet), otherwise leave it alone and report the conflict.
    async fn adopt_or_refuse(&self, meta: ObjectMeta, content: &SourceContent) -> Done {
        let payload = &content.payload;
        let (ns, name) = (meta.namespace().to_owned(), meta.name().to_owned());
        let found = match self.fetch_copy(payload.kind(), &ns, &name).await {
            Ok(found) => found,
            Err(e) => return Done::Failed(e),
        };
        let mine = owner_of(&meta).is_some_and(|me| found.owner.as_ref() == Some(&me));
        if !mine {
            // Another Mirror's copy is labelled, so the copy cache will hold it and its
            // deletion will wake this Mirror; only an object the cache cannot see is
            // remembered (and re-checked later).
            if found.owner.is_none() {
                self.remember_unmanaged(&meta, &ns);
            }
            return Done::Conflict(ns);
        }
        let key = CopyKey::new(payload.kind(), &ns, &name);
        if found.content_hash == content.hash {
            self.written.record(key, None, Some(found));
            return Done::Written;
        }
        let mut meta = meta;
        meta.resource_version = Some(found.resource_version.clone());
        match self.send(meta, payload, true).await {
            Ok(info) => {
                self.written
                    .record(key, Some(&found.resource_version), Some(info));
                Done::Written
            }
            Err(e) => Done::Failed(e),
        }
    }

    /// Reads the object of `kind` named `name` in `ns` from the server (not the cache).
    pub(super) async fn fetch_copy(
        &self,
        kind: SourceKind,
        ns: &str,
        name: &str,
    ) -> Result<CopyInfo, Error> {
        match kind {
            SourceKind::ConfigMap => self
                .client
                .get::<ConfigMap>(Some(ns), name)
                .await
                .map(|c| CopyInfo::of_configmap(&c)),
            SourceKind::Secret => self
                .client
                .get::<Secret>(Some(ns), name)
                .await
                .map(|s| CopyInfo::of_secret(&s)),
        }
    }

    async fn send(
        &self,
        meta: ObjectMeta,
        payload: &Payload,
        update: bool,
    ) -> Result<CopyInfo, Error> {
        if let Some(cm) = configmap_copy(meta.clone(), payload) {
            let written = if update {
                self.client.replace(&cm).await?
            } else {
                self.client.create(&cm).await?
            };
            return Ok(CopyInfo::of_configmap(&written));
        }
        let secret = secret_copy(meta, payload)
            .ok_or_else(|| Error::Refused("payload has no kind".into()))?;
        let written = if update {
            self.client.replace(&secret).await?
        } else {
            self.client.create(&secret).await?
        };
        Ok(CopyInfo::of_secret(&written))
    }

    async fn delete_copy(&self, kind: SourceKind, ns: &str, name: &str, rv: &str) -> Done {
        let result = match kind {
            SourceKind::ConfigMap => {
                self.client
                    .delete::<ConfigMap>(Some(ns), name, Some(rv))
                    .await
            }
            SourceKind::Secret => self.client.delete::<Secret>(Some(ns), name, Some(rv)).await,
        };
        match result {
            Ok(()) => {
                self.written
                    .record(CopyKey::new(kind, ns, name), Some(rv), None);
                Done::Deleted
            }
            Err(e) if e.is_not_found() => Done::Deleted,
            Err(e) => Done::Failed(e),
        }
    }

    /// Deletes every copy labelled for `owner` (Mirror deleted, or gone without its finalizer).
    pub(super) async fn delete_all_copies(self: &Arc<Self>, owner: &Owner) -> Result<(), Error> {
        let mut first_error = None;
        // As this replica's own writes left them: a copy created a moment ago counts too.
        for c in self.owned(owner) {
            if self.stopping.is_fired() {
                return Err(Error::Refused(
                    "stopping before every copy was deleted; the next run deletes the rest".into(),
                ));
            }
            if let Done::Failed(e) = self
                .delete_copy(c.kind, &c.namespace, &c.name, &c.resource_version)
                .await
            {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn remember_unmanaged(&self, meta: &ObjectMeta, ns: &str) {
        if let Some(owner) = owner_of(meta) {
            self.memory.remember_blocked(&owner, ns, Instant::now());
        }
    }
}
