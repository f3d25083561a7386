//! Who a copy belongs to, and one shared [`Owner`] per Mirror for every copy cached of it.
//!
//! Each cached copy names the Mirror that owns it. Held as two strings per copy, that was
//! about a hundred bytes per copy (at 10,000 copies, a megabyte) repeating a handful of
//! names; shared ([`Interner`]), it is a pointer, and the table stays the size of the Mirrors
//! that have copies.
//!
//! A Mirror placed by a hub (a member's copy of a hub's fleet Mirror) is owned by the hub's
//! Mirror, named `<hub>/<namespace>`: a namespace has no `/`, so such an owner never equals a
//! local Mirror, and its copies carry the hub's identity ([`super::copy::labelled_for`]).

use super::types::Mirror;
use crate::runtime::Interner;
use std::sync::Arc;

/// Who a copy belongs to, read from its labels (see [`super::copy::owner_of`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner {
    pub namespace: String,
    pub name: String,
}

impl Owner {
    pub fn of(mirror: &Mirror) -> Owner {
        Owner {
            namespace: mirror.metadata.namespace().to_owned(),
            name: mirror.metadata.name().to_owned(),
        }
    }

    /// The Mirror `namespace/name` of the hub named `hub`.
    pub fn of_hub(hub: &str, namespace: &str, name: &str) -> Owner {
        Owner {
            namespace: format!("{hub}/{namespace}"),
            name: name.to_owned(),
        }
    }

    /// For a hub's Mirror: the hub's name and the Mirror's namespace there.
    pub fn hub(&self) -> Option<(&str, &str)> {
        self.namespace.split_once('/')
    }
}

static OWNERS: Interner<Owner> = Interner::new();

/// The shared `owner`: the same allocation for every equal owner still held somewhere.
pub fn shared(owner: Owner) -> Arc<Owner> {
    OWNERS.share(owner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::fixtures::mirror_of;
    use crate::mirror::types::SourceKind;

    fn owner(name: &str) -> Owner {
        Owner::of(&mirror_of(name, SourceKind::ConfigMap))
    }

    #[test]
    fn equal_owners_share_one_allocation() {
        let (a, b) = (shared(owner("shared-a")), shared(owner("shared-a")));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &shared(owner("shared-b"))));
    }

    #[test]
    fn owners_no_copy_holds_are_swept() {
        for i in 0..200 {
            drop(shared(owner(&format!("swept-{i}"))));
        }
        let held = OWNERS.len();
        assert!(held < 100, "{held} owners kept after their copies went");
    }
}
