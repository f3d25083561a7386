//! Recent review outcomes by token hash, so a scraper every few seconds costs one
//! TokenReview and one SubjectAccessReview a minute, not two API requests per scrape.
//!
//! Readers and refusals are kept apart, each bounded: a caller sending random tokens fills
//! the refusals ([`MAX_DENIED`]; expired entries go first, then the one closest to expiry) but
//! can never push a reader out. A reader is also remembered for [`KNOWN_READER_TTL`] after
//! its entry expires, so its next review is not refused for lack of review budget while
//! strangers spend it (see [`super::authz`]). Tokens themselves are never kept, only their
//! SHA-256.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// How long an allowed token is trusted without asking again (kube-rbac-proxy and
/// controller-runtime cache authentication for a minute too). A revoked binding or deleted
/// ServiceAccount takes effect within this time.
pub const ALLOWED_TTL: Duration = Duration::from_secs(60);
/// How long a refusal (401 or 403) is remembered: short, so a newly bound reader is let in soon.
pub const DENIED_TTL: Duration = Duration::from_secs(10);
/// How long a token once allowed counts as a known reader (reviewed again with priority).
pub const KNOWN_READER_TTL: Duration = Duration::from_secs(3600);
/// Most remembered refusals.
pub const MAX_DENIED: usize = 1024;
/// Most remembered readers (scrapers with a token each; a cluster has a handful).
pub const MAX_READERS: usize = 64;

/// A review's final answer; failures to ask are never cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Allowed,
    /// The API server does not know the token.
    Unauthenticated,
    /// The token's user may not `get /metrics`; the user name, for the 403 message.
    Forbidden(String),
}

/// What the cache knows of a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// A live answer.
    Cached(Outcome),
    /// Allowed before, expired now: review it again, with priority.
    KnownReader,
    Unknown,
}

type TokenHash = [u8; 32];

#[derive(Default)]
pub struct ReviewCache {
    /// Reader hash → (trusted until, known until).
    readers: HashMap<TokenHash, (Instant, Instant)>,
    /// Refused hash → (outcome, until).
    denied: HashMap<TokenHash, (Outcome, Instant)>,
}

impl ReviewCache {
    /// What is known of `token` at `now`.
    pub fn get(&self, token: &str, now: Instant) -> Lookup {
        let key = hash(token);
        if let Some((outcome, until)) = self.denied.get(&key)
            && now < *until
        {
            return Lookup::Cached(outcome.clone());
        }
        match self.readers.get(&key) {
            Some((trusted, _)) if now < *trusted => Lookup::Cached(Outcome::Allowed),
            Some((_, known)) if now < *known => Lookup::KnownReader,
            _ => Lookup::Unknown,
        }
    }

    /// Remembers `outcome` for `token` from `now`, evicting to stay within the bounds.
    pub fn insert(&mut self, token: &str, outcome: Outcome, now: Instant) {
        let key = hash(token);
        match outcome {
            Outcome::Allowed => {
                self.denied.remove(&key);
                if !self.readers.contains_key(&key) && self.readers.len() >= MAX_READERS {
                    evict_soonest(&mut self.readers, now, |(_, known)| *known);
                }
                self.readers
                    .insert(key, (now + ALLOWED_TTL, now + KNOWN_READER_TTL));
            }
            refused => {
                self.readers.remove(&key);
                if !self.denied.contains_key(&key) && self.denied.len() >= MAX_DENIED {
                    evict_soonest(&mut self.denied, now, |(_, until)| *until);
                }
                self.denied.insert(key, (refused, now + DENIED_TTL));
            }
        }
    }
}

/// Drops every entry expired at `now`; if none was, the one that expires first.
fn evict_soonest<V>(
    entries: &mut HashMap<TokenHash, V>,
    now: Instant,
    expiry: impl Fn(&V) -> Instant,
) {
    let before = entries.len();
    entries.retain(|_, value| now < expiry(value));
    if entries.len() < before {
        return;
    }
    let soonest = entries
        .iter()
        .min_by_key(|(_, value)| expiry(value))
        .map(|(key, _)| *key);
    if let Some(soonest) = soonest {
        entries.remove(&soonest);
    }
}

fn hash(token: &str) -> TokenHash {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    impl ReviewCache {
        fn len(&self) -> usize {
            self.readers.len() + self.denied.len()
        }
    }

    #[test]
    fn allowed_is_remembered_longer_than_denied() {
        let start = Instant::now();
        let mut cache = ReviewCache::default();
        cache.insert("reader", Outcome::Allowed, start);
        cache.insert("stranger", Outcome::Forbidden("bob".into()), start);
        cache.insert("bogus", Outcome::Unauthenticated, start);
        let soon = start + DENIED_TTL - Duration::from_millis(1);
        let allowed = Lookup::Cached(Outcome::Allowed);
        assert_eq!(cache.get("reader", soon), allowed);
        assert_eq!(
            cache.get("stranger", soon),
            Lookup::Cached(Outcome::Forbidden("bob".into()))
        );
        let later = start + DENIED_TTL;
        assert_eq!(cache.get("stranger", later), Lookup::Unknown);
        assert_eq!(cache.get("bogus", later), Lookup::Unknown);
        assert_eq!(cache.get("reader", later), allowed);
        assert_eq!(
            cache.get("reader", start + ALLOWED_TTL),
            Lookup::KnownReader
        );
        assert_eq!(
            cache.get("reader", start + KNOWN_READER_TTL),
            Lookup::Unknown
        );
        assert_eq!(cache.get("never-seen", start), Lookup::Unknown);
    }

    #[test]
    fn random_tokens_never_push_a_reader_out_and_never_grow_the_cache_past_its_bounds() {
        let start = Instant::now();
        let mut cache = ReviewCache::default();
        cache.insert("reader", Outcome::Allowed, start);
        for n in 0..MAX_DENIED * 3 {
            let at = start + Duration::from_millis(n as u64);
            cache.insert(&format!("random-{n}"), Outcome::Unauthenticated, at);
            assert!(cache.len() <= MAX_DENIED + MAX_READERS);
        }
        let allowed = Lookup::Cached(Outcome::Allowed);
        assert_eq!(cache.get("reader", start), allowed);
        let last = format!("random-{}", MAX_DENIED * 3 - 1);
        let refused = Lookup::Cached(Outcome::Unauthenticated);
        assert_eq!(cache.get(&last, start), refused);
    }

    #[test]
    fn a_full_table_drops_what_expires_first() {
        let start = Instant::now();
        let mut cache = ReviewCache::default();
        for n in 0..MAX_DENIED {
            cache.insert(&format!("denied-{n}"), Outcome::Unauthenticated, start);
        }
        let later = start + DENIED_TTL;
        cache.insert("one-more", Outcome::Unauthenticated, later);
        assert_eq!(cache.len(), 1, "every expired entry went at once");
        for n in 0..=MAX_READERS {
            let at = start + Duration::from_secs(n as u64);
            cache.insert(&format!("reader-{n}"), Outcome::Allowed, at);
        }
        assert_eq!(
            cache.get("reader-0", start),
            Lookup::Unknown,
            "least recent reader went"
        );
        let newest = format!("reader-{MAX_READERS}");
        assert_ne!(cache.get(&newest, start), Lookup::Unknown);
    }

    #[test]
    fn a_reader_refused_later_is_refused_and_the_other_way_round() {
        let start = Instant::now();
        let mut cache = ReviewCache::default();
        let forbidden = Outcome::Forbidden("bob".into());
        for outcome in [Outcome::Allowed, forbidden, Outcome::Allowed] {
            cache.insert("token", outcome.clone(), start);
            assert_eq!(cache.get("token", start), Lookup::Cached(outcome));
        }
    }
}
