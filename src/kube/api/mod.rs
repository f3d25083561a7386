//! Typed Kubernetes objects: the few kinds skiff reads and writes, and the envelope types
//! (lists, watch events, `Status`) every kind shares.
//!
//! Fields skiff does not use are kept in `extra` maps where skiff writes the object back
//! (metadata, Lease spec), so a PUT never drops what a newer server or another client set;
//! the exception is metadata's `managedFields`, read for one name and never built
//! (`meta_decode.rs`, `field_manager.rs`) because it is the bulk of every real object and the
//! server keeps it when an update omits it.

mod core;
mod field_manager;
mod label_selector;
mod lease;
mod meta;
mod meta_decode;
mod object;
mod review;
mod version;

pub use core::{
    ConfigMap, CoreEvent, EventSource, Namespace, NamespaceStatus, ObjectReference, PodMeta, Secret,
};
pub use field_manager::FieldManager;
pub use label_selector::{LabelSelector, LabelSelectorRequirement};
pub use lease::{Lease, LeaseSpec};
pub use meta::{ListMeta, ObjectList, ObjectMeta, OwnerReference, Status, WatchFrame};
pub use object::Object;
pub use review::{SubjectAccessReview, TokenReview};
pub use version::Version;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// What the client needs to know to address a kind's REST endpoints.
pub trait Resource: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// `v1` for the core group, `group/version` otherwise.
    const API_VERSION: &'static str;
    const KIND: &'static str;
    /// The lower-case plural in URLs (`configmaps`).
    const PLURAL: &'static str;
    const NAMESPACED: bool;

    fn metadata(&self) -> &ObjectMeta;
    fn metadata_mut(&mut self) -> &mut ObjectMeta;

    /// The URL path of the collection (`name = None`) or of one object.
    ///
    /// `namespace` is ignored for cluster-scoped kinds; `None` on a namespaced kind addresses
    /// the collection across all namespaces.
    fn url_path(namespace: Option<&str>, name: Option<&str>) -> String {
        let mut path = if Self::API_VERSION.contains('/') {
            format!("/apis/{}", Self::API_VERSION)
        } else {
            format!("/api/{}", Self::API_VERSION)
        };
        if let (true, Some(ns)) = (Self::NAMESPACED, namespace) {
            path.push_str("/namespaces/");
            path.push_str(ns);
        }
        path.push('/');
        path.push_str(Self::PLURAL);
        if let Some(name) = name {
            path.push('/');
            path.push_str(name);
        }
        path
    }
}

/// Implements [`Resource`] for a struct with a `metadata: ObjectMeta` field.
#[macro_export]
macro_rules! impl_resource {
    ($ty:ty, $api_version:expr, $kind:expr, $plural:expr, namespaced = $ns:expr) => {
        impl $crate::kube::api::Resource for $ty {
            const API_VERSION: &'static str = $api_version;
            const KIND: &'static str = $kind;
            const PLURAL: &'static str = $plural;
            const NAMESPACED: bool = $ns;
            fn metadata(&self) -> &$crate::kube::api::ObjectMeta {
                &self.metadata
            }
            fn metadata_mut(&mut self) -> &mut $crate::kube::api::ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_paths_follow_the_group_and_scope() {
        assert_eq!(
            Lease::url_path(Some("skiff-system"), Some("skiff-leader")),
            "/apis/coordination.k8s.io/v1/namespaces/skiff-system/leases/skiff-leader"
        );
        assert_eq!(ConfigMap::url_path(None, None), "/api/v1/configmaps");
        assert_eq!(
            Namespace::url_path(Some("ignored"), Some("a")),
            "/api/v1/namespaces/a"
        );
    }
}
