//! The kit kinds as Rust types: which [`SourceKind`] each API type is, and a way to run code
//! written once against the type of a kind known only at run time.
//!
//! The client's requests are generic over the API type; the Mirror controller asks by
//! [`SourceKind`]. [`with_kit_type!`] bridges the two for requests on one object (get, create,
//! patch, delete), one match in each place that needs it, and every kit type shares one decoder
//! ([`KitObject`]'s), so each kind costs only the thin generic code over it. Watches and stores
//! need no such bridge: they keep every kind as [`KitObject`] (see [`super::kit_caches`]).

use super::types::SourceKind;
use crate::kube::api::{
    KitObject, LimitRange, NetworkPolicy, Resource, ResourceQuota, RoleBinding, ServiceAccount,
};

/// An API type of a kit kind.
pub trait KitResource: Resource + Clone {
    const SOURCE_KIND: SourceKind;

    fn object(&self) -> &KitObject;

    fn from_object(object: KitObject) -> Self;
}

macro_rules! kit_resource {
    ($($ty:ident),*) => {$(
        impl KitResource for $ty {
            const SOURCE_KIND: SourceKind = SourceKind::$ty;
            fn object(&self) -> &KitObject {
                &self.0
            }
            fn from_object(object: KitObject) -> Self {
                $ty(object)
            }
        }
    )*};
}

kit_resource!(
    NetworkPolicy,
    LimitRange,
    ResourceQuota,
    RoleBinding,
    ServiceAccount
);

/// Evaluates `$body` with `$t` the API type of the kit kind `$kind`, or `$other` when `$kind`
/// is a ConfigMap or a Secret.
macro_rules! with_kit_type {
    ($kind:expr, $t:ident => $body:expr, else $other:expr) => {
        match $kind {
            $crate::mirror::types::SourceKind::NetworkPolicy => {
                type $t = $crate::kube::api::NetworkPolicy;
                $body
            }
            $crate::mirror::types::SourceKind::LimitRange => {
                type $t = $crate::kube::api::LimitRange;
                $body
            }
            $crate::mirror::types::SourceKind::ResourceQuota => {
                type $t = $crate::kube::api::ResourceQuota;
                $body
            }
            $crate::mirror::types::SourceKind::RoleBinding => {
                type $t = $crate::kube::api::RoleBinding;
                $body
            }
            $crate::mirror::types::SourceKind::ServiceAccount => {
                type $t = $crate::kube::api::ServiceAccount;
                $body
            }
            $crate::mirror::types::SourceKind::ConfigMap
            | $crate::mirror::types::SourceKind::Secret => $other,
        }
    };
}
pub(crate) use with_kit_type;
