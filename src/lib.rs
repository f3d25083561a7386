//! skiff: a small Kubernetes operator whose leader election keeps working when the API server
//! is under stress.
//!
//! The crate is laid out as its architecture (`docs/ARCHITECTURE.md`: the layers, one change
//! traced end to end, and the invariants with the tests that pin them):
//! - [`kube`]: the hand-written API client. The lease client is derived from the base config
//!   and owns its connector, pool and token bucket, so lease traffic never queues behind
//!   controller traffic.
//! - [`leader`]: Lease lock, Elector, the Fence that refuses writes once leadership may be lost.
//! - [`metrics`]: counters, gauges and histograms in the Prometheus text format.
//! - [`runtime`]: watcher → store → work queue → controller, the general controller machinery.
//! - [`mirror`]: the Mirror controller (types, selection, plan, status).
//! - [`clock`]: where timers and deadlines read the time: real in the binary, moved by hand in
//!   tests.
//! - [`deadline`]: timeouts on futures, one way everywhere.
//! - [`time`]: RFC 3339 timestamps for the wire and logs; [`random`]: identity suffixes and
//!   retry jitter.
//! - [`flags`]: kubebuilder's flags, validated into [`flags::Settings`]; [`duration`] parses
//!   their Go-syntax durations.
//! - [`log`]: the logger (text or JSON lines on stderr, bearer tokens scrubbed).
//! - [`serve`]: the `/healthz`, `/readyz` and `/metrics` HTTP server.
//! - [`signal`]: the one-shot signal shutdown is told with, at every level.
//! - [`replica`]: one replica's clients, wired as the binary runs them (fenced main client,
//!   elector on a lease client of its own).
//! - [`manager`]: lifecycle and ordering: elect, run controllers, stop them, release, return.
//! - [`pod_deletion`]: the own Pod marked for deletion, a shutdown signal before SIGTERM.
//! - [`version`]: the version and git revision skiff reports.
//! - [`heap`]: one malloc arena, and free memory returned to the system.
//! - [`fd_limit`]: the open-file limit, raised at start to the hard limit.
// Unsafe code is denied everywhere but `heap`, the one place that calls the C allocator.
#![deny(unsafe_code)]

pub mod clock;
pub mod deadline;
pub mod duration;
pub mod fd_limit;
pub mod flags;
#[cfg(any(test, fuzzing))]
pub mod fuzzing;
pub mod heap;
mod hooked;
pub mod kube;
pub mod leader;
pub mod log;
pub mod manager;
pub mod metrics;
pub mod mirror;
pub mod pod_deletion;
#[cfg(test)]
mod property;
pub mod random;
pub mod replica;
pub mod runtime;
pub mod serve;
pub mod signal;
pub mod stack;
#[cfg(test)]
mod testing;
pub mod time;
pub mod version;
