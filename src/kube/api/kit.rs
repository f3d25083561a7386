//! The "namespace kit" kinds a Mirror may copy besides ConfigMaps and Secrets: NetworkPolicy,
//! LimitRange, ResourceQuota, RoleBinding and ServiceAccount.
//!
//! They share one shape, [`KitObject`]: metadata and the top-level fields a user sets (`spec`,
//! or a RoleBinding's `subjects` and `roleRef`, a ServiceAccount's `imagePullSecrets` and
//! `automountServiceAccountToken`), decoded as plain JSON. `status` and a ServiceAccount's
//! `secrets` are never decoded, so a ResourceQuota's `status.used` costs nothing. Each kind is a transparent newtype
//! of it, so the client can address the kind's endpoints while the decoding code is compiled in
//! once for all five.

use super::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An object of a kit kind: its metadata and its user-set content.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KitObject {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub metadata: ObjectMeta,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subjects: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role_ref: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_pull_secrets: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub automount_service_account_token: Option<Value>,
}

impl KitObject {
    /// The content field named as on the wire (`spec`, `subjects`, `roleRef`, ...).
    pub fn field(&self, name: &str) -> Option<&Value> {
        match name {
            "spec" => self.spec.as_ref(),
            "subjects" => self.subjects.as_ref(),
            "roleRef" => self.role_ref.as_ref(),
            "imagePullSecrets" => self.image_pull_secrets.as_ref(),
            "automountServiceAccountToken" => self.automount_service_account_token.as_ref(),
            _ => None,
        }
    }

    /// Sets the content field named as on the wire; other names are ignored.
    pub fn set_field(&mut self, name: &str, value: Value) {
        match name {
            "spec" => self.spec = Some(value),
            "subjects" => self.subjects = Some(value),
            "roleRef" => self.role_ref = Some(value),
            "imagePullSecrets" => self.image_pull_secrets = Some(value),
            "automountServiceAccountToken" => self.automount_service_account_token = Some(value),
            _ => {}
        }
    }
}

/// Every kit kind is watched and cached as this one type, so the watch machinery is compiled
/// in once for all five: a watch names its kind's collection by path (`ApiSource::at`). Its
/// `url_path` addresses nothing; requests on one object go through the kind's own type below.
impl super::Resource for KitObject {
    const API_VERSION: &'static str = "kit.skiff.dev/addressed-by-kind";
    const KIND: &'static str = "KitObject";
    const PLURAL: &'static str = "addressed-by-kind";
    const NAMESPACED: bool = true;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

macro_rules! kit_kind {
    ($(#[$doc:meta])* $ty:ident, $api_version:expr, $kind:expr, $plural:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $ty(pub KitObject);

        impl $crate::kube::api::Resource for $ty {
            const API_VERSION: &'static str = $api_version;
            const KIND: &'static str = $kind;
            const PLURAL: &'static str = $plural;
            const NAMESPACED: bool = true;
            fn metadata(&self) -> &ObjectMeta {
                &self.0.metadata
            }
            fn metadata_mut(&mut self) -> &mut ObjectMeta {
                &mut self.0.metadata
            }
        }
    };
}

kit_kind!(
    /// `networking.k8s.io/v1` NetworkPolicy.
    NetworkPolicy,
    "networking.k8s.io/v1",
    "NetworkPolicy",
    "networkpolicies"
);
kit_kind!(
    /// `v1` LimitRange.
    LimitRange,
    "v1",
    "LimitRange",
    "limitranges"
);
kit_kind!(
    /// `v1` ResourceQuota.
    ResourceQuota,
    "v1",
    "ResourceQuota",
    "resourcequotas"
);
kit_kind!(
    /// `rbac.authorization.k8s.io/v1` RoleBinding.
    RoleBinding,
    "rbac.authorization.k8s.io/v1",
    "RoleBinding",
    "rolebindings"
);
kit_kind!(
    /// `v1` ServiceAccount.
    ServiceAccount,
    "v1",
    "ServiceAccount",
    "serviceaccounts"
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::Resource;

    #[test]
    fn status_is_not_decoded_and_content_round_trips() {
        let json = r#"{"apiVersion":"v1","kind":"ResourceQuota",
            "metadata":{"name":"q","namespace":"a"},
            "spec":{"hard":{"pods":"10"}},"status":{"used":{"pods":"3"}}}"#;
        let q: ResourceQuota = serde_json::from_str(json).expect("valid quota");
        assert_eq!(q.0.spec, Some(serde_json::json!({"hard": {"pods": "10"}})));
        let back = serde_json::to_value(&q).expect("encodes");
        assert!(back.get("status").is_none());
        assert_eq!(
            RoleBinding::url_path(Some("a"), Some("b")),
            "/apis/rbac.authorization.k8s.io/v1/namespaces/a/rolebindings/b"
        );
    }
}
