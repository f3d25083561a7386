//! Who may read `/metrics` when it is served securely: the caller's bearer token is checked with
//! a TokenReview (who is this?) and a SubjectAccessReview (may they `get` the non-resource URL
//! `/metrics`?), as kubebuilder's `WithAuthenticationAndAuthorization` filter does.
//!
//! The reviews are POSTs on the main client *without* the leader-election fence: a standby must
//! answer its scrapes too, and a review writes nothing. They share the main client's connections
//! and token bucket, never the lease client's, so a slow or failing review cannot delay a lease
//! renewal. Three guards keep scrapers, or anyone sending random tokens, from costing the
//! controllers their budget:
//! - outcomes are cached ([`ReviewCache`]), refusals too, and refusals never push a reader out;
//! - tokens never seen allowed are reviewed at most [`NEW_TOKEN_REVIEWS_PER_SECOND`] a second
//!   (a burst of [`NEW_TOKEN_REVIEW_BURST`]); beyond that the caller gets 429 at once, so
//!   random tokens take at most that share of the main client's requests. A known reader's
//!   token, due for its review again, does not wait for this budget;
//! - at most [`MAX_REVIEWS_IN_FLIGHT`] reviews run at once; callers beyond that get 503 at once
//!   instead of queueing on the bucket.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_types::StatusCode;
use smol::lock::Semaphore;

use super::review_cache::{Lookup, Outcome, ReviewCache};
use crate::clock::Clock;
use crate::kube::api::{SubjectAccessReview, TokenReview};
use crate::kube::{Client, Error, TokenBucket};

/// Token reviews running at once; a scraper or two never needs more.
pub const MAX_REVIEWS_IN_FLIGHT: usize = 4;
/// Reviews per second of tokens not known to be a reader's.
pub const NEW_TOKEN_REVIEWS_PER_SECOND: f32 = 1.0;
/// How many such reviews may come at once before the rate applies.
pub const NEW_TOKEN_REVIEW_BURST: u32 = 4;
/// The non-resource URL and verb a reader must be allowed (the `skiff-metrics-reader` role).
const METRICS_PATH: &str = "/metrics";
const METRICS_VERB: &str = "get";

/// What to answer a `/metrics` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Refused: the status and a message for the body (naming no secret).
    Deny(StatusCode, String),
}

/// Checks `/metrics` callers against the API server; shared by every connection.
pub struct MetricsAuth {
    client: Client,
    cache: Mutex<ReviewCache>,
    in_flight: Semaphore,
    new_tokens: TokenBucket,
    clock: Clock,
}

impl MetricsAuth {
    /// `client` must be the main client without the write guard (see the module doc).
    pub fn new(client: Client) -> Arc<MetricsAuth> {
        MetricsAuth::with_clock(client, Clock::real())
    }

    /// [`MetricsAuth::new`] whose cache and new-token budget read `clock`.
    pub fn with_clock(client: Client, clock: Clock) -> Arc<MetricsAuth> {
        let (rate, burst) = (NEW_TOKEN_REVIEWS_PER_SECOND, NEW_TOKEN_REVIEW_BURST);
        Arc::new(MetricsAuth {
            client,
            cache: Mutex::new(ReviewCache::default()),
            in_flight: Semaphore::new(MAX_REVIEWS_IN_FLIGHT),
            new_tokens: TokenBucket::with_clock(rate, burst, clock.clone()),
            clock,
        })
    }

    /// Decides on a request carrying `authorization` (its `Authorization` header, if any).
    pub async fn check(&self, authorization: Option<&str>) -> Decision {
        self.check_at(authorization, self.clock.now()).await
    }

    /// [`check`](Self::check) with the cache's clock at `now`.
    async fn check_at(&self, authorization: Option<&str>, now: Instant) -> Decision {
        let Some(token) = authorization.and_then(bearer_token) else {
            return unauthorized();
        };
        let known_reader = match self.cache_lock().get(token, now) {
            Lookup::Cached(outcome) => return decision(outcome),
            Lookup::KnownReader => true,
            Lookup::Unknown => false,
        };
        let Some(_permit) = self.in_flight.try_acquire() else {
            return Decision::Deny(
                StatusCode::ServiceUnavailable,
                "too many authorization reviews in flight; retry shortly".to_owned(),
            );
        };
        // A token that is there now: waiting would hold one of the few review slots.
        let now_or_never = Instant::now() + Duration::from_millis(1);
        if !known_reader && self.new_tokens.acquire_before(now_or_never).await.is_err() {
            return Decision::Deny(
                StatusCode::TooManyRequests,
                format!(
                    "too many new tokens to review (at most {NEW_TOKEN_REVIEWS_PER_SECOND} a second); retry shortly"
                ),
            );
        }
        match self.review(token).await {
            Ok(outcome) => {
                self.cache_lock().insert(token, outcome.clone(), now);
                decision(outcome)
            }
            Err(e) => {
                log::warn!("/metrics: cannot review the caller's token: {e}");
                Decision::Deny(
                    StatusCode::InternalServerError,
                    "authentication or authorization review failed".to_owned(),
                )
            }
        }
    }

    fn cache_lock(&self) -> std::sync::MutexGuard<'_, ReviewCache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn review(&self, token: &str) -> Result<Outcome, Error> {
        let answer: TokenReview = self.client.create(&TokenReview::of(token)).await?;
        let status = answer.status.unwrap_or_default();
        if !status.authenticated {
            return Ok(Outcome::Unauthenticated);
        }
        let question = SubjectAccessReview::non_resource(&status.user, METRICS_VERB, METRICS_PATH);
        let answer: SubjectAccessReview = self.client.create(&question).await?;
        Ok(match answer.status.is_some_and(|s| s.allowed) {
            true => Outcome::Allowed,
            false => Outcome::Forbidden(status.user.username),
        })
    }
}

fn decision(outcome: Outcome) -> Decision {
    match outcome {
        Outcome::Allowed => Decision::Allow,
        Outcome::Unauthenticated => unauthorized(),
        Outcome::Forbidden(user) => Decision::Deny(
            StatusCode::Forbidden,
            format!("{user} may not get {METRICS_PATH}; bind the ClusterRole skiff-metrics-reader"),
        ),
    }
}

fn unauthorized() -> Decision {
    Decision::Deny(
        StatusCode::Unauthorized,
        "Unauthorized: send a ServiceAccount token as `Authorization: Bearer <token>`".to_owned(),
    )
}

/// The token of `Bearer <token>` (scheme without case, as RFC 7235), if non-empty.
fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests;
