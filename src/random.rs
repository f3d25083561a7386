//! Randomness for identity suffixes and retry jitter, on fastrand (already in smol's tree).
//!
//! Not cryptographic: it only has to make two replicas on the same host pick different
//! identities and spread their retries. Every jitter in skiff is one formula, client-go's
//! `wait.Jitter`: `base × (1 + factor × u)`, `u` uniform in `[0, 1)`.

use std::time::Duration;

pub use fastrand::Rng;

/// A generator seeded from the process's entropy.
pub fn rng() -> Rng {
    Rng::new()
}

/// `base × (1 + factor × u)` with `u` uniform in `[0, 1)` (client-go's `wait.Jitter`).
pub fn jitter(base: Duration, factor: f64, rng: &mut Rng) -> Duration {
    jitter_at(base, factor, rng.f64())
}

/// [`jitter`] for a given `u` (clamped to `[0, 1]`), for tests and callers with their own `u`.
pub fn jitter_at(base: Duration, factor: f64, u: f64) -> Duration {
    base.mul_f64(1.0 + factor * u.clamp(0.0, 1.0))
}

/// `len` characters from `[a-z0-9]`, valid in any Kubernetes name.
pub fn name_safe(len: usize, rng: &mut Rng) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..len)
        .map(|_| char::from(ALPHABET[rng.usize(..ALPHABET.len())]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_spans_base_to_base_times_one_plus_factor() {
        let second = Duration::from_secs(1);
        assert_eq!(jitter_at(second, 1.2, 0.0), second);
        assert_eq!(jitter_at(second, 1.2, 1.0), Duration::from_millis(2200));
        assert_eq!(
            jitter_at(second, 0.2, 2.0),
            Duration::from_millis(1200),
            "u is clamped"
        );
        let mut rng = Rng::with_seed(7);
        for _ in 0..1000 {
            let d = jitter(second, 1.0, &mut rng);
            assert!(d >= second && d < 2 * second, "{d:?}");
        }
    }

    #[test]
    fn two_generators_from_entropy_differ() {
        assert_ne!(name_safe(10, &mut rng()), name_safe(10, &mut rng()));
    }

    #[test]
    fn name_safe_uses_only_lowercase_letters_and_digits() {
        let s = name_safe(200, &mut Rng::with_seed(1));
        assert_eq!(s.len(), 200);
        assert!(
            s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()),
            "{s}"
        );
    }
}
