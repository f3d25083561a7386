//! Carrying out a plan: the creates, updates and deletes, several at a time.
//!
//! Writes go out concurrently (bounded) so a fan-out is paced by the client's token bucket,
//! not by round trips. Each success is recorded in [`CopyWrites`](super::own_writes::CopyWrites) so the
//! next reconcile doesn't repeat it before the watch catches up. A create that meets an object
//! goes to [`adopt`]; an update the server refuses, to [`replace`].

mod adopt;
mod progress;
mod replace;

use super::copy::Owner;
use super::desired::DesiredCopy;
use super::managed::Record;
use super::own_writes::CopyKey;
use super::plan::Plan;
use super::reconcile::Reconciler;
use super::render::{maps_patch, new_copy, update_patch};
use super::types::{Mirror, SourceKind};
use crate::kube::{Error, PatchKind};
use progress::{Fanout, Progress};
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
    /// Copies created or updated (now in sync), adopted and replaced ones included.
    pub written: u32,
    /// Namespaces where an object handed over with `skiff.dev/adopt` became a copy.
    pub adopted: Vec<String>,
    /// Namespaces where a copy was deleted and created again, and why.
    pub replaced: Vec<(String, String)>,
    /// Namespaces where a create met an object that is not this Mirror's.
    pub new_conflicts: Vec<String>,
    /// Those of them where the object is not skiff's at all, and when it was met.
    pub blocked: Vec<(String, Instant)>,
    pub errors: Vec<Error>,
    /// The controller began stopping; some writes were not made.
    pub stopped: bool,
}

/// The copies of one Mirror: whose, their name, and what they should hold.
pub(super) struct Target {
    pub owner: Owner,
    pub name: String,
    pub desired: DesiredCopy,
}

impl Target {
    pub fn kind(&self) -> SourceKind {
        self.desired.payload().kind()
    }

    pub fn key(&self, namespace: &str) -> CopyKey {
        CopyKey::new(self.kind(), namespace, &self.name)
    }
}

/// A write with everything it needs, owned by its task.
enum Job {
    Create(String),
    Update(String, String, Option<Record>),
    Delete(SourceKind, String, String, String),
}

/// A copy written in `namespace`, and how.
#[derive(Debug)]
pub(super) struct Wrote {
    pub namespace: String,
    pub adopted: bool,
    /// Why it had to be deleted and created again, if it was.
    pub replaced: Option<String>,
}

impl Wrote {
    pub fn plain(namespace: &str) -> Done {
        Done::Written(Wrote {
            namespace: namespace.to_owned(),
            adopted: false,
            replaced: None,
        })
    }
}

/// How one write ended.
pub(super) enum Done {
    Written(Wrote),
    Deleted,
    /// Another Mirror's copy holds the name in this namespace.
    Conflict(String),
    /// An object skiff does not manage holds the name in this namespace, found then.
    Blocked(String, Instant),
    Failed(Error),
    /// Not done: the controller is stopping.
    Stopped,
}

fn jobs(plan: &Plan) -> impl Iterator<Item = Job> + '_ {
    let creates = plan.create.iter().cloned().map(Job::Create);
    let updates = plan.update.iter().map(|u| {
        Job::Update(
            u.namespace.clone(),
            u.resource_version.clone(),
            u.record.clone(),
        )
    });
    let deletes = plan
        .delete
        .iter()
        .map(|(kind, ns, name, rv)| Job::Delete(*kind, ns.clone(), name.clone(), rv.clone()));
    creates.chain(updates).chain(deletes)
}

impl Reconciler {
    /// Makes the plan's writes, reporting progress in the status of a long fan-out to the
    /// `selected` namespaces.
    pub(super) async fn apply(
        self: &Arc<Self>,
        mirror: &Mirror,
        target: &Arc<Target>,
        plan: &Plan,
        selected: usize,
    ) -> Outcome {
        let limit = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
        let mut tasks = Vec::with_capacity(plan.writes());
        let mut progress = Progress::new(plan.in_sync);
        let hash = target.desired.hash.hex();
        let fanout = Fanout {
            owner: &target.owner,
            hash: &hash,
            selected,
            conflicts: &plan.conflicts,
        };
        let mut stopped = false;
        for job in jobs(plan) {
            // The permit is taken before the task exists, so a fan-out of thousands holds at
            // most MAX_IN_FLIGHT writes in memory at once.
            let Some(permit) = self.permit(&limit).await else {
                stopped = true;
                break;
            };
            let (this, target) = (Arc::clone(self), Arc::clone(target));
            let written = progress.counter();
            tasks.push(smol::spawn(async move {
                let done = this.run(&target, job).await;
                if let Done::Written(_) = done {
                    written.fetch_add(1, Ordering::Relaxed);
                }
                drop(permit);
                done
            }));
            if let Some(synced) = progress.due(Instant::now()) {
                self.report_progress(mirror, &fanout, synced).await;
            }
        }
        let mut outcome = Outcome {
            stopped,
            ..Outcome::default()
        };
        for task in tasks {
            outcome.add(task.await);
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
    async fn run(&self, target: &Target, job: Job) -> Done {
        let done = match job {
            Job::Create(ns) => self.create_copy(target, &ns).await,
            Job::Update(ns, rv, record) => {
                self.update_copy(target, &ns, &rv, record.as_ref()).await
            }
            Job::Delete(kind, ns, name, rv) => self.delete_copy(kind, &ns, &name, &rv).await,
        };
        match done {
            Done::Failed(_) if self.stopping.is_fired() => Done::Stopped,
            done => done,
        }
    }

    /// Creates the copy in `ns`; one that meets an existing object looks at it first.
    pub(super) async fn create_copy(&self, target: &Target, ns: &str) -> Done {
        let copy = new_copy(&target.owner, ns, &target.name, &target.desired);
        match self.requests.create(copy).await {
            Ok(info) => {
                self.written.record(target.key(ns), None, Some(info));
                Wrote::plain(ns)
            }
            Err(e) if e.is_already_exists() => self.meet_existing(target, ns).await,
            Err(e) => Done::Failed(e),
        }
    }

    /// Patches the copy in `ns`, seen at `rv` with `record`, into what `target` wants. An
    /// update the server finds invalid may need a replacement instead.
    pub(super) async fn update_copy(
        &self,
        target: &Target,
        ns: &str,
        rv: &str,
        record: Option<&Record>,
    ) -> Done {
        let mut patch = update_patch(&target.owner, &target.desired, record, rv);
        let (mut kind, mut replaced) = (PatchKind::Strategic, rv.to_owned());
        // One call site for both patches, so the request's code is compiled in once.
        loop {
            let answer = match self
                .requests
                .patch(target.kind(), ns, &target.name, &patch, kind)
                .await
            {
                Ok(answer) => answer,
                Err(e) if e.code() == Some(422) && kind == PatchKind::Strategic => {
                    return self.replace_copy(target, ns, e).await;
                }
                Err(e) => return Done::Failed(e),
            };
            let info = answer.info();
            let version = info.resource_version.clone();
            self.written
                .record(target.key(ns), Some(&replaced), Some(info));
            match maps_patch(&answer, &target.desired) {
                Some(fix) if kind == PatchKind::Strategic => {
                    (patch, kind, replaced) = (fix, PatchKind::Merge, version);
                }
                _ => return Wrote::plain(ns),
            }
        }
    }

    async fn delete_copy(&self, kind: SourceKind, ns: &str, name: &str, rv: &str) -> Done {
        let result = self.requests.delete(kind, ns, name, rv).await;
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
}

impl Outcome {
    fn add(&mut self, done: Done) {
        match done {
            Done::Written(wrote) => {
                self.written += 1;
                if wrote.adopted {
                    self.adopted.push(wrote.namespace.clone());
                }
                if let Some(reason) = wrote.replaced {
                    self.replaced.push((wrote.namespace, reason));
                }
            }
            Done::Deleted => {}
            Done::Conflict(ns) => self.new_conflicts.push(ns),
            Done::Blocked(ns, at) => {
                self.new_conflicts.push(ns.clone());
                self.blocked.push((ns, at));
            }
            Done::Failed(e) => self.errors.push(e),
            Done::Stopped => self.stopped = true,
        }
    }
}
