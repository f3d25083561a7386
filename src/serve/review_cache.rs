//! Recent review outcomes by token hash, so a scraper every few seconds costs one
//! TokenReview and one SubjectAccessReview a minute, not two API requests per scrape.
//!
//! Bounded: a caller sending random tokens cannot grow it past [`MAX_ENTRIES`]; when full, expired
//! entries go first, then the one closest to expiry. Tokens themselves are never kept, only
//! their SHA-256.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// How long an allowed token is trusted without asking again (kube-rbac-proxy and
/// controller-runtime cache authentication for a minute too). A revoked binding or deleted
/// ServiceAccount takes effect within this time.
pub const ALLOWED_TTL: Duration = Duration::from_secs(60);
/// How long a refusal (401 or 403) is remembered: short, so a newly bound reader is let in soon.
pub const DENIED_TTL: Duration = Duration::from_secs(10);
/// Most remembered tokens.
pub const MAX_ENTRIES: usize = 1024;

/// A review's final answer; failures to ask are never cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Allowed,
    /// The API server does not know the token.
    Unauthenticated,
    /// The token's user may not `get /metrics`; the user name, for the 403 message.
    Forbidden(String),
}

impl Outcome {
    fn ttl(&self) -> Duration {
        match self {
            Outcome::Allowed => ALLOWED_TTL,
            Outcome::Unauthenticated | Outcome::Forbidden(_) => DENIED_TTL,
        }
    }
}

type TokenHash = [u8; 32];

#[derive(Default)]
pub struct ReviewCache {
    entries: HashMap<TokenHash, (Outcome, Instant)>,
}

impl ReviewCache {
    /// The remembered outcome for `token`, unless it has expired by `now`.
    pub fn get(&self, token: &str, now: Instant) -> Option<Outcome> {
        match self.entries.get(&hash(token)) {
            Some((outcome, expires)) if now < *expires => Some(outcome.clone()),
            _ => None,
        }
    }

    /// Remembers `outcome` for `token` from `now`, evicting to stay within [`MAX_ENTRIES`].
    pub fn insert(&mut self, token: &str, outcome: Outcome, now: Instant) {
        let key = hash(token);
        if !self.entries.contains_key(&key) && self.entries.len() >= MAX_ENTRIES {
            self.entries.retain(|_, (_, expires)| now < *expires);
        }
        if !self.entries.contains_key(&key) && self.entries.len() >= MAX_ENTRIES {
            let soonest = self
                .entries
                .iter()
                .min_by_key(|(_, (_, expires))| *expires)
                .map(|(key, _)| *key);
            if let Some(soonest) = soonest {
                self.entries.remove(&soonest);
            }
        }
        let expires = now + outcome.ttl();
        self.entries.insert(key, (outcome, expires));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

fn hash(token: &str) -> TokenHash {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_is_remembered_longer_than_denied() {
        let start = Instant::now();
        let mut cache = ReviewCache::default();
        cache.insert("reader", Outcome::Allowed, start);
        cache.insert("stranger", Outcome::Forbidden("bob".into()), start);
        cache.insert("bogus", Outcome::Unauthenticated, start);
        let soon = start + DENIED_TTL - Duration::from_millis(1);
        assert_eq!(cache.get("reader", soon), Some(Outcome::Allowed));
        assert_eq!(
            cache.get("stranger", soon),
            Some(Outcome::Forbidden("bob".into()))
        );
        let later = start + DENIED_TTL;
        assert_eq!(cache.get("stranger", later), None);
        assert_eq!(cache.get("bogus", later), None);
        assert_eq!(cache.get("reader", later), Some(Outcome::Allowed));
        assert_eq!(cache.get("reader", start + ALLOWED_TTL), None);
        assert_eq!(cache.get("never-seen", start), None);
    }

    #[test]
    fn the_cache_never_grows_past_its_bound_and_evicts_the_soonest_to_expire() {
        let start = Instant::now();
        let mut cache = ReviewCache::default();
        cache.insert("old-denied", Outcome::Unauthenticated, start);
        for n in 0..MAX_ENTRIES + 50 {
            let at = start + Duration::from_millis(n as u64);
            cache.insert(&format!("token-{n}"), Outcome::Allowed, at);
            assert!(cache.len() <= MAX_ENTRIES);
        }
        assert_eq!(cache.len(), MAX_ENTRIES);
        assert_eq!(cache.get("old-denied", start), None, "evicted first");
        let last = format!("token-{}", MAX_ENTRIES + 49);
        assert_eq!(cache.get(&last, start), Some(Outcome::Allowed));
    }

    #[test]
    fn expired_entries_make_room_before_live_ones_are_evicted() {
        let start = Instant::now();
        let mut cache = ReviewCache::default();
        for n in 0..MAX_ENTRIES {
            cache.insert(&format!("denied-{n}"), Outcome::Unauthenticated, start);
        }
        let later = start + DENIED_TTL;
        cache.insert("reader", Outcome::Allowed, later);
        assert_eq!(cache.len(), 1, "every expired entry went at once");
    }
}
