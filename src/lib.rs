//! skiff: a small Kubernetes operator whose leader election keeps working when the API server
//! is under stress.
//!
//! The crate is laid out as its architecture (see the README):
//! - [`kube`]: the hand-written API client. The lease client is derived from the base config
//!   and owns its connector, pool and token bucket, so lease traffic never queues behind
//!   controller traffic.
//! - [`metrics`]: counters, gauges and histograms in the Prometheus text format.
//! - [`runtime`]: watcher → store → work queue → controller, the general controller machinery.
#![forbid(unsafe_code)]

pub mod kube;
pub mod metrics;
pub mod runtime;
