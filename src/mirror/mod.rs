//! The Mirror controller: copies one object of a kind skiff copies (a row of [`crate::kind`])
//! into every selected namespace.
//!
//! Declared from the top down: a module uses only those declared after it, so the list can be
//! read in order, and each module understood from what comes after. `make lint` checks it
//! (`hack/cycles.py`); rustfmt keeps the order (`rustfmt.toml`).
//!
//! Reconciling one Mirror:
//! - [`controller`]: the runnable the manager starts: watches → caches → workers.
//! - [`reconcile`]: the Reconciler decides (refusals, the desired copy, the plan) and hands
//!   the writes to the modules below.
//! - [`refusals`]: why a Mirror may copy nothing at all, by whose it is.
//! - [`fleet_status`]: a fleet Mirror's reconcile on its hub, and its status by cluster.
//! - [`placer`]: a hub's fleet Mirrors (`spec.clusterSelector`): their Placements written in
//!   the member clusters' namespaces, withdrawn by tombstone, and counted per cluster;
//!   [`fleet_metrics`]: the hub's metrics by cluster.
//! - [`tenancy`]: whose the Mirror is (an admin's, or a tenant's offer), decided once per
//!   reconcile: where its copies go and what they are named.
//! - [`consent`]: tenant offers, which copy only where an acceptance consents, and the
//!   acceptances' statuses.
//! - [`kind_checks`]: what a Mirror meets before any write, by its kind's row.
//! - `conflicts`: objects with a copy's name that skiff must not touch, found and announced
//!   once; [`known_conflicts`] keeps what is known of them per Mirror.
//! - `apply`: the Applier carries out a plan (creates, updates, deletes, a fan-out's
//!   progress); under it, updating a copy, meeting an object at a create (adoption), and
//!   replacing a copy the server will not update.
//! - [`orphan`]: the copies of a deleted Mirror left in place without skiff's marks
//!   (`spec.deletionPolicy: Orphan`).
//! - [`mirror_writer`]: the writes to a Mirror itself: its status and finalizer.
//! - [`announce`]: the Events a reconcile posts on its Mirror; [`cluster_troubles`]: which
//!   member clusters a hub last announced silent or failing, so each change is said once.
//!
//! Watching:
//! - [`caches`]: what is watched and kept; [`kind_caches`]: the caches of one kind;
//!   [`named_stores`]: a kind's stores, one per allowed name where RBAC grants it by name;
//!   [`source_stores`]: the sources of one kind, and where they may be read from.
//! - [`enqueue`]: which Mirrors each watch event concerns; [`index`]: how the caches are asked
//!   which Mirrors read a source or want a name, and which copies a Mirror owns.
//! - [`selection`]: each Mirror's selected namespaces, kept up to date event by event.
//! - [`offers`]: the sources tenants offer, and which Mirrors a namespace's offer label wakes.
//! - [`namespace_selector`]: which namespaces a Mirror's selector selects, one at a time;
//!   [`namespace`]: what the namespace cache keeps of a namespace to decide it.
//! - [`acceptance`]: the `MirrorAcceptance` resource and its index.
//! - [`placed`]: a member's share of its hub, read through the hub client: each `Placement`
//!   read as the Mirror it stands for, and its source; [`placement`]: the `Placement`
//!   resource.
//!
//! What a Mirror wants, and what a copy is:
//! - [`secret_targets`]: the names skiff may write of a kind RBAC grants by name
//!   (`--secret-target-names`); [`binding_guard`]: where and to whom a RoleBinding copy may
//!   bind, as the admission policy `skiff-rolebindings` allows.
//! - [`copy_requests`]: the API requests on a copy, through its kind's row.
//! - [`existing`]: an object holding a copy's name, read from the server, and what skiff may
//!   do with it (update, adopt, replace, leave alone).
//! - [`copy_body`]: the body of a copy's create, its content serialized once and shared;
//!   [`render`]: the object skiff creates and the patch that updates a copy.
//! - [`desired`]: what a Mirror wants its copies to hold, or why it must copy nothing;
//!   [`projection`]: a Secret's certificates published as a ConfigMap (`spec.target.kind`);
//!   [`source`]: what the source cache keeps of a source; [`carry`]: which of the source's own
//!   labels and annotations may go with its copies.
//! - [`status`]: the counts and `Ready` condition a Mirror reports, or its refusal;
//!   [`contest`]: copies another writer keeps changing back, and their restorations' backoff.
//! - [`plan`]: which copies to create, update and delete, and where the conflicts are.
//! - [`own_writes`]: copy writes the caches have not seen yet, so none is made twice.
//! - [`copy_names`]: the name a Mirror's copy takes in each namespace.
//! - [`copy`]: the labels that mark a copy as skiff's, and what the copy cache keeps of it.
//! - [`payload`]: the content a copy carries, as its row lists it, and its hash.
//! - [`owners`]: one shared owner per Mirror for every copy cached of it.
//! - [`types`]: the `Mirror` custom resource.
//! - [`managed`]: the labels and annotations of a copy that are skiff's, recorded on the copy.
pub mod controller;
pub mod reconcile;
pub mod refusals;
pub mod fleet_status;
pub mod placer;
pub mod fleet_metrics;
pub mod tenancy;
pub mod consent;
pub mod kind_checks;
mod conflicts;
pub mod known_conflicts;
mod apply;
pub mod orphan;
pub mod mirror_writer;
pub mod announce;
pub mod cluster_troubles;
pub mod caches;
pub mod kind_caches;
pub mod named_stores;
pub mod source_stores;
pub mod enqueue;
pub mod index;
pub mod selection;
pub mod offers;
pub mod namespace_selector;
pub mod namespace;
pub mod acceptance;
pub mod placed;
pub mod placement;
pub mod secret_targets;
pub mod binding_guard;
pub mod copy_requests;
pub mod existing;
pub mod copy_body;
pub mod render;
pub mod desired;
pub mod projection;
pub mod source;
pub mod carry;
pub mod status;
pub mod contest;
pub mod plan;
pub mod own_writes;
pub mod copy_names;
pub mod copy;
pub mod payload;
mod owners;
pub mod types;
pub mod managed;
#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod golden;

pub use caches::SourceScope;
pub use controller::runnable;
pub use kind_checks::KindChecks;
pub use secret_targets::SecretTargets;
pub use types::{Mirror, MirrorSpec, MirrorStatus, SourceKind};
