//! The Mirror controller: copies one ConfigMap or Secret into every selected namespace.
//!
//! - [`controller`]: the runnable the manager starts: watches → caches → workers.
//! - [`caches`]: what is watched and kept.
//! - [`enqueue`]: which Mirrors each watch event concerns.
//! - [`reconcile`]: one Mirror, once: plan, write what differs, report status; `apply`
//!   carries out the writes.
//! - [`types`]: the `Mirror` custom resource.
//! - [`selector`]: which namespaces a Mirror selects.
//! - [`copy`]: payload, content hash and the labels that mark a copy as skiff's.
//! - [`plan`]: which copies to create, update and delete, and where the conflicts are.
//! - [`status`]: the counts and `Ready` condition a Mirror reports.
//! - [`selection`]: each Mirror's selected namespaces, kept up to date event by event.
//! - [`conflicts`]: objects with a copy's name that skiff must not touch, found and announced;
//!   [`memory`] keeps what is known of them per Mirror.
//! - [`own_writes`]: copy and Mirror writes the caches have not seen yet, so none is made twice.
//! - [`progress`]: a long fan-out's progress, reported in the status.
//! - [`secret_targets`]: the Secret names skiff may write (`--secret-target-names`).
//! - [`secret_copies`]: Secret copies, watched one allowed name at a time.
mod apply;
pub mod caches;
mod conflicts;
pub mod controller;
pub mod copy;
pub mod enqueue;
pub mod memory;
pub mod own_writes;
pub mod plan;
mod progress;
pub mod reconcile;
pub mod secret_copies;
pub mod secret_targets;
pub mod selection;
pub mod selector;
pub mod status;
pub mod types;

pub use caches::SourceScope;
pub use controller::runnable;
pub use secret_targets::SecretTargets;
pub use types::{Mirror, MirrorSpec, MirrorStatus, SourceKind};
