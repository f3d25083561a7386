//! The name a Mirror's copy takes in each namespace: the Mirror's target name, unless the
//! namespace accepted a tenant's offer under a local name (`MirrorAcceptance`
//! `spec.targetName`, decided in [`super::acceptance::local_names`]).
//!
//! One value carried through the one path a copy takes (plan, writes, conflicts, status), so
//! a renamed copy is planned, written, found and deleted as any other.

use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyNames {
    usual: String,
    /// The namespaces whose copy has another name, with it. Empty for an admin's Mirror.
    renamed: BTreeMap<String, String>,
}

impl CopyNames {
    /// Every copy named `usual`.
    pub fn new(usual: &str) -> CopyNames {
        CopyNames {
            usual: usual.to_owned(),
            renamed: BTreeMap::new(),
        }
    }

    /// The copy in `namespace` is named `name`.
    pub fn rename(&mut self, namespace: &str, name: &str) {
        if name != self.usual {
            self.renamed.insert(namespace.to_owned(), name.to_owned());
        }
    }

    /// The copy's name in `namespace`.
    pub fn of(&self, namespace: &str) -> &str {
        self.renamed.get(namespace).unwrap_or(&self.usual)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_renamed_gets_its_name_and_the_others_the_usual() {
        let mut names = CopyNames::new("ca");
        names.rename("team-b", "their-ca");
        names.rename("team-c", "ca");
        assert_eq!(names.of("team-b"), "their-ca");
        assert_eq!(names.of("team-c"), "ca");
        assert_eq!(names.of("team-d"), "ca");
        assert!(!names.renamed.contains_key("team-c"));
    }
}
