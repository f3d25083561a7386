//! The hand-written Kubernetes API client.
//!
//! - [`error`]: one error enum; which errors are retryable is written on the type.
//! - [`api`]: the typed objects skiff reads and writes.
//! - [`params`]: LIST and WATCH query parameters; [`watch`]: decoded watch events.
//! - [`guard`]: the hook that lets the leader-election fence refuse writes.
pub mod api;
pub mod error;
pub mod guard;
pub mod params;
pub mod ratelimit;
pub mod watch;

pub use error::Error;
pub use guard::WriteGuard;
pub use params::{ListParams, WatchParams};
pub use ratelimit::TokenBucket;
pub use watch::Event;
