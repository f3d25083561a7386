//! e2e: skiff against a real control plane (etcd and kube-apiserver built from Go modules by
//! `make testbin`), one module per suite; shared helpers in `tests/support`.
//!
//! Each suite starts a control plane of its own and may change cluster-wide state (the
//! operator's Lease, Mirrors selecting every namespace, `make deploy`), so suites never share
//! one. `make test` runs each suite in a process of its own, two at a time
//! (`hack/test-lanes.py`); a plain `cargo test --test e2e` runs them one after another in one
//! process (`support::suites`). One suite alone: `cargo test --test e2e -- faults::`.

#[path = "../support/mod.rs"]
mod support;

mod arm64;
mod container;
mod contest;
mod control_plane;
mod demo;
mod deploy;
mod exec_proxy;
mod faults;
mod fleet;
mod fleet_copies;
mod flowcontrol;
mod helm;
mod hostile_ports;
mod hostile_proxy;
mod impersonation;
mod kinds;
mod leader;
mod manifests;
mod metrics;
mod mirror;
mod mirror_metadata;
mod mirror_takeover;
mod node;
mod orphan;
mod policy;
mod projection;
mod rbac;
mod secret_targets;
mod self_service;
mod throttled;
mod upgrade;
mod write_replies;
