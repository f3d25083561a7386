//! The Mirror controller: copies one ConfigMap or Secret, or an object of a kind `--kinds`
//! enables, into every selected namespace.
//!
//! Listed from the top down: a module uses only those listed after it, so the list can be read
//! in order, and each module understood from what comes after.
//!
//! - [`controller`]: the runnable the manager starts: watches → caches → workers.
//!
//! Reconciling one Mirror:
//! - [`reconcile`]: the Reconciler decides (refusals, the desired copy, the plan) and hands
//!   the writes to the modules below.
//! - `apply`: the Applier carries out a plan (creates, updates, deletes, a fan-out's
//!   progress); under it, updating a copy, meeting an object at a create (adoption), and
//!   replacing a copy the server will not update.
//! - [`mirror_writer`]: the writes to a Mirror itself: its status and finalizer.
//! - [`announce`]: the Events a reconcile posts on its Mirror.
//! - `conflicts`: objects with a copy's name that skiff must not touch, found and announced
//!   once; [`known_conflicts`] keeps what is known of them per Mirror.
//! - [`contest`]: copies another writer keeps changing back, and the backoff of their
//!   restorations.
//! - [`own_writes`]: copy and Mirror writes the caches have not seen yet, so none is made twice.
//! - [`copy_requests`]: the API requests on a copy, whatever its kind.
//!
//! Self-service:
//! - [`consent`]: tenant Mirrors (offers), which copy only where an acceptance consents, and
//!   the acceptances' statuses; [`acceptance`]: the `MirrorAcceptance` resource and its index;
//!   [`offers`]: the admin's guardrails, and which Mirrors a namespace's offer label wakes;
//!   [`tenant_sources`]: the sources tenants offer, watched by their label.
//!
//! Watching:
//! - [`caches`]: what is watched and kept; [`source_stores`]: the sources of one kind, and
//!   where they may be read from.
//! - [`enqueue`]: which Mirrors each watch event concerns.
//! - [`secret_copies`]: Secret copies, watched one allowed name at a time.
//! - [`kit_caches`]: sources and copies of the enabled kit kinds, watched only when enabled.
//! - [`index`]: how the caches are asked which Mirrors read a source or want a name, and which
//!   copies a Mirror owns.
//! - [`selection`]: each Mirror's selected namespaces, kept up to date event by event;
//!   [`namespace_selector`]: which namespaces a Mirror's selector selects, one at a time;
//!   [`namespace`]: what the namespace cache keeps of a namespace to decide it.
//!
//! What a Mirror wants, and what a copy is:
//! - [`plan`]: which copies to create, update and delete, and where the conflicts are.
//! - [`secret_targets`]: the Secret names skiff may write (`--secret-target-names`).
//! - [`existing`]: an object holding a copy's name, read from the server, and what skiff may
//!   do with it (update, adopt, replace, leave alone).
//! - [`copy_body`]: the body of a copy's create, its content serialized once and shared.
//! - [`render`]: the object skiff creates and the patch that updates a copy.
//! - [`desired`]: what a Mirror wants its copies to hold (picked keys, labels and
//!   annotations), or why it must copy nothing.
//! - [`status`]: the counts and `Ready` condition a Mirror reports, or the refusal it reports
//!   instead of copying.
//! - [`source`]: what the source cache keeps of a source; [`carry`]: which of the source's own
//!   labels and annotations may go with its copies.
//! - [`copy`]: the labels that mark a copy as skiff's, and what the copy cache keeps of it;
//!   [`managed`]: the labels and annotations of a copy that are skiff's, recorded on the copy.
//! - [`kinds`]: the kinds `--kinds` may enable and the roles `--bindable-roles` names;
//!   [`kit_table`]: their API versions and copied fields; [`kit_types`]: their API types,
//!   reached from a [`SourceKind`]; [`binding_guard`]: where and to whom a RoleBinding copy
//!   may bind, as the admission policy `skiff-rolebindings` allows.
//! - [`payload`]: the content a copy carries, and its hash.
//! - [`types`]: the `Mirror` custom resource.
pub mod acceptance;
pub mod announce;
mod apply;
pub mod binding_guard;
pub mod caches;
pub mod carry;
mod conflicts;
pub mod consent;
pub mod contest;
pub mod controller;
pub mod copy;
pub mod copy_body;
pub mod copy_names;
pub mod copy_requests;
pub mod desired;
pub mod enqueue;
pub mod existing;
#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod golden;
pub mod index;
mod interner;
pub mod kind_caches;
pub mod kinds;
pub mod known_conflicts;
pub mod managed;
pub mod mirror_writer;
pub mod named_stores;
pub mod namespace;
pub mod namespace_selector;
pub mod offers;
pub mod own_writes;
mod owners;
pub mod payload;
pub mod plan;
pub mod reconcile;
pub mod render;
pub mod secret_targets;
pub mod selection;
pub mod source;
pub mod source_stores;
pub mod status;
pub mod tenancy;
pub mod types;
pub mod version;

pub use caches::SourceScope;
pub use controller::runnable;
pub use kinds::KindChecks;
pub use secret_targets::SecretTargets;
pub use types::{Mirror, MirrorSpec, MirrorStatus, SourceKind};
