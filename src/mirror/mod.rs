//! The Mirror controller: copies one ConfigMap or Secret into every selected namespace.
//!
//! - [`types`]: the `Mirror` custom resource.
//! - [`selector`]: which namespaces a Mirror selects.
//! - [`copy`]: payload, content hash and the labels that mark a copy as skiff's.
//! - [`plan`]: which copies to create, update and delete, and where the conflicts are.
//! - [`status`]: the counts and `Ready` condition a Mirror reports.
//! - [`written`]: writes the copy cache has not seen yet, so none is made twice.
pub mod copy;
pub mod plan;
pub mod selector;
pub mod status;
pub mod types;
pub mod written;

pub use types::{Mirror, MirrorSpec, MirrorStatus, SourceKind};
