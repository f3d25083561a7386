//! Small builders the Mirror unit tests share.

use std::collections::BTreeMap;

/// A string map of `pairs`, as labels, annotations and `data` are.
pub fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
