//! What is released beside the binary: the Helm chart (rendered by a real Helm and compared with
//! what kustomize builds) and the static binary's SBOM. One test program, a module each.

#[path = "../support/mod.rs"]
mod support;

mod helm_chart;
mod networkpolicy;
mod sbom;
