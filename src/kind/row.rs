//! The columns of a kind's row: what each says, and the small questions asked of it.

use super::SourceKind;
use crate::kube::PatchKind;

/// One kind skiff copies.
#[derive(Debug)]
pub struct Kind {
    pub id: SourceKind,
    /// The API's name of the kind, as a Mirror's `spec.source.kind` holds it.
    pub name: &'static str,
    /// The API group; empty for the core group.
    pub group: &'static str,
    pub version: &'static str,
    /// The resource, as URLs, RBAC rules and `--kinds` name it.
    pub resource: &'static str,
    /// What a copy carries, in the order its hash has always read them. Anything else the
    /// object holds (`status`, what the server defaults or allocates) is never copied and never
    /// seen as drift.
    pub content: &'static [Field],
    /// What a copy never carries although the object may hold it, and why (for the docs).
    pub never: &'static str,
    pub hash: HashHead,
    /// Its content is secret: between clusters it travels only as a Secret, which one member
    /// may read, never inside another object.
    pub secret_content: bool,
    /// How an update is sent. Strategic merge patch (and its `$patch: replace`) exists only
    /// for the built-in kinds; a custom resource's row would say `Merge`.
    pub patch: PatchKind,
    pub enabled_by: EnabledBy,
    /// Which names a copy of this kind may take.
    pub names: NameRule,
    /// Names a copy may never take: another controller keeps an object of that name in every
    /// namespace.
    pub reserved: &'static [Reserved],
    /// A `type` whose objects are never copied, and why: skiff keeps such a source without its
    /// data, and refuses to copy it.
    pub refused_type: Option<(&'static str, &'static str)>,
    /// For each `type`, the keys the API server requires, a group each of which needs one key.
    pub required_keys: &'static [(&'static str, &'static [&'static [&'static str]])],
    pub guard: Guard,
    /// The other kinds an object of this kind may be published as (`spec.target.kind`).
    pub published_as: &'static [Projection],
}

/// A kind a row's objects may be published as, and what of them: the keys a Mirror lists
/// (`spec.source.keys`, required: a projection publishes what is named, never a whole object)
/// of the source's `from_field`, whose values are base64 (a Secret's `data`), each decoded,
/// checked and written as text into the copy's `to_field` (a ConfigMap's `data`). Nothing else
/// of the source goes with it: not its type, not its immutability.
#[derive(Debug)]
pub struct Projection {
    /// The row of the copies.
    pub to: SourceKind,
    pub from_field: &'static str,
    pub to_field: &'static str,
    /// What a value must be to be published, as messages and the docs say it.
    pub admits: &'static str,
    /// Why a value (its bytes, decoded) may not be published, if it may not.
    pub check: fn(&[u8]) -> Result<(), String>,
}

/// One top-level field a copy carries.
#[derive(Debug, PartialEq, Eq)]
pub struct Field {
    /// As on the wire (`data`, `spec`, `roleRef`).
    pub name: &'static str,
    pub shape: Shape,
    /// The server refuses to change it: a copy holding another value is replaced (deleted and
    /// created again), never patched.
    pub fixed: bool,
}

/// How a field is held, hashed and patched.
#[derive(Debug, PartialEq, Eq)]
pub enum Shape {
    /// A map of keys a Mirror may pick (`spec.source.keys`): hashed as `{}` when absent,
    /// replaced whole by an update.
    Keys,
    /// A string: hashed as `null` when absent; an update sets it, to `default` when absent
    /// (what the server stores then).
    Text { default: Option<&'static str> },
    /// `immutable`: hashed only when true, so a mutable copy hashes as it always did. Once true
    /// on a copy, the server refuses any change of its keys.
    Seal,
    /// Any JSON value the user sets (`spec`): left out of the hash when absent, replaced whole
    /// by an update, removed when the source leaves it out.
    Value,
}

/// How the canonical form a copy's hash is taken over begins. The kit kinds came after
/// ConfigMaps and Secrets under one tag; the tags stay so that no copy's hash ever moves.
#[derive(Debug, PartialEq, Eq)]
pub enum HashHead {
    /// `{"kind":"<name>", …`
    Kind,
    /// `{"kind":"Kit","of":"<name>", …`
    KitOf,
}

/// What enables copies of a kind.
#[derive(Debug, PartialEq, Eq)]
pub enum EnabledBy {
    /// Always on: the default install copies it.
    Always,
    /// `--secret-target-names`: on when it names at least one name.
    SecretTargetNames,
    /// An entry of `--kinds`.
    KindsFlag,
}

/// Which names a copy may take.
#[derive(Debug, PartialEq, Eq)]
pub enum NameRule {
    Any,
    /// Only those `--secret-target-names` lists: RBAC grants this kind by `resourceNames`, so
    /// its copies are also watched one allowed name at a time.
    SecretTargetNames,
}

/// A name no copy may take, and who keeps an object of that name.
#[derive(Debug, PartialEq, Eq)]
pub struct Reserved {
    pub name: &'static str,
    pub why: &'static str,
}

/// What an admin must allow before a copy is written, beyond enabling the kind.
#[derive(Debug, PartialEq, Eq)]
pub enum Guard {
    None,
    /// Copies go only into namespaces the admin labelled (`--binding-namespace-label`, as the
    /// admission policy `skiff-kit-namespaces` requires): a NetworkPolicy, a quota or a
    /// LimitRange acts on its namespace.
    LabelledNamespaces,
    /// As [`Guard::LabelledNamespaces`], and a RoleBinding binds only the ClusterRoles
    /// `--bindable-roles` names, never to skiff itself (see `mirror::binding_guard`).
    BindableRoles,
}

impl Kind {
    /// The path of this kind's collection in `namespace`, or across all (`None`).
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

    /// The path of the object `name` in `namespace`.
    pub fn object_path(&self, namespace: &str, name: &str) -> String {
        let mut path = self.collection_path(Some(namespace));
        path.push('/');
        path.push_str(name);
        path
    }

    /// `apiVersion` as objects of this kind carry it.
    pub fn api_version(&self) -> String {
        match self.group {
            "" => self.version.to_owned(),
            group => format!("{group}/{}", self.version),
        }
    }

    /// `resource.group`, or `resource` for the core group: how `--kinds` and
    /// `--self-service-kinds` spell it.
    pub fn flag_name(&self) -> String {
        match self.group {
            "" => self.resource.to_owned(),
            group => format!("{}.{group}", self.resource),
        }
    }

    /// The content fields a Mirror may pick keys of (`spec.source.keys`).
    pub fn key_fields(&self) -> impl Iterator<Item = &'static Field> {
        self.content.iter().filter(|f| f.shape == Shape::Keys)
    }

    /// Whether a Mirror may pick keys of this kind.
    pub fn has_keys(&self) -> bool {
        self.key_fields().next().is_some()
    }

    /// The content field named `name`.
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.content.iter().find(|f| f.name == name)
    }

    /// Why a copy may not be named `name`, if it may not.
    pub fn reserved(&self, name: &str) -> Option<&'static Reserved> {
        self.reserved.iter().find(|r| r.name == name)
    }

    /// How an object of this kind is published as a `to`, if it may be.
    pub fn projection(&self, to: SourceKind) -> Option<&'static Projection> {
        self.published_as.iter().find(|p| p.to == to)
    }

    /// The name flags give the projection `p` of this row: `secrets-as-configmaps`.
    pub fn projection_name(&self, p: &Projection) -> String {
        format!("{}-as-{}", self.resource, p.to.row().resource)
    }
}
