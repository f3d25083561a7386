//! Leader election on a `coordination.k8s.io/v1` Lease: client-go's semantics, then beyond.
//!
//! - [`timing`]: lease duration, renew deadline, retry period, validated together.
//! - [`identity`]: this replica's holder name.
//! - [`record`]: the observed lease and its expiry by *local* monotonic observation.
//! - [`lock`]: [`LeaseApi`] and the [`LeaseLock`] over it; [`api`]: `LeaseApi` for the
//!   dedicated lease client.
//! - [`elector`]: acquire, keep renewing, release; [`standby`]: the wait between attempts.
//! - [`announce`]: the "became leader" Event, in the background on the main client.
//! - [`deletion_cost`]: the leader's Pod deleted last in a rollout, in the background.
//! - [`fence`]: refuses the main client's writes once leadership may be lost; `/healthz` check.
pub mod announce;
pub mod api;
pub mod deletion_cost;
pub mod elector;
pub mod fence;
pub mod identity;
pub mod lock;
pub mod record;
pub mod standby;
pub mod timing;

#[cfg(test)]
pub(crate) mod fake;

pub use announce::Announcer;
pub use api::ClientLeaseApi;
pub use deletion_cost::DeletionCost;
pub use elector::{Elector, LeaderLost};
pub use fence::Fence;
pub use identity::identity;
pub use lock::{Attempt, LeaseApi, LeaseLock};
pub use record::ObservedLease;
pub use timing::{InvalidTiming, Timing};
