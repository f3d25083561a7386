//! Test support shared by the integration and e2e tests: the in-repo fake Kubernetes API
//! server, a real control plane (etcd + kube-apiserver built from Go modules), kubectl, and
//! running the built binary against either.
#![allow(dead_code)]

pub mod audit;
pub mod bench;
pub mod cluster;
pub mod control_plane;
pub mod fake;
pub mod fault_proxy;
pub mod fleet;
pub mod flood;
pub mod helm;
pub mod hostile_proxy;
pub mod keepalive;
pub mod kubectl;
pub mod lease;
pub mod load;
pub mod metrics_reader;
pub mod mirror_e2e;
pub mod node;
pub mod peer;
// The certificates the unit tests use, shared as they are: one file, made for both.
#[path = "../../src/testing/pem.rs"]
pub mod pem;
pub mod plugin;
pub mod pod;
pub mod ports;
pub mod proxy;
pub mod renewals;
pub mod scrape;
pub mod skiff;
pub mod socks;
pub mod suites;
pub mod tenants;
pub mod thief;
pub mod vitals;
pub mod watchdog;
