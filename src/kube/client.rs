//! Client: typed API calls over one client's own pool, rate limiter and connector.
//!
//! Every request: ask the write guard (mutations), wait for the token bucket, send on a pooled
//! connection within `min(request_timeout, deadline - now)`, read the whole reply, retry a 429
//! a bounded number of times. A 401 to an exec plugin's credential runs the plugin again and
//! retries once, as client-go does. Clones share the pool, bucket and credential: they are the
//! same logical client. Two `Client::new` calls share nothing.

use super::Error;
use super::api::{ObjectList, Resource};
use super::client_metrics::ClientMetrics;
use super::config::{Config, Credential};
use super::connect::Connector;
use super::guard::WriteGuard;
use super::liveness::Liveness;
use super::params::{ListParams, WatchParams};
use super::pool::{MAX_IDLE, Pool};
use super::ratelimit::TokenBucket;
use super::request::{Reply, RequestSpec, reply_error};
use super::stream::WatchStream;
use super::watch_body::GuardedBody;
use crate::deadline::or_timeout;
use crate::signal::Signal;
use http_types::Method;
use serde::Serialize;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Default page size of [`Client::list_all`] (client-go's pager uses 500).
pub const DEFAULT_PAGE_SIZE: u32 = 500;
/// Longest `Retry-After` honoured between 429 retries.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);
/// Wait between 429 retries when the server sends no `Retry-After` (client-go's default).
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

const JSON: &str = "application/json";
const MERGE_PATCH: &str = "application/merge-patch+json";
const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";

/// How the API server reads a PATCH body: RFC 7386 merge patch, or the strategic merge patch of
/// built-in kinds (with directives such as `$patch: replace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    Merge,
    Strategic,
}

#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    deadline: Option<Instant>,
    guard: Option<Arc<dyn WriteGuard>>,
    cancel: Option<Signal>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("name", &self.name())
            .field("server", &self.inner.config.server.as_str())
            .field("deadline", &self.deadline)
            .field("guarded", &self.guard.is_some())
            .finish()
    }
}

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

impl Client {
    /// A client with its own connector, token bucket and pool.
    pub fn new(config: Config) -> Result<Client, Error> {
        Client::with_liveness(config, Liveness::new())
    }

    /// [`Client::new`], raising and heeding connection suspicions through `liveness` (shared
    /// with another client of the same replica; raising one never waits on the other client).
    pub fn with_liveness(config: Config, liveness: Liveness) -> Result<Client, Error> {
        let connector = Connector::new(&config)?;
        let bucket = TokenBucket::new(config.qps, config.burst);
        Ok(Client {
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

    pub fn name(&self) -> &str {
        &self.inner.config.name
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The same client whose requests (rate-limit wait included) must finish by `deadline`.
    pub fn with_deadline(&self, deadline: Instant) -> Client {
        Client {
            deadline: Some(deadline),
            ..self.clone()
        }
    }

    /// The same client asking `guard` before every POST, PUT, PATCH and DELETE.
    pub fn with_write_guard(&self, guard: Arc<dyn WriteGuard>) -> Client {
        Client {
            guard: Some(guard),
            ..self.clone()
        }
    }

    /// The same client, told to stop by `cancel`: once it fires, requests stop waiting (for the
    /// rate limiter, for a 429's Retry-After) and nothing more is sent; each fails with
    /// `Error::Refused`. A request already sent still runs to its reply, so nothing this
    /// client writes can reach the server after its caller believes it has stopped.
    pub fn with_cancel(&self, cancel: Signal) -> Client {
        Client {
            cancel: Some(cancel),
            ..self.clone()
        }
    }

    /// Idle pooled connections; for tests and diagnostics.
    pub fn idle_connections(&self) -> usize {
        self.inner.pool.idle_count()
    }

    /// Suspicion and watch hearing of this client's connections.
    pub fn liveness(&self) -> &Liveness {
        &self.inner.liveness
    }

    /// Makes every connection with a write in flight reset when it closes, so nothing it still
    /// holds reaches the server later; call when the fence closes. Returns how many there were.
    pub fn reset_writes_in_flight(&self) -> usize {
        self.inner.pool.writes.reset_all()
    }

    pub async fn get<K: Resource>(&self, namespace: Option<&str>, name: &str) -> Result<K, Error> {
        let spec = RequestSpec::new(Method::Get, K::url_path(namespace, Some(name)), "get");
        decode(&self.execute(&spec).await?)
    }

    /// One page of a LIST.
    pub async fn list<K: Resource>(
        &self,
        namespace: Option<&str>,
        params: &ListParams,
    ) -> Result<ObjectList<K>, Error> {
        let mut spec = RequestSpec::new(Method::Get, K::url_path(namespace, None), "list");
        spec.query = params.query();
        decode(&self.execute(&spec).await?)
    }

    /// Every page of a LIST, with the first page's resourceVersion.
    pub async fn list_all<K: Resource>(
        &self,
        namespace: Option<&str>,
        params: &ListParams,
    ) -> Result<ObjectList<K>, Error> {
        let mut page_params = params.clone();
        page_params.limit = Some(params.limit.unwrap_or(DEFAULT_PAGE_SIZE));
        let mut all: ObjectList<K> = self.list(namespace, &page_params).await?;
        let mut next = all.metadata.continue_token.take();
        while let Some(token) = next.filter(|t| !t.is_empty()) {
            page_params.continue_token = Some(token);
            // A continued list must not also pin a resourceVersion.
            page_params.resource_version = None;
            let page: ObjectList<K> = self.list(namespace, &page_params).await?;
            all.items.extend(page.items);
            next = page.metadata.continue_token;
        }
        Ok(all)
    }

    /// Creates `obj` in `obj.metadata().namespace`.
    pub async fn create<K: Resource>(&self, obj: &K) -> Result<K, Error> {
        let namespace = obj.metadata().namespace.as_deref();
        let mut spec = RequestSpec::new(Method::Post, K::url_path(namespace, None), "create");
        spec.body = Some((encode(obj)?, JSON));
        decode(&self.execute(&spec).await?)
    }

    /// PUT with the resourceVersion in `obj` (a stale one gets 409 Conflict).
    pub async fn replace<K: Resource>(&self, obj: &K) -> Result<K, Error> {
        let path = object_path(obj)?;
        self.put(path, obj).await
    }

    /// PUT of the status subresource.
    pub async fn replace_status<K: Resource>(&self, obj: &K) -> Result<K, Error> {
        let path = object_path(obj)? + "/status";
        self.put(path, obj).await
    }

    pub async fn patch_merge<K: Resource>(
        &self,
        namespace: Option<&str>,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<K, Error> {
        self.patch(K::url_path(namespace, Some(name)), patch).await
    }

    /// A PATCH of either kind; a strategic merge patch is for built-in kinds only.
    pub async fn patch_as<K: Resource>(
        &self,
        namespace: Option<&str>,
        name: &str,
        patch: &serde_json::Value,
        kind: PatchKind,
    ) -> Result<K, Error> {
        let content_type = match kind {
            PatchKind::Merge => MERGE_PATCH,
            PatchKind::Strategic => STRATEGIC_MERGE_PATCH,
        };
        self.patch_typed(K::url_path(namespace, Some(name)), patch, content_type)
            .await
    }

    pub async fn patch_status<K: Resource>(
        &self,
        namespace: Option<&str>,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<K, Error> {
        self.patch(K::url_path(namespace, Some(name)) + "/status", patch)
            .await
    }

    /// Deletes, optionally only if the object is still at `precondition_resource_version`.
    pub async fn delete<K: Resource>(
        &self,
        namespace: Option<&str>,
        name: &str,
        precondition_resource_version: Option<&str>,
    ) -> Result<(), Error> {
        let preconditions = precondition_resource_version.map(|rv| json!({"resourceVersion": rv}));
        self.delete_if::<K>(namespace, name, preconditions).await
    }

    /// Deletes the object only if it is still the one with `uid`, at `resource_version`.
    pub async fn delete_exact<K: Resource>(
        &self,
        namespace: Option<&str>,
        name: &str,
        uid: &str,
        resource_version: &str,
    ) -> Result<(), Error> {
        let preconditions = json!({"uid": uid, "resourceVersion": resource_version});
        self.delete_if::<K>(namespace, name, Some(preconditions))
            .await
    }

    async fn delete_if<K: Resource>(
        &self,
        namespace: Option<&str>,
        name: &str,
        preconditions: Option<serde_json::Value>,
    ) -> Result<(), Error> {
        let path = K::url_path(namespace, Some(name));
        let mut spec = RequestSpec::new(Method::Delete, path, "delete");
        if let Some(preconditions) = preconditions {
            let options = json!({
                "kind": "DeleteOptions",
                "apiVersion": "v1",
                "preconditions": preconditions,
            });
            spec.body = Some((encode(&options)?, JSON));
        }
        self.execute(&spec).await.map(drop)
    }

    /// Starts a watch on a connection of its own; the timeout covers the response head only.
    pub async fn watch<K: Resource>(
        &self,
        namespace: Option<&str>,
        params: &WatchParams,
    ) -> Result<WatchStream<K>, Error> {
        let mut spec = RequestSpec::new(Method::Get, K::url_path(namespace, None), "watch");
        spec.query = params.within(self.inner.config.watch_idle_timeout).query();
        self.rate_limit().await?;
        let mut may_refresh = true;
        loop {
            let credential = self.credential().await?;
            let timeout = self.timeout()?;
            let started = Instant::now();
            let (pool, config) = (&self.inner.pool, &self.inner.config);
            let epoch = self.inner.liveness.epoch();
            let result =
                super::request::start_watch(pool, config, &spec, &credential, timeout).await;
            let code = result.as_ref().map_or_else(Error::code, |_| Some(200));
            self.record(&spec, code, started);
            if code == Some(401) && may_refresh && self.refresh(&spec, &credential).await {
                may_refresh = false;
                continue;
            }
            self.suspect_on_timeout(&result, &spec);
            let (idle, liveness) = (config.watch_idle_timeout, &self.inner.liveness);
            return result.map(|body| {
                WatchStream::from_reader(GuardedBody::new(body, idle, liveness, epoch))
            });
        }
    }

    async fn put<K: Resource>(&self, path: String, obj: &K) -> Result<K, Error> {
        let mut spec = RequestSpec::new(Method::Put, path, "update");
        spec.body = Some((encode(obj)?, JSON));
        decode(&self.execute(&spec).await?)
    }

    async fn patch<K: Resource>(
        &self,
        path: String,
        patch: &serde_json::Value,
    ) -> Result<K, Error> {
        self.patch_typed(path, patch, MERGE_PATCH).await
    }

    async fn patch_typed<K: Resource>(
        &self,
        path: String,
        patch: &serde_json::Value,
        content_type: &'static str,
    ) -> Result<K, Error> {
        let mut spec = RequestSpec::new(Method::Patch, path, "patch");
        spec.body = Some((encode(patch)?, content_type));
        decode(&self.execute(&spec).await?)
    }

    /// Guard, rate limit, send, and retry 429s; the body of a 2xx reply.
    async fn execute(&self, spec: &RequestSpec) -> Result<Vec<u8>, Error> {
        let mut retries_left = self.inner.config.retries_on_429;
        let mut may_refresh = true;
        loop {
            self.check_guard(spec)?;
            self.unless_cancelled(spec, self.rate_limit()).await?;
            let credential = self.unless_cancelled(spec, self.credential()).await?;
            // The fence may have closed, or the cancel fired, while this request waited.
            self.check_guard(spec)?;
            self.unless_cancelled(spec, async { Ok(()) }).await?;
            match self.send(spec, &credential).await {
                Ok(reply) if (200..300).contains(&reply.code) => return Ok(reply.body),
                Ok(reply)
                    if reply.code == 401
                        && may_refresh
                        && self.refresh(spec, &credential).await =>
                {
                    may_refresh = false;
                }
                Ok(reply) => {
                    let error = reply_error(&reply);
                    if reply.code != 429 || retries_left == 0 {
                        return Err(error);
                    }
                    let wait = reply
                        .retry_after
                        .unwrap_or(DEFAULT_RETRY_AFTER)
                        .min(MAX_RETRY_AFTER);
                    if self.deadline.is_some_and(|d| Instant::now() + wait > d) {
                        return Err(error);
                    }
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
                Err(e) => return Err(e),
            }
        }
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

    /// After a 401 to `used`: whether a retry may present a new credential (exec plugins).
    async fn refresh(&self, spec: &RequestSpec, used: &Credential) -> bool {
        let retry = self.inner.config.auth.retire(used).await;
        if retry {
            log::info!(
                "{} {}: 401 Unauthorized; running the credential plugin again and retrying once",
                spec.method,
                spec.path
            );
        }
        retry
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
        let elapsed = started.elapsed();
        log::debug!(
            "{} {} {} {:.1}ms",
            spec.method,
            spec.path,
            code.map_or_else(|| "<error>".to_owned(), |c| c.to_string()),
            elapsed.as_secs_f64() * 1000.0
        );
        let method = spec.method.as_ref();
        let seconds = elapsed.as_secs_f64();
        self.inner.metrics.request(spec.verb, method, code, seconds);
    }
}

fn object_path<K: Resource>(obj: &K) -> Result<String, Error> {
    let meta = obj.metadata();
    match meta.name.as_deref() {
        Some(name) if !name.is_empty() => Ok(K::url_path(meta.namespace.as_deref(), Some(name))),
        _ => Err(Error::Refused(format!(
            "cannot write a {} without metadata.name",
            K::KIND
        ))),
    }
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, Error> {
    serde_json::to_vec(value).map_err(|e| Error::Refused(format!("cannot encode the request: {e}")))
}

fn decode<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|e| {
        Error::Decode(format!(
            "{e}; the body began {:?}",
            super::request::preview(body)
        ))
    })
}
