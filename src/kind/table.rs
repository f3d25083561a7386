//! The table: one row per kind skiff copies, in [`SourceKind`]'s order.

use super::SourceKind;
use super::certificates::only_certificates;
use super::row::{EnabledBy, Field, Guard, HashHead, Kind, NameRule, Projection, Reserved, Shape};
use crate::kube::PatchKind;

const KEYS: Shape = Shape::Keys;
const VALUE: Shape = Shape::Value;

/// A field the server lets an update change.
const fn field(name: &'static str, shape: Shape) -> Field {
    Field {
        name,
        shape,
        fixed: false,
    }
}

/// A field the server never lets change: a copy holding another value is replaced.
const fn fixed(name: &'static str, shape: Shape) -> Field {
    Field {
        name,
        shape,
        fixed: true,
    }
}

/// What a copy of a kind whose `spec` is what a user sets carries.
const SPEC: &[Field] = &[field("spec", VALUE)];

/// A kit kind (`--kinds` enables it) as most are: its `spec` is what a user sets, and its copies
/// go only into the namespaces the admin labelled. A row that differs says only how.
const fn kit(
    id: SourceKind,
    name: &'static str,
    group: &'static str,
    resource: &'static str,
) -> Kind {
    Kind {
        id,
        name,
        group,
        version: "v1",
        resource,
        content: SPEC,
        never: "",
        hash: HashHead::KitOf,
        secret_content: false,
        patch: PatchKind::Strategic,
        enabled_by: EnabledBy::KindsFlag,
        names: NameRule::Any,
        reserved: &[],
        refused_type: None,
        required_keys: &[],
        guard: Guard::LabelledNamespaces,
        published_as: &[],
    }
}

/// Every kind skiff copies.
pub const TABLE: [Kind; 7] = [
    Kind {
        id: SourceKind::ConfigMap,
        name: "ConfigMap",
        group: "",
        version: "v1",
        resource: "configmaps",
        content: &[
            field("data", KEYS),
            field("binaryData", KEYS),
            field("immutable", Shape::Seal),
        ],
        never: "",
        hash: HashHead::Kind,
        secret_content: false,
        patch: PatchKind::Strategic,
        enabled_by: EnabledBy::Always,
        names: NameRule::Any,
        reserved: &[Reserved {
            name: "kube-root-ca.crt",
            why: "the controller-manager publishes the cluster's root CA under this name in every \
                  namespace",
        }],
        refused_type: None,
        required_keys: &[],
        guard: Guard::None,
        published_as: &[],
    },
    Kind {
        id: SourceKind::Secret,
        name: "Secret",
        group: "",
        version: "v1",
        resource: "secrets",
        content: &[
            fixed(
                "type",
                Shape::Text {
                    default: Some("Opaque"),
                },
            ),
            field("data", KEYS),
            field("immutable", Shape::Seal),
        ],
        never: "a ServiceAccount token Secret's data (`kubernetes.io/service-account-token`)",
        hash: HashHead::Kind,
        secret_content: true,
        patch: PatchKind::Strategic,
        enabled_by: EnabledBy::SecretTargetNames,
        names: NameRule::SecretTargetNames,
        reserved: &[],
        refused_type: Some((
            "kubernetes.io/service-account-token",
            "each copy would hand that ServiceAccount's credentials to its namespace",
        )),
        required_keys: &[
            ("kubernetes.io/tls", &[&["tls.crt"], &["tls.key"]]),
            ("kubernetes.io/dockerconfigjson", &[&[".dockerconfigjson"]]),
            ("kubernetes.io/dockercfg", &[&[".dockercfg"]]),
            ("kubernetes.io/ssh-auth", &[&["ssh-privatekey"]]),
            ("kubernetes.io/basic-auth", &[&["username", "password"]]),
        ],
        guard: Guard::None,
        // A CA's or a server's certificates, for anyone in the namespace to read, never its
        // key (cert-manager's `ca.crt` and `tls.crt`).
        published_as: &[Projection {
            to: SourceKind::ConfigMap,
            from_field: "data",
            to_field: "data",
            admits: "PEM certificates",
            check: only_certificates,
        }],
    },
    kit(
        SourceKind::NetworkPolicy,
        "NetworkPolicy",
        "networking.k8s.io",
        "networkpolicies",
    ),
    kit(SourceKind::LimitRange, "LimitRange", "", "limitranges"),
    kit(
        SourceKind::ResourceQuota,
        "ResourceQuota",
        "",
        "resourcequotas",
    ),
    Kind {
        content: &[fixed("roleRef", VALUE), field("subjects", VALUE)],
        guard: Guard::BindableRoles,
        ..kit(
            SourceKind::RoleBinding,
            "RoleBinding",
            "rbac.authorization.k8s.io",
            "rolebindings",
        )
    },
    Kind {
        content: &[
            field("automountServiceAccountToken", VALUE),
            field("imagePullSecrets", VALUE),
        ],
        never: "`secrets` (the token controller may fill it in, and a token is no copy)",
        reserved: &[Reserved {
            name: "default",
            why: "the controller-manager makes the ServiceAccount `default` in every namespace, \
                  and every Pod that names none runs as it",
        }],
        ..kit(
            SourceKind::ServiceAccount,
            "ServiceAccount",
            "",
            "serviceaccounts",
        )
    },
];
