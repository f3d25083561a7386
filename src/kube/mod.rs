//! The hand-written Kubernetes API client.
//!
//! - [`error`]: one error enum; which errors are retryable is written on the type.
//! - [`api`]: the typed objects skiff reads and writes.
pub mod api;
pub mod error;

pub use error::Error;
