//! skiff: a small Kubernetes operator whose leader election keeps working when the API server
//! is under stress.
//!
//! The crate is laid out as its architecture (`docs/ARCHITECTURE.md`: the layers, one change
//! traced end to end, and the invariants with the tests that pin them). Listed from the top
//! down, as the modules are declared below: a module uses only those listed after it
//! (`hack/cycles.py` checks it), so each is understood from what comes after.
//! - `fuzzing`: entry points for the fuzzers in `fuzz/` (built for them and for tests only).
//! - [`replica`]: one replica's clients, wired as the binary runs them (fenced main client,
//!   elector on a lease client of its own).
//! - [`fleet`]: the fleet's clients: a member's to its hub, a hub's for its Placements.
//! - [`manager`]: lifecycle and ordering: elect, run controllers, stop them, release, return.
//! - [`pod_deletion`]: the own Pod marked for deletion, a shutdown signal before SIGTERM.
//! - [`policy_check`]: at start, whether an admission policy holds the token to skiff's own
//!   objects (`--require-write-policy`).
//! - [`serve`]: the `/healthz`, `/readyz` and `/metrics` HTTP server.
//! - [`mirror`]: the Mirror controller (types, selection, plan, status).
//! - [`flags`]: kubebuilder's flags, validated into [`flags::Settings`], which the controllers
//!   read.
//! - [`kind`]: the kinds skiff copies, one row each of one table, and the flags that name them.
//! - [`runtime`]: watcher → store → work queue → controller, the general controller machinery.
//! - [`leader`]: Lease lock, Elector, the Fence that refuses writes once leadership may be lost.
//! - [`kube`]: the hand-written API client. The lease client is derived from the base config
//!   and owns its connector, pool and token bucket, so lease traffic never queues behind
//!   controller traffic.
//! - [`version`]: the version and git revision skiff reports.
//! - [`metrics`]: counters, gauges and histograms in the Prometheus text format.
//! - [`log`]: the logger (text or JSON lines on stderr, bearer tokens scrubbed).
//! - [`signal`]: the one-shot signal shutdown is told with, at every level.
//! - [`clock`]: where timers and deadlines read the time: real in the binary, moved by hand in
//!   tests.
//! - [`deadline`]: timeouts on futures, one way everywhere.
//! - [`random`]: identity suffixes and retry jitter.
//! - [`time`]: RFC 3339 timestamps for the wire and logs.
//! - [`duration`]: Go-syntax durations, as the flags take them.
//! - [`fd_limit`]: the open-file limit, raised at start to the hard limit.
//! - [`heap`]: one malloc arena, and free memory returned to the system.
//! - [`stack`]: stack pages a thread touched below its frame, handed back.
//! - `hooked`: a stream read through a hook, the one reader the guarding wrappers share.
//!
//! For tests only: `property` (property tests without a framework) and `testing` (what the
//! unit tests share).
// Unsafe code is denied everywhere but the files that call C: `heap` (the allocator), `stack`
// (madvise) and `kube::tls_buffers` (OpenSSL).
#![deny(unsafe_code)]

#[cfg(any(test, fuzzing))]
pub mod fuzzing;
pub mod replica;
pub mod fleet;
pub mod manager;
pub mod pod_deletion;
pub mod policy_check;
pub mod serve;
pub mod mirror;
pub mod flags;
pub mod kind;
pub mod runtime;
pub mod leader;
pub mod kube;
pub mod version;
pub mod metrics;
pub mod log;
pub mod signal;
pub mod clock;
pub mod deadline;
pub mod random;
pub mod time;
pub mod duration;
pub mod fd_limit;
pub mod heap;
pub mod stack;
mod hooked;
#[cfg(test)]
mod property;
#[cfg(test)]
mod testing;
