//! The table of kit kinds: for each, the API version skiff uses and the top-level fields a
//! user sets, which are all a copy carries (see [`super::kinds`] for why the table is fixed).

use super::types::SourceKind;

/// A kind skiff can copy when enabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KitKind {
    pub kind: SourceKind,
    /// The resource as RBAC and `--kinds` name it.
    pub resource: &'static str,
    /// The API group; empty for the core group.
    pub group: &'static str,
    pub version: &'static str,
    /// The top-level fields a copy carries, as on the wire.
    pub fields: &'static [&'static str],
}

impl KitKind {
    /// The URL path of this kind's collection in `namespace`, or across all (`None`).
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        let mut path = match self.group {
            "" => format!("/api/{}", self.version),
            group => format!("/apis/{group}/{}", self.version),
        };
        if let Some(ns) = namespace {
            path.push_str("/namespaces/");
            path.push_str(ns);
        }
        path.push('/');
        path.push_str(self.resource);
        path
    }

    /// `resource.group`, or `resource` for the core group: the `--kinds` spelling.
    pub fn flag_name(&self) -> String {
        match self.group {
            "" => self.resource.to_owned(),
            group => format!("{}.{group}", self.resource),
        }
    }
}

/// Every kind `--kinds` can enable.
pub const TABLE: [KitKind; 5] = [
    KitKind {
        kind: SourceKind::NetworkPolicy,
        resource: "networkpolicies",
        group: "networking.k8s.io",
        version: "v1",
        fields: &["spec"],
    },
    KitKind {
        kind: SourceKind::LimitRange,
        resource: "limitranges",
        group: "",
        version: "v1",
        fields: &["spec"],
    },
    KitKind {
        kind: SourceKind::ResourceQuota,
        resource: "resourcequotas",
        group: "",
        version: "v1",
        fields: &["spec"],
    },
    KitKind {
        kind: SourceKind::RoleBinding,
        resource: "rolebindings",
        group: "rbac.authorization.k8s.io",
        version: "v1",
        fields: &["subjects", "roleRef"],
    },
    // Never `secrets`: the server's token controller may fill it in, and a token is no copy.
    KitKind {
        kind: SourceKind::ServiceAccount,
        resource: "serviceaccounts",
        group: "",
        version: "v1",
        fields: &["imagePullSecrets", "automountServiceAccountToken"],
    },
];

/// The kit kind `kind`'s entry in [`TABLE`] (none for ConfigMap and Secret).
pub fn kit(kind: SourceKind) -> Option<&'static KitKind> {
    TABLE.iter().find(|k| k.kind == kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::{LimitRange, NetworkPolicy, Resource};

    #[test]
    fn collection_paths_are_the_kinds_own() {
        let policy = kit(SourceKind::NetworkPolicy).expect("in the table");
        assert_eq!(
            policy.collection_path(Some("a")),
            NetworkPolicy::url_path(Some("a"), None)
        );
        let limits = kit(SourceKind::LimitRange).expect("in the table");
        assert_eq!(
            limits.collection_path(None),
            LimitRange::url_path(None, None)
        );
        assert_eq!(kit(SourceKind::ConfigMap), None);
    }
}
