//! Test support shared by the integration tests: the in-repo fake Kubernetes API server.
#![allow(dead_code)]

pub mod fake;
