//! Test support shared by the integration tests: the in-repo fake Kubernetes API server, and
//! running the built binary against it.
#![allow(dead_code)]

pub mod cluster;
pub mod fake;
pub mod skiff;
