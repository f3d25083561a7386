//! The Mirror controller: copies one ConfigMap or Secret into every selected namespace.
//!
//! - [`controller`]: the runnable the manager starts: watches → caches → workers.
//! - [`caches`]: what is watched and kept; [`index`]: how the caches are asked which Mirrors
//!   read a source or want a name, and which copies a Mirror owns.
//! - [`enqueue`]: which Mirrors each watch event concerns.
//! - [`reconcile`]: one Mirror, once: plan, write what differs, report status; `apply`
//!   carries out the writes.
//! - [`mirror_writer`]: the writes to a Mirror itself: its status and finalizer.
//! - [`types`]: the `Mirror` custom resource.
//! - [`namespace_selector`]: which namespaces a Mirror's selector selects; [`namespace`]: what
//!   the namespace cache keeps of a namespace to decide it.
//! - [`copy`]: the labels that mark a copy as skiff's, and what the copy cache keeps of it.
//! - [`copy_requests`]: the API requests on a copy, whatever its kind.
//! - [`payload`]: the content a copy carries, and its hash.
//! - [`source`]: what the source cache keeps of a source.
//! - [`desired`]: what a Mirror wants its copies to hold (picked keys, labels and
//!   annotations), or why it must copy nothing; [`carry`]: which of the source's own labels and
//!   annotations may go with it.
//! - [`managed`]: the labels and annotations of a copy that are skiff's, recorded on the copy.
//! - [`render`]: the object skiff creates and the patch that updates a copy.
//! - [`plan`]: which copies to create, update and delete, and where the conflicts are.
//! - [`existing`]: an object holding a copy's name, read from the server; `adopt` and
//!   `replace` act on it (explicit adoption; replacement when an update cannot work).
//! - [`status`]: the counts and `Ready` condition a Mirror reports; [`announce`]: the Events a
//!   reconcile posts on it.
//! - [`selection`]: each Mirror's selected namespaces, kept up to date event by event.
//! - [`conflicts`]: objects with a copy's name that skiff must not touch, found and announced;
//!   [`known_conflicts`] keeps what is known of them per Mirror.
//! - [`own_writes`]: copy and Mirror writes the caches have not seen yet, so none is made twice.
//! - [`progress`]: a long fan-out's progress, reported in the status.
//! - [`secret_targets`]: the Secret names skiff may write (`--secret-target-names`).
//! - [`secret_copies`]: Secret copies, watched one allowed name at a time.
pub mod announce;
mod apply;
pub mod caches;
pub mod carry;
mod conflicts;
pub mod controller;
pub mod copy;
pub mod copy_requests;
pub mod desired;
pub mod enqueue;
pub mod existing;
#[cfg(test)]
mod fixtures;
pub mod index;
pub mod known_conflicts;
pub mod managed;
pub mod mirror_writer;
pub mod namespace;
pub mod namespace_selector;
pub mod own_writes;
pub mod payload;
pub mod plan;
pub mod reconcile;
pub mod render;
pub mod secret_copies;
pub mod secret_targets;
pub mod selection;
pub mod source;
pub mod status;
pub mod types;

pub use caches::SourceScope;
pub use controller::runnable;
pub use secret_targets::SecretTargets;
pub use types::{Mirror, MirrorSpec, MirrorStatus, SourceKind};
