//! Carrying out a plan: the creates, updates and deletes, several at a time.
//!
//! The reconciler plans; the [`Applier`] writes. Its state is small: the requests on copies with
//! the record of its own writes ([`CopyWriter`]), and the stop signal. Writes go out
//! concurrently (bounded by count per tenant namespace: [`flows`]) so
//! a fan-out is paced by the client's token bucket, not by round trips, and one tenant's
//! fan-outs keep few writes ahead of another tenant's requests in that bucket. A create that meets an object goes to
//! [`adopt`]; an update, to [`update`], and one the server refuses, to [`replace`].

mod adopt;
mod copy_write;
pub mod flows;
mod progress;
mod replace;
mod update;

pub use copy_write::Target;
pub use progress::ProgressReport;

use super::copy::CopyInfo;
use super::copy_requests::CopyRequests;
use super::managed::Record;
use super::own_writes::{CopyKey, CopyWrites};
use super::payload::HeldMaps;
use super::plan::Plan;
use crate::kube::Error;
use crate::kube::api::Version;
use crate::runtime::ObjectKey;
use crate::signal::Signal;
use adopt::meet_existing;
use copy_write::{CopyWriter, Done, Wrote};
use flows::{FlowPermit, FlowPermits};
use progress::Progress;
use smol::future::FutureExt as _;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;
use update::update_copy;

/// Writes in flight at once for one namespace's Mirrors: enough to keep a 20 QPS bucket busy
/// over a slow link, few enough not to flood a throttled server.
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

/// A write with everything it needs, owned by its task.
enum Job {
    Create(String),
    Update(String, Version, Option<Record>, HeldMaps),
    Delete(CopyKey, Version),
}

fn jobs(plan: &Plan) -> impl Iterator<Item = Job> + '_ {
    let creates = plan.create.iter().cloned().map(Job::Create);
    let updates = plan.update.iter().map(|u| {
        Job::Update(
            u.namespace.clone(),
            u.resource_version.clone(),
            u.record.clone(),
            u.held,
        )
    });
    let deletes = (plan.delete.iter()).map(|(key, rv)| Job::Delete(key.clone(), rv.clone()));
    creates.chain(updates).chain(deletes)
}

/// Writes the copies of one replica.
pub struct Applier {
    writer: CopyWriter,
    /// The writes in flight of each namespace's Mirrors.
    flows: Arc<FlowPermits>,
    /// Set when the controller stops: writes not yet made are left to the next run.
    stopping: Signal,
}

impl Applier {
    pub fn new(requests: CopyRequests, written: Arc<CopyWrites>, stopping: Signal) -> Applier {
        Applier {
            writer: CopyWriter::new(requests, written),
            flows: FlowPermits::new(MAX_IN_FLIGHT),
            stopping,
        }
    }

    /// The copies this replica wrote, until the caches show them: the reconciler reads the
    /// caches through it.
    pub fn written(&self) -> &CopyWrites {
        self.writer.written()
    }

    /// Makes the plan's writes, reporting progress to `report` during a long fan-out.
    pub async fn apply(
        self: &Arc<Self>,
        target: &Arc<Target>,
        plan: &Plan,
        report: &ProgressReport<'_>,
    ) -> Outcome {
        let mut tasks = Vec::with_capacity(plan.writes());
        let mut progress = Progress::new(plan.in_sync);
        let mut stopped = false;
        for job in jobs(plan) {
            // The permit is taken before the task exists, so the fan-outs of a namespace hold
            // at most MAX_IN_FLIGHT writes at once. Each holds its head and a reply of
            // metadata alone, never the content: creates and updates share it
            // (`copy_body.rs`), so the count bounds the bytes too.
            let Some(permit) = self.permit(&target.owner.namespace).await else {
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
                report.send(synced).await;
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

    /// A write permit of `flow`, or `None` once the controller stops: a write not yet started
    /// is simply dropped (each is idempotent; the next run redoes what is left).
    async fn permit(&self, flow: &str) -> Option<FlowPermit> {
        if self.stopping.is_fired() {
            return None;
        }
        let permit = async { Some(self.flows.take(flow).await) };
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
        let writer = &self.writer;
        let done = match job {
            Job::Create(ns) => self.create_copy(target, &ns).await,
            Job::Update(ns, rv, record, held) => {
                update_copy(writer, target, &ns, &rv.to_string(), record.as_ref(), held).await
            }
            Job::Delete(key, rv) => self.delete_copy(key, &rv).await,
        };
        match done {
            Done::Failed(_) if self.stopping.is_fired() => Done::Stopped,
            done => done,
        }
    }

    /// Creates the copy in `ns`; one that meets an existing object looks at it first.
    async fn create_copy(&self, target: &Target, ns: &str) -> Done {
        match self.writer.create(target, ns).await {
            Ok(()) => Wrote::plain(ns),
            Err(e) if e.is_already_exists() => meet_existing(&self.writer, target, ns).await,
            Err(e) => Done::Failed(e),
        }
    }

    async fn delete_copy(&self, key: CopyKey, rv: &Version) -> Done {
        match self.writer.delete(key, &rv.to_string()).await {
            Ok(()) => Done::Deleted,
            Err(e) if e.is_not_found() => Done::Deleted,
            Err(e) => Done::Failed(e),
        }
    }

    /// Deletes `copies`, one at a time (a Mirror deleted, or gone without its finalizer).
    pub async fn delete_all(&self, copies: Vec<(ObjectKey, CopyInfo)>) -> Result<(), Error> {
        let mut first_error = None;
        for (key, c) in copies {
            if self.stopping.is_fired() {
                return Err(Error::Refused(
                    "stopping before every copy was deleted; the next run deletes the rest".into(),
                ));
            }
            let key = CopyKey::of(c.kind, key);
            if let Done::Failed(e) = self.delete_copy(key, &c.resource_version).await {
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
