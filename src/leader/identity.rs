//! This replica's name in the Lease: `$POD_NAME` or the hostname, then `_` and a random suffix.
//!
//! The suffix makes a restarted process a new holder, so it never mistakes the previous
//! incarnation's lease for its own.

use crate::random::{self, Rng};

/// Length of the random suffix (36^10 ≈ 3.7e15 possibilities).
const SUFFIX_LEN: usize = 10;
/// Used when neither `POD_NAME` nor any hostname source is available.
const FALLBACK_NAME: &str = "skiff";
const HOSTNAME_FILE: &str = "/proc/sys/kernel/hostname";

/// The identity for this process, from the environment.
pub fn identity() -> String {
    let name = base_name(
        std::env::var("POD_NAME").ok(),
        std::fs::read_to_string(HOSTNAME_FILE).ok(),
        std::env::var("HOSTNAME").ok(),
    );
    with_suffix(&name, &mut random::rng())
}

/// The first non-blank of pod name, kernel hostname, `HOSTNAME`, else [`FALLBACK_NAME`].
fn base_name(pod: Option<String>, kernel: Option<String>, env: Option<String>) -> String {
    [pod, kernel, env]
        .into_iter()
        .flatten()
        .map(|s| s.trim().to_owned())
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| FALLBACK_NAME.to_owned())
}

fn with_suffix(name: &str, rng: &mut Rng) -> String {
    format!("{name}_{}", random::name_safe(SUFFIX_LEN, rng))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(s: &str) -> Option<String> {
        Some(s.to_owned())
    }

    #[test]
    fn pod_name_wins_over_hostname() {
        assert_eq!(
            base_name(some("skiff-7d9"), some("node\n"), some("h")),
            "skiff-7d9"
        );
    }

    #[test]
    fn kernel_hostname_is_trimmed_and_used_without_pod_name() {
        assert_eq!(base_name(None, some("node-a\n"), some("h")), "node-a");
        assert_eq!(base_name(some("  "), None, some("h")), "h");
        assert_eq!(base_name(None, None, None), FALLBACK_NAME);
    }

    #[test]
    fn identity_is_name_underscore_suffix_and_differs_per_call() {
        let a = identity();
        let b = identity();
        assert_ne!(a, b);
        let (_, suffix) = a.rsplit_once('_').unwrap();
        assert_eq!(suffix.len(), SUFFIX_LEN);
    }
}
