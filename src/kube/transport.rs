//! Transport: the path every request of one client takes, and what clones of it share.
//!
//! Ask the write guard (mutations), wait for the token bucket, present the credential, send on
//! a pooled connection within `min(request_timeout, deadline - now)`, read the whole reply,
//! retry a 429 a bounded number of times. A 401 to an exec plugin's credential runs the plugin
//! again and retries once, as client-go does. A request with no reply in time makes the
//! client's other connections suspect ([`super::liveness`]). [`super::Client`] puts typed verbs
//! on top; this file knows nothing of kinds.

use super::Error;
use super::client_metrics::ClientMetrics;
use super::config::{Config, Credential};
use super::connect::Connector;
use super::guard::WriteGuard;
use super::liveness::Liveness;
use super::pool::{MAX_IDLE, Pool};
use super::ratelimit::TokenBucket;
use super::request::{Reply, RequestSpec, reply_error};
use super::watch_body::{Deadlines, GuardedBody};
use crate::deadline::or_timeout;
use crate::signal::Signal;
use http_types::Body;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Longest `Retry-After` honoured between 429 retries.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);
/// Wait between 429 retries when the server sends no `Retry-After` (client-go's default).
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// What clones of one client share. The pool and bucket live exactly as long as the client.
struct Inner {
    config: Config,
    pool: Pool,
    bucket: TokenBucket,
    metrics: ClientMetrics,
    /// The plugin run whose client certificate new connections present (0: none yet).
    identity_generation: AtomicU64,
    liveness: Liveness,
}

/// One client's request path; clones share [`Inner`], and each carries its own deadline, write
/// guard and cancel signal.
#[derive(Clone)]
pub(super) struct Transport {
    inner: Arc<Inner>,
    pub(super) deadline: Option<Instant>,
    pub(super) guard: Option<Arc<dyn WriteGuard>>,
    pub(super) cancel: Option<Signal>,
}

impl Transport {
    pub(super) fn new(config: Config, liveness: Liveness) -> Result<Transport, Error> {
        let connector = Connector::new(&config)?;
        let bucket = TokenBucket::new(config.qps, config.burst);
        Ok(Transport {
            inner: Arc::new(Inner {
                pool: Pool::new(connector, MAX_IDLE, liveness.clone()),
                liveness,
                bucket,
                metrics: ClientMetrics::new(&config.name),
                identity_generation: AtomicU64::new(0),
                config,
            }),
            deadline: None,
            guard: None,
            cancel: None,
        })
    }

    pub(super) fn config(&self) -> &Config {
        &self.inner.config
    }

    pub(super) fn pool(&self) -> &Pool {
        &self.inner.pool
    }

    pub(super) fn liveness(&self) -> &Liveness {
        &self.inner.liveness
    }

    /// Starts a watch on a connection of its own; the timeout covers the response head only,
    /// and the body gets the idle deadline of [`GuardedBody`].
    pub(super) async fn watch(&self, spec: &RequestSpec) -> Result<GuardedBody<Body>, Error> {
        self.rate_limit().await?;
        let (pool, config) = (&self.inner.pool, &self.inner.config);
        let epoch = self.inner.liveness.epoch();
        let attempt = |credential: Credential| async move {
            let timeout = self.timeout()?;
            let started = Instant::now();
            let result =
                super::request::start_watch(pool, config, spec, &credential, timeout).await;
            let code = result.as_ref().map_or_else(Error::code, |_| Some(200));
            self.record(spec, code, started);
            result
        };
        let result = self.authenticated(spec, attempt, |_| Some(200)).await;
        self.suspect_on_timeout(&result, spec);
        let (idle, liveness) = (config.watch_idle_timeout, &self.inner.liveness);
        result.map(|body| GuardedBody::new(body, Deadlines::new(idle, liveness, epoch)))
    }

    /// Guard, rate limit, send, and retry 429s; the body of a 2xx reply.
    pub(super) async fn execute(&self, spec: &RequestSpec) -> Result<Vec<u8>, Error> {
        let mut retries_left = self.inner.config.retries_on_429;
        loop {
            self.check_guard(spec)?;
            self.unless_cancelled(spec, self.rate_limit()).await?;
            let attempt = |credential: Credential| async move {
                // The fence may have closed, or the cancel fired, while this request waited.
                self.check_guard(spec)?;
                self.unless_cancelled(spec, async { Ok(()) }).await?;
                self.send(spec, &credential).await
            };
            let code = |reply: &Reply| Some(reply.code);
            let reply = self.authenticated(spec, attempt, code).await?;
            if (200..300).contains(&reply.code) {
                return Ok(reply.body);
            }
            let error = reply_error(&reply);
            let Some(wait) = self.wait_before_retry(&reply, retries_left) else {
                return Err(error);
            };
            retries_left -= 1;
            log::debug!("{} {}: 429, retrying in {wait:?}", spec.method, spec.path);
            let pause = async {
                smol::Timer::after(wait).await;
                Ok(())
            };
            self.unless_cancelled(spec, pause)
                .await
                .map_err(|_| error)?;
        }
    }

    /// How long to wait before retrying `reply`: only a 429, while retries are left and the
    /// wait ends before the deadline.
    fn wait_before_retry(&self, reply: &Reply, retries_left: u32) -> Option<Duration> {
        if reply.code != 429 || retries_left == 0 {
            return None;
        }
        let wait = reply
            .retry_after
            .unwrap_or(DEFAULT_RETRY_AFTER)
            .min(MAX_RETRY_AFTER);
        let past_deadline = self.deadline.is_some_and(|d| Instant::now() + wait > d);
        (!past_deadline).then_some(wait)
    }

    /// `attempt` with this client's credential. A 401 to a credential plugin's credential runs
    /// the plugin again and makes one more attempt, as client-go does; `code` reads the status
    /// from a successful attempt (a reply) or from an error (a watch refused).
    async fn authenticated<T, Fut>(
        &self,
        spec: &RequestSpec,
        attempt: impl Fn(Credential) -> Fut,
        code: impl Fn(&T) -> Option<u16>,
    ) -> Result<T, Error>
    where
        Fut: Future<Output = Result<T, Error>>,
    {
        let credential = self.unless_cancelled(spec, self.credential()).await?;
        // Boxed: an attempt's future is large, and two of them inline would make every frame
        // that polls this one large too (a debug build overflowed a 2 MiB thread stack).
        let result = Box::pin(attempt(credential.clone())).await;
        let unauthorized = match &result {
            Ok(value) => code(value) == Some(401),
            Err(e) => e.code() == Some(401),
        };
        // Only a plugin's credential is retired (and so worth a retry).
        if unauthorized && self.inner.config.auth.retire(&credential).await {
            let (method, path) = (&spec.method, &spec.path);
            log::info!(
                "{method} {path}: 401 Unauthorized; running the credential plugin again and retrying once"
            );
            let credential = self.unless_cancelled(spec, self.credential()).await?;
            return Box::pin(attempt(credential)).await;
        }
        result
    }

    /// This client's credential for the next request (a plugin run at most, within the
    /// deadline). A new plugin certificate retires the idle connections made with the old one.
    async fn credential(&self) -> Result<Credential, Error> {
        let fetch = self.inner.config.auth.credential();
        let credential = match self.deadline {
            None => fetch.await?,
            Some(_) => {
                let left = self.timeout()?;
                or_timeout(fetch, smol::Timer::after(left), || {
                    "the credential plugin did not answer before the request deadline".into()
                })
                .await?
            }
        };
        if credential.identity.is_some() {
            let seen = self
                .inner
                .identity_generation
                .swap(credential.generation, Ordering::Relaxed);
            if seen != credential.generation {
                self.inner.pool.clear_idle();
            }
        }
        Ok(credential)
    }

    /// One attempt within the request timeout; a timed-out attempt drops its connection and
    /// makes the others suspect.
    async fn send(&self, spec: &RequestSpec, credential: &Credential) -> Result<Reply, Error> {
        let timeout = self.timeout()?;
        let started = Instant::now();
        let (pool, config) = (&self.inner.pool, &self.inner.config);
        let attempt = super::hedge::send(pool, config, spec, credential, &self.inner.liveness);
        let result = or_timeout(attempt, smol::Timer::after(timeout), || {
            format!(
                "{} {} got no complete reply within {timeout:?}",
                spec.method, spec.path
            )
        })
        .await;
        self.record(spec, result.as_ref().ok().map(|r| r.code), started);
        self.suspect_on_timeout(&result, spec);
        result
    }

    /// A request with no reply in time makes this client's other connections suspect.
    fn suspect_on_timeout<T>(&self, result: &Result<T, Error>, spec: &RequestSpec) {
        if let Err(Error::Timeout(why)) = result {
            let what = format!("{} {}: {why}", spec.method, spec.path);
            self.inner.liveness.suspect(&what);
        }
    }

    /// `wait`, unless the cancel signal fires first (or has fired).
    async fn unless_cancelled<T>(
        &self,
        spec: &RequestSpec,
        wait: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        let Some(cancel) = &self.cancel else {
            return wait.await;
        };
        let cancelled = async {
            cancel.wait().await;
            Err(Error::Refused(format!(
                "{} {} not sent: shutting down",
                spec.method, spec.path
            )))
        };
        if cancel.is_fired() {
            return cancelled.await;
        }
        smol::future::or(cancelled, wait).await
    }

    fn check_guard(&self, spec: &RequestSpec) -> Result<(), Error> {
        match &self.guard {
            Some(guard) if spec.is_mutating() => guard.check(spec.method.as_ref(), &spec.path),
            _ => Ok(()),
        }
    }

    async fn rate_limit(&self) -> Result<(), Error> {
        let started = Instant::now();
        let result = match self.deadline {
            Some(deadline) => self.inner.bucket.acquire_before(deadline).await,
            None => {
                self.inner.bucket.acquire().await;
                Ok(())
            }
        };
        let waited = started.elapsed().as_secs_f64();
        self.inner.metrics.rate_limited(waited);
        result
    }

    /// `min(request_timeout, deadline - now)`; a passed deadline is a timeout at once.
    fn timeout(&self) -> Result<Duration, Error> {
        let timeout = self.inner.config.request_timeout;
        let Some(deadline) = self.deadline else {
            return Ok(timeout);
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::Timeout("the request deadline has passed".into()));
        }
        Ok(timeout.min(left))
    }

    fn record(&self, spec: &RequestSpec, code: Option<u16>, started: Instant) {
        let seconds = started.elapsed().as_secs_f64();
        let (method, path) = (&spec.method, &spec.path);
        let status = code.map_or_else(|| "<error>".to_owned(), |c| c.to_string());
        log::debug!("{method} {path} {status} {:.1}ms", seconds * 1000.0);
        let metrics = &self.inner.metrics;
        metrics.request(spec.verb, method.as_ref(), &status, seconds);
    }
}
