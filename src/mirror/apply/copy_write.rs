//! One write of one copy: what it aims at ([`Target`]), the requests it makes ([`CopyWriter`]),
//! and how it ended ([`Done`]).
//!
//! Every request that succeeds is recorded in [`CopyWrites`] at once, so the next reconcile,
//! which reads the copy caches through that record, does not repeat the write before the
//! watch catches up.

use crate::kube::Error;
use crate::mirror::copy::{CopyInfo, Owner};
use crate::mirror::copy_body::{
    MapMembers, content_members, map_members, new_copy_body, update_body,
};
use crate::mirror::copy_names::CopyNames;
use crate::mirror::copy_requests::CopyRequests;
use crate::mirror::desired::DesiredCopy;
use crate::mirror::existing::Existing;
use crate::mirror::own_writes::{CopyKey, CopyWrites};
use crate::mirror::payload::HeldMaps;
use crate::mirror::types::SourceKind;
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The copies of one Mirror: whose, their names, and what they should hold.
pub struct Target {
    pub owner: Owner,
    pub names: CopyNames,
    pub desired: DesiredCopy,
    /// The content as every create sends it, serialized once, at the first create.
    content: OnceLock<Arc<[u8]>>,
    /// The maps as every update sends them, serialized once, at the first update.
    maps: OnceLock<Vec<MapMembers>>,
}

impl Target {
    pub fn new(owner: Owner, names: CopyNames, desired: DesiredCopy) -> Target {
        Target {
            owner,
            names,
            desired,
            content: OnceLock::new(),
            maps: OnceLock::new(),
        }
    }

    /// The content every copy's create shares ([`content_members`]).
    fn content(&self) -> Result<&Arc<[u8]>, Error> {
        if let Some(content) = self.content.get() {
            return Ok(content);
        }
        let content = content_members(self.desired.payload()).map_err(not_encoded)?;
        Ok(self.content.get_or_init(|| content.into()))
    }

    /// The maps every copy's update shares ([`map_members`]).
    fn maps(&self) -> Result<&[MapMembers], Error> {
        if let Some(maps) = self.maps.get() {
            return Ok(maps);
        }
        let maps = map_members(self.desired.payload()).map_err(not_encoded)?;
        Ok(self.maps.get_or_init(|| maps))
    }

    pub fn kind(&self) -> SourceKind {
        self.desired.payload().kind()
    }

    /// The copy's name in `namespace`.
    pub fn name(&self, namespace: &str) -> &str {
        self.names.of(namespace)
    }

    pub fn key(&self, namespace: &str) -> CopyKey {
        CopyKey::new(self.kind(), namespace, self.name(namespace))
    }
}

/// How one write ended.
pub enum Done {
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

/// A copy written in `namespace`, and how.
#[derive(Debug)]
pub struct Wrote {
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

/// The requests on copies, each success recorded as this replica's own write.
pub struct CopyWriter {
    requests: CopyRequests,
    /// Shared with the copy watches, which tell it what the caches see.
    written: Arc<CopyWrites>,
}

impl CopyWriter {
    pub fn new(requests: CopyRequests, written: Arc<CopyWrites>) -> CopyWriter {
        CopyWriter { requests, written }
    }

    /// The copies this replica wrote, until the caches show them.
    pub fn written(&self) -> &CopyWrites {
        &self.written
    }

    /// Reads the object holding the copy's name in `ns` from the server.
    pub async fn existing(&self, target: &Target, ns: &str) -> Result<Existing, Error> {
        let row = target.kind().row();
        self.requests.existing(row, ns, target.name(ns)).await
    }

    /// Creates the copy in `ns`.
    pub async fn create(&self, target: &Target, ns: &str) -> Result<(), Error> {
        let (owner, name, desired) = (&target.owner, target.name(ns), &target.desired);
        let body =
            new_copy_body(owner, ns, name, desired, target.content()?).map_err(not_encoded)?;
        let info = self.requests.create(ns, body, desired.payload()).await?;
        self.written.record(target.key(ns), None, Some(info));
        Ok(())
    }

    /// Patches the copy in `ns`, seen at version `replaced` holding the maps `held`, with
    /// `patch` and the maps every update shares ([`update_body`]).
    pub async fn patch(
        &self,
        target: &Target,
        ns: &str,
        patch: &Value,
        held: HeldMaps,
        replaced: &str,
    ) -> Result<(), Error> {
        let body = update_body(patch, target.maps()?, held).map_err(not_encoded)?;
        let payload = target.desired.payload();
        let name = target.name(ns);
        let info = self.requests.patch(ns, name, body, payload).await?;
        self.written
            .record(target.key(ns), Some(replaced), Some(info));
        Ok(())
    }

    /// Deletes the copy `key`, if it is still at version `rv`.
    pub async fn delete(&self, key: CopyKey, rv: &str) -> Result<(), Error> {
        let (row, ns, name) = (key.kind.row(), &*key.object.namespace, &*key.object.name);
        self.requests.delete(row, ns, name, rv).await?;
        self.written.record(key, Some(rv), None);
        Ok(())
    }

    /// Deletes the object holding the copy's name in `ns` only if it is still the one read:
    /// uid `uid` at version `rv`.
    pub async fn delete_exact(
        &self,
        target: &Target,
        ns: &str,
        uid: &str,
        rv: &str,
    ) -> Result<(), Error> {
        let (row, name) = (target.kind().row(), target.name(ns));
        self.requests.delete_exact(row, ns, name, (uid, rv)).await?;
        self.written.record(target.key(ns), Some(rv), None);
        Ok(())
    }

    /// Records a copy found already right in `ns` (where a create was refused) as if this
    /// replica had created it, so the next reconcile sees it before the cache does.
    pub fn record_found(&self, target: &Target, ns: &str, found: CopyInfo) {
        self.written.record(target.key(ns), None, Some(found));
    }
}

fn not_encoded(e: serde_json::Error) -> Error {
    Error::Refused(format!("cannot encode the copy: {e}"))
}
