//! Copies that outlive their Mirror (`spec.deletionPolicy: Orphan`): when the Mirror is
//! deleted, skiff takes from each of its copies everything that marks it as skiff's and leaves
//! the rest in place, its content first.
//!
//! Taken: skiff's labels (`app.kubernetes.io/managed-by`, `skiff.dev/mirror-namespace`,
//! `skiff.dev/mirror-name`), the annotation `skiff.dev/source-hash`, skiff's records of the
//! labels and annotations it manages, and a `skiff.dev/adopt` left from an adoption (a new
//! Mirror of the same name would take the copy back at once). Kept: the content, and the
//! labels and annotations `spec.target.metadata` set, which workloads may rely on (Argo CD's
//! secret type, Reloader's annotation). An orphaned copy is an object skiff does not manage: no
//! Mirror updates or deletes it, and a new Mirror meeting it reports a conflict until its owner
//! hands it over with `skiff.dev/adopt`.
//!
//! No write of the Mirror may land after its copies are orphaned. The reconcile that orphans
//! them is the only one of its Mirror running (the work queue hands a key to one worker at a
//! time), and every write an earlier reconcile started had its reply before that reconcile
//! ended (a fan-out waits for all of its writes); the restorations a contest held back are
//! dropped before, so none is made later. The copies are then re-read from the server, not the
//! cache, which may not have seen the last writes yet: a LIST of each enabled kind by the
//! Mirror's labels, metadata only. Each orphaning patch is conditional on the resourceVersion
//! read; one refused because the copy changed since is read again and retried while it is
//! still the Mirror's copy. Each orphaned copy is recorded as this replica's own write, so a
//! reconcile before the cache sees it takes it for gone, not for a copy to delete or restore.

use super::copy::{MANAGED_BY_LABEL, MANAGED_BY_VALUE, MIRROR_NAME_LABEL, MIRROR_NAMESPACE_LABEL};
use super::copy::{Owner, SOURCE_HASH_ANNOTATION};
use super::copy_requests::CopyRequests;
use super::existing::ADOPT_ANNOTATION;
use super::managed::{MANAGED_ANNOTATIONS_ANNOTATION, MANAGED_LABELS_ANNOTATION};
use super::named_stores::watched_names;
use super::own_writes::{CopyKey, CopyWrites};
use super::secret_targets::SecretTargets;
use super::types::{DeletionPolicy, Mirror};
use crate::flags::SelfService;
use crate::kind::{Kind, Kinds};
use crate::kube::Error;
use crate::kube::api::ObjectMeta;
use crate::signal::Signal;
use serde_json::{Map, Value, json};

/// Orphaning patches of one copy refused because it changed meanwhile, before the reconcile
/// gives up and is retried.
const ATTEMPTS: usize = 3;

/// What orphans the copies of deleted Mirrors, and whether tenants' offers may ask for it.
pub struct Orphans {
    requests: CopyRequests,
    /// Where copies are listed: each enabled kind's row, by name where RBAC grants it by name.
    lists: Vec<(&'static Kind, Option<String>)>,
    /// `--self-service-orphan`.
    tenants_may: bool,
    stopping: Signal,
}

/// How orphaning one Mirror's copies went: how many copies were orphaned, and the first error,
/// if any (the next run orphans the rest).
#[derive(Debug, Default)]
pub struct Orphaned {
    pub count: u32,
    pub error: Option<Error>,
}

impl Orphans {
    /// Orphans for the copies of `kinds`, Secrets listed by `names`; tenants' offers orphan
    /// theirs when `self_service` allows it.
    pub fn new(
        requests: CopyRequests,
        (kinds, names, self_service): (&Kinds, &SecretTargets, Option<&SelfService>),
        stopping: Signal,
    ) -> Orphans {
        let lists = kinds.enabled().flat_map(|row| {
            let names = watched_names(row, names).into_iter();
            names.map(move |name| (row, name))
        });
        Orphans {
            requests,
            lists: lists.collect(),
            tenants_may: self_service.is_some_and(|s| s.orphan),
            stopping,
        }
    }

    /// What becomes of `mirror`'s copies when it is deleted ([`policy`]).
    pub fn policy(&self, mirror: &Mirror, offer: bool) -> DeletionPolicy {
        policy(mirror, offer, self.tenants_may)
    }

    /// Orphans every copy the server holds of `owner`, recording each in `written`.
    pub async fn orphan_all(&self, owner: &Owner, written: &CopyWrites) -> Orphaned {
        let mut orphaned = Orphaned::default();
        let copies = match self.list(owner).await {
            Ok(copies) => copies,
            Err(e) => return Orphaned::failed(e),
        };
        for (row, meta) in copies {
            if self.stopping.is_fired() {
                let stopping = "stopping before every copy was orphaned; the next run orphans \
                                the rest";
                orphaned
                    .error
                    .get_or_insert(Error::Refused(stopping.into()));
                break;
            }
            match self.orphan(row, &meta, owner, written).await {
                Ok(true) => orphaned.count += 1,
                Ok(false) => {}
                Err(e) => {
                    orphaned.error.get_or_insert(e);
                }
            }
        }
        orphaned
    }

    /// The copies of `owner` as the server holds them, of every enabled kind.
    async fn list(&self, owner: &Owner) -> Result<Vec<(&'static Kind, ObjectMeta)>, Error> {
        let labels = owner_selector(owner);
        let mut copies = Vec::new();
        for (row, name) in &self.lists {
            let listed = self.requests.list_labelled(row, &labels, name.as_deref());
            copies.extend(listed.await?.into_iter().map(|meta| (*row, meta)));
        }
        Ok(copies)
    }

    /// Orphans the copy `meta` of the kind `row`; false when it is gone, or no longer
    /// `owner`'s, before its patch landed.
    async fn orphan(
        &self,
        row: &'static Kind,
        meta: &ObjectMeta,
        owner: &Owner,
        written: &CopyWrites,
    ) -> Result<bool, Error> {
        let (ns, name) = (meta.namespace(), meta.name());
        let mut version = meta.resource_version().to_owned();
        for _ in 0..ATTEMPTS {
            let patch = orphaning_patch(&version);
            match self.requests.patch_metadata(row, ns, name, &patch).await {
                Ok(()) => {
                    written.record(CopyKey::new(row.id, ns, name), Some(&version), None);
                    return Ok(true);
                }
                Err(e) if e.is_not_found() => return Ok(false),
                Err(e) if e.is_conflict() => {
                    let found = match self.requests.existing(row, ns, name).await {
                        Err(e) if e.is_not_found() => return Ok(false),
                        found => found?,
                    };
                    if found.info.owner.as_deref() != Some(owner) {
                        return Ok(false);
                    }
                    version = found.info.resource_version.to_string();
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::Refused(format!(
            "{} {ns}/{name} kept changing while skiff orphaned it; the next run tries again",
            row.name
        )))
    }
}

impl Orphaned {
    fn failed(error: Error) -> Orphaned {
        Orphaned {
            count: 0,
            error: Some(error),
        }
    }
}

/// What becomes of `mirror`'s copies when it is deleted: they are orphaned only when it asks for
/// it and, for a tenant's offer (`offer`), the admin allows it (`tenants_may`).
pub fn policy(mirror: &Mirror, offer: bool, tenants_may: bool) -> DeletionPolicy {
    match mirror.spec.deletion_policy() {
        DeletionPolicy::Orphan if !offer || tenants_may => DeletionPolicy::Orphan,
        _ => DeletionPolicy::Delete,
    }
}

/// The label selector of `owner`'s copies.
fn owner_selector(owner: &Owner) -> String {
    format!(
        "{MANAGED_BY_LABEL}={MANAGED_BY_VALUE},{MIRROR_NAMESPACE_LABEL}={},{MIRROR_NAME_LABEL}={}",
        owner.namespace, owner.name
    )
}

/// The patch that takes skiff's marks from a copy at `version`, and nothing else.
pub fn orphaning_patch(version: &str) -> Value {
    let removed = |keys: &[&str]| {
        let mut map = Map::new();
        for key in keys {
            map.insert((*key).to_owned(), Value::Null);
        }
        map
    };
    let labels = removed(&[MANAGED_BY_LABEL, MIRROR_NAMESPACE_LABEL, MIRROR_NAME_LABEL]);
    let annotations = removed(&[
        SOURCE_HASH_ANNOTATION,
        MANAGED_LABELS_ANNOTATION,
        MANAGED_ANNOTATIONS_ANNOTATION,
        ADOPT_ANNOTATION,
    ]);
    json!({"metadata": {
        "resourceVersion": version,
        "labels": labels,
        "annotations": annotations,
    }})
}

#[cfg(test)]
mod tests;
