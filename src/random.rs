//! Small, hand-rolled randomness for identity suffixes and retry jitter (no `rand` crate).
//!
//! Not cryptographic: it only has to make two replicas on the same host pick different
//! identities and spread their retries. Seeded from wall time, monotonic time, the process id,
//! a stack address (address-space layout randomisation) and a per-process counter (so two
//! generators made in the same instant differ), mixed by SplitMix64.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A SplitMix64 generator.
#[derive(Debug, Clone)]
pub struct Random {
    state: u64,
}

impl Random {
    /// A generator seeded from the entropy the process has at hand.
    pub fn from_entropy() -> Random {
        Random::seeded(entropy())
    }

    pub fn seeded(seed: u64) -> Random {
        Random { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A float uniformly in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `len` characters from `[a-z0-9]`, valid in any Kubernetes name.
    pub fn alphanumeric(&mut self, len: usize) -> String {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        (0..len)
            .map(|_| ALPHABET[(self.next_u64() % ALPHABET.len() as u64) as usize] as char)
            .collect()
    }
}

fn entropy() -> u64 {
    static CREATED: AtomicU64 = AtomicU64::new(0);
    let count = CREATED.fetch_add(1, Ordering::Relaxed);
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or_default();
    let local = 0u8;
    let stack_address = std::ptr::addr_of!(local) as usize as u64;
    let monotonic = format!("{:?}", Instant::now());
    let mut seed = wall
        ^ u64::from(std::process::id()).rotate_left(32)
        ^ stack_address.rotate_left(17)
        ^ count.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for byte in monotonic.bytes() {
        seed = seed.rotate_left(5) ^ u64::from(byte);
    }
    Random::seeded(seed).next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_stay_in_the_unit_interval() {
        let mut r = Random::seeded(7);
        for _ in 0..10_000 {
            let x = r.next_f64();
            assert!((0.0..1.0).contains(&x), "{x}");
        }
        let mut r = Random::seeded(7);
        let low = (0..1000).filter(|_| r.next_f64() < 0.5).count();
        assert!((400..600).contains(&low), "{low} of 1000 below 0.5");
    }

    #[test]
    fn two_generators_from_entropy_differ() {
        let a = Random::from_entropy().alphanumeric(10);
        let b = Random::from_entropy().alphanumeric(10);
        assert_ne!(a, b);
    }

    #[test]
    fn alphanumeric_uses_only_name_safe_characters() {
        let s = Random::seeded(1).alphanumeric(200);
        assert_eq!(s.len(), 200);
        assert!(
            s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()),
            "{s}"
        );
    }
}
