//! A resourceVersion as the caches keep it: 16 bytes, and no allocation for the usual one.
//!
//! Every cached copy and every recent write keeps the version it was seen at, for the
//! preconditions of updates and deletes and to tell whether a cache caught up with a write.
//! As a `String` that is 24 bytes and a heap block per copy for some 6 to 8 digits. The API
//! server's versions are etcd revisions, decimal integers, so one that is a canonical decimal
//! (digits only, no leading zero, fits a `u64`) is kept as the integer; any other is kept as
//! it came. Versions are opaque to clients: either way the string read back is byte for byte
//! the one received, and two versions are equal exactly when their strings are.

use std::fmt;

/// Equal exactly when the strings are: only [`Version::new`] makes one, so a string has one
/// representation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Version(Repr);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Repr {
    /// A canonical decimal: its string is the integer's `Display`.
    Number(u64),
    /// Any other string, kept as received (the empty one: no object).
    Text(Box<str>),
}

impl Version {
    pub fn new(version: &str) -> Version {
        Version(match canonical_decimal(version) {
            Some(n) => Repr::Number(n),
            None => Repr::Text(version.into()),
        })
    }

    /// The version of "no object": what a create replaces.
    pub fn absent() -> Version {
        Version(Repr::Text(Box::default()))
    }

    /// Whether this is the version whose string is `version`, without allocating.
    pub fn is(&self, version: &str) -> bool {
        match &self.0 {
            Repr::Number(n) => canonical_decimal(version) == Some(*n),
            Repr::Text(text) => **text == *version,
        }
    }
}

/// The integer `s` spells, if it spells it the one way `u64`'s `Display` would.
fn canonical_decimal(s: &str) -> Option<u64> {
    let digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits || (s.len() > 1 && s.starts_with('0')) {
        return None;
    }
    s.parse().ok()
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Number(n) => write!(f, "{n}"),
            Repr::Text(text) => f.write_str(text),
        }
    }
}

impl From<&str> for Version {
    fn from(version: &str) -> Version {
        Version::new(version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_reads_back_byte_for_byte() {
        let versions = ["0", "7", "123456", "007", "18446744073709551615"];
        let others = [
            "18446744073709551616",
            "abc",
            "",
            "+5",
            " 5",
            "-1",
            "5 ",
            "1e3",
        ];
        for v in versions.iter().chain(&others) {
            assert_eq!(Version::new(v).to_string(), *v, "{v:?}");
            assert!(Version::new(v).is(v), "{v:?}");
        }
    }

    #[test]
    fn only_a_canonical_decimal_becomes_an_integer() {
        assert_eq!(Version::new("0"), Version(Repr::Number(0)));
        assert_eq!(
            Version::new("18446744073709551615"),
            Version(Repr::Number(u64::MAX))
        );
        for text in ["007", "18446744073709551616", "abc", "", "+5"] {
            assert_eq!(
                Version::new(text),
                Version(Repr::Text(text.into())),
                "{text:?}"
            );
        }
    }

    #[test]
    fn versions_are_equal_exactly_when_their_strings_are() {
        assert_ne!(Version::new("7"), Version::new("007"));
        assert!(!Version::new("7").is("007"));
        assert!(!Version::new("007").is("7"));
        assert!(Version::absent().is(""));
        assert!(!Version::absent().is("0"));
    }

    #[test]
    fn a_version_takes_16_bytes() {
        assert_eq!(size_of::<Version>(), 16);
    }
}
