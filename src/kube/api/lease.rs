//! `coordination.k8s.io/v1` Lease: the lock behind leader election.

use super::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Lease {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub metadata: ObjectMeta,
    pub spec: LeaseSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LeaseSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder_identity: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_duration_seconds: Option<i32>,
    /// MicroTime: RFC 3339 with microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acquire_time: Option<String>,
    /// MicroTime: RFC 3339 with microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renew_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_transitions: Option<i32>,
    /// Fields of newer API versions (strategy, preferredHolder), kept on PUT.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

crate::impl_resource!(
    Lease,
    "coordination.k8s.io/v1",
    "Lease",
    "leases",
    namespaced = true
);
