//! The kinds skiff copies, one row each.
//!
//! Everything skiff knows about a kind is in its [`Kind`] row ([`TABLE`]): where the API serves
//! it, what a copy carries and what it never carries, how its content is hashed and patched,
//! which flag enables it, which names its copies may take, and what an admin must allow before
//! a copy of it is written. The Mirror controller reads the row; it does not ask which kind it
//! has. Adding a kind is adding a row (docs/ARCHITECTURE.md, "Adding a kind", says what else:
//! its RBAC rows and its tests).
//!
//! A row may also say which other kinds its objects may be published as ([`Projection`]: a
//! Secret's certificates as a ConfigMap), through which check ([`certificates`]).
//!
//! [`SourceKind`] names a row; it is what a Mirror's `spec.source.kind` holds (and its
//! `spec.target.kind`, a projection's). The flags that
//! name kinds (`--kinds`, `--self-service-kinds`) are read by one parser ([`names`]), and which
//! kinds an install enables is [`Kinds`].

pub mod certificates;
mod enabled;
pub mod names;
mod row;
mod table;

pub use enabled::Kinds;
pub use row::{EnabledBy, Field, Guard, HashHead, Kind, NameRule, Projection, Reserved, Shape};
pub use table::TABLE;

use serde::{Deserialize, Serialize};

/// A row of [`TABLE`], by the name the API gives its kind. The variants are in the table's
/// order (a test checks it), so a row is found by index, never by a match.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub enum SourceKind {
    #[default]
    ConfigMap,
    Secret,
    NetworkPolicy,
    LimitRange,
    ResourceQuota,
    RoleBinding,
    ServiceAccount,
}

impl SourceKind {
    /// Everything skiff knows about this kind.
    pub fn row(self) -> &'static Kind {
        &TABLE[self as usize]
    }

    /// The API's name of the kind (`ConfigMap`).
    pub fn as_str(self) -> &'static str {
        self.row().name
    }

    /// Every kind, in the table's order.
    pub fn all() -> impl Iterator<Item = SourceKind> {
        TABLE.iter().map(|row| row.id)
    }
}

#[cfg(test)]
mod tests;
