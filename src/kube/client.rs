//! Client: typed API calls over one client's own pool, rate limiter and connector.
//!
//! Each verb builds a request and hands it to the client's [`Transport`], which guards, rate
//! limits, authenticates, sends and retries it. Clones share the pool, bucket and credential:
//! they are the same logical client. Two `Client::new` calls share nothing.

use super::Error;
use super::api::{ListMeta, ObjectList, ObjectMeta, Resource};
use super::body::Pieces;
use super::config::Config;
use super::guard::WriteGuard;
use super::liveness::Liveness;
use super::params::{ListParams, WatchParams};
use super::request::RequestSpec;
use super::stream::WatchStream;
use super::transport::Transport;
use crate::signal::Signal;
use http_types::Method;
use serde::Serialize;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// Default page size of [`Client::list_all`] (client-go's pager uses 500).
pub const DEFAULT_PAGE_SIZE: u32 = 500;
const JSON: &str = "application/json";
/// The Accept header of a write whose reply is read for its metadata only: the API server then
/// answers with the object's metadata (`PartialObjectMetadata`), not the object it stored,
/// so a write of a big object does not bring it back. A server that cannot answers in JSON.
pub const METADATA_ONLY: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json";

/// The Accept header of a LIST read for its objects' metadata only.
const METADATA_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json";

/// What a write answered with, read for its metadata only ([`METADATA_ONLY`]).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub struct Written {
    /// `PartialObjectMetadata`, or the object's own kind from a server that ignored the ask.
    pub kind: String,
    pub metadata: ObjectMeta,
}

/// A page of a LIST read for metadata only, whose `items` an empty list holds as `null`.
#[derive(Default, serde::Deserialize)]
#[serde(default)]
struct MetadataPage {
    metadata: ListMeta,
    items: Option<Vec<Written>>,
}

/// How the API server reads a PATCH body: RFC 7386 merge patch, the strategic merge patch of
/// built-in kinds (with directives such as `$patch: replace`), or an RFC 6902 JSON patch (a
/// list of operations: what replaces a custom resource's map whole, conditionally).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    Merge,
    Strategic,
    Json,
}

impl PatchKind {
    /// The Content-Type that tells the API server which kind of patch the body is.
    fn content_type(self) -> &'static str {
        match self {
            PatchKind::Merge => "application/merge-patch+json",
            PatchKind::Strategic => "application/strategic-merge-patch+json",
            PatchKind::Json => "application/json-patch+json",
        }
    }
}

#[derive(Clone)]
pub struct Client {
    transport: Transport,
}

impl Client {
    /// A client with its own connector, token bucket and pool.
    pub fn new(config: Config) -> Result<Client, Error> {
        Client::with_liveness(config, Liveness::new())
    }

    /// [`Client::new`], raising and heeding connection suspicions through `liveness` (shared
    /// with another client of the same replica; raising one never waits on the other client).
    pub fn with_liveness(config: Config, liveness: Liveness) -> Result<Client, Error> {
        Ok(Client {
            transport: Transport::new(config, liveness)?,
        })
    }

    pub fn config(&self) -> &Config {
        self.transport.config()
    }

    /// The same client (sharing its pool, bucket and credential), changed by `change`.
    fn with(&self, change: impl FnOnce(&mut Transport)) -> Client {
        let mut transport = self.transport.clone();
        change(&mut transport);
        Client { transport }
    }

    /// The same client whose requests (rate-limit wait included) must finish by `deadline`.
    pub fn with_deadline(&self, deadline: Instant) -> Client {
        self.with(|t| t.deadline = Some(deadline))
    }

    /// The same client asking `guard` before every POST, PUT, PATCH and DELETE.
    pub fn with_write_guard(&self, guard: Arc<dyn WriteGuard>) -> Client {
        self.with(|t| t.guard = Some(guard))
    }

    /// The same client, told to stop by `cancel`: once it fires, requests stop waiting (for the
    /// rate limiter, for a 429's Retry-After) and nothing more is sent; each fails with
    /// `Error::Refused`. A request already sent still runs to its reply, so nothing this
    /// client writes can reach the server after its caller believes it has stopped.
    pub fn with_cancel(&self, cancel: Signal) -> Client {
        self.with(|t| t.cancel = Some(cancel))
    }

    /// Idle pooled connections; for tests and diagnostics.
    pub fn idle_connections(&self) -> usize {
        self.transport.pool().idle_count()
    }

    /// Suspicion and watch hearing of this client's connections.
    pub fn liveness(&self) -> &Liveness {
        self.transport.liveness()
    }

    /// Makes every connection with a write in flight reset when it closes, so nothing it still
    /// holds reaches the server later; call when the fence closes. Returns how many there were.
    pub fn reset_writes_in_flight(&self) -> usize {
        self.transport.pool().writes.reset_all()
    }

    pub async fn get<K: Resource>(&self, namespace: Option<&str>, name: &str) -> Result<K, Error> {
        self.get_at(K::url_path(namespace, Some(name))).await
    }

    /// A GET of the object at `path`, for a kind addressed at run time.
    pub async fn get_at<K: Resource>(&self, path: String) -> Result<K, Error> {
        let spec = RequestSpec::new(Method::Get, path, "get");
        decode(&self.transport.execute(&spec).await?)
    }

    /// One page of a LIST.
    pub async fn list<K: Resource>(
        &self,
        namespace: Option<&str>,
        params: &ListParams,
    ) -> Result<ObjectList<K>, Error> {
        self.list_at(K::url_path(namespace, None), params).await
    }

    /// One page of a LIST of the collection at `path`, for a kind addressed at run time.
    pub async fn list_at<K: Resource>(
        &self,
        path: String,
        params: &ListParams,
    ) -> Result<ObjectList<K>, Error> {
        let mut spec = RequestSpec::new(Method::Get, path, "list");
        spec.query = params.query();
        decode(&self.transport.execute(&spec).await?)
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

    /// The metadata of every object of the collection at `path` a LIST with `params` finds,
    /// page by page, asked for metadata only (`PartialObjectMetadataList`): a re-read of many
    /// big objects that brings none of their content.
    pub async fn list_metadata_at(
        &self,
        path: String,
        params: &ListParams,
    ) -> Result<Vec<ObjectMeta>, Error> {
        let mut page_params = params.clone();
        page_params.limit = Some(params.limit.unwrap_or(DEFAULT_PAGE_SIZE));
        let mut all = Vec::new();
        loop {
            let mut spec = RequestSpec::new(Method::Get, path.clone(), "list");
            spec.query = page_params.query();
            spec.accept = METADATA_LIST;
            let page: MetadataPage = decode(&self.transport.execute(&spec).await?)?;
            all.extend(page.items.into_iter().flatten().map(|item| item.metadata));
            let Some(token) = page.metadata.continue_token.filter(|t| !t.is_empty()) else {
                return Ok(all);
            };
            page_params.continue_token = Some(token);
            page_params.resource_version = None;
        }
    }

    /// Creates `obj` in `obj.metadata().namespace`.
    pub async fn create<K: Resource>(&self, obj: &K) -> Result<K, Error> {
        let namespace = obj.metadata().namespace.as_deref();
        let mut spec = RequestSpec::new(Method::Post, K::url_path(namespace, None), "create");
        spec.body = Some((encode(obj)?.into(), JSON));
        decode(&self.transport.execute(&spec).await?)
    }

    /// Creates `obj`, asking for the created object's metadata only.
    pub async fn create_for_metadata<K: Resource>(&self, obj: &K) -> Result<Written, Error> {
        let namespace = obj.metadata().namespace.as_deref();
        self.create_encoded_at(K::url_path(namespace, None), encode(obj)?.into())
            .await
    }

    /// Creates the object `body` encodes (a head and a shared content, say) in the collection
    /// at `path`, asking for its metadata only.
    pub async fn create_encoded_at(&self, path: String, body: Pieces) -> Result<Written, Error> {
        let mut spec = RequestSpec::new(Method::Post, path, "create");
        spec.body = Some((body, JSON));
        spec.accept = METADATA_ONLY;
        decode(&self.transport.execute(&spec).await?)
    }

    /// Asks the server to create `obj` without storing it (`dryRun=All`): validation and
    /// admission run, nothing is written. Answered with the metadata only.
    pub async fn create_dry_run<K: Resource>(&self, obj: &K) -> Result<Written, Error> {
        let namespace = obj.metadata().namespace.as_deref();
        let mut spec = RequestSpec::new(Method::Post, K::url_path(namespace, None), "create");
        spec.query.push(("dryRun", "All".to_owned()));
        spec.body = Some((encode(obj)?.into(), JSON));
        spec.accept = METADATA_ONLY;
        decode(&self.transport.execute(&spec).await?)
    }

    /// PUT with the resourceVersion in `obj` (a stale one gets 409 Conflict).
    pub async fn replace<K: Resource>(&self, obj: &K) -> Result<K, Error> {
        self.put(object_path(obj)?, obj).await
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

    /// A PATCH of `body` (already encoded, perhaps in shared pieces) of the object at `path`,
    /// asking for its metadata only ([`METADATA_ONLY`]).
    pub async fn patch_encoded_at(
        &self,
        path: String,
        body: Pieces,
        kind: PatchKind,
    ) -> Result<Written, Error> {
        let mut spec = RequestSpec::new(Method::Patch, path, "patch");
        spec.body = Some((body, kind.content_type()));
        spec.accept = METADATA_ONLY;
        decode(&self.transport.execute(&spec).await?)
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
        self.delete_at(K::url_path(namespace, Some(name)), preconditions)
            .await
    }

    /// Deletes the object at `path`, if it still meets `preconditions` (a `uid`, a
    /// `resourceVersion`): a kind addressed at run time.
    pub async fn delete_at(
        &self,
        path: String,
        preconditions: Option<serde_json::Value>,
    ) -> Result<(), Error> {
        let mut spec = RequestSpec::new(Method::Delete, path, "delete");
        if let Some(preconditions) = preconditions {
            let options = json!({
                "kind": "DeleteOptions",
                "apiVersion": "v1",
                "preconditions": preconditions,
            });
            spec.body = Some((encode(&options)?.into(), JSON));
        }
        self.transport.execute(&spec).await.map(drop)
    }

    /// Starts a watch on a connection of its own; the timeout covers the response head only.
    pub async fn watch<K: Resource>(
        &self,
        namespace: Option<&str>,
        params: &WatchParams,
    ) -> Result<WatchStream<K>, Error> {
        self.watch_at(K::url_path(namespace, None), params).await
    }

    /// A watch of the collection at `path`, for a kind addressed at run time.
    pub async fn watch_at<K: Resource>(
        &self,
        path: String,
        params: &WatchParams,
    ) -> Result<WatchStream<K>, Error> {
        let mut spec = RequestSpec::new(Method::Get, path, "watch");
        spec.query = params.within(self.config().watch_idle_timeout).query();
        self.transport
            .watch(&spec)
            .await
            .map(WatchStream::from_reader)
    }

    async fn put<K: Resource>(&self, path: String, obj: &K) -> Result<K, Error> {
        let mut spec = RequestSpec::new(Method::Put, path, "update");
        spec.body = Some((encode(obj)?.into(), JSON));
        decode(&self.transport.execute(&spec).await?)
    }

    /// A merge patch of the object at `path`.
    async fn patch<K: Resource>(
        &self,
        path: String,
        patch: &serde_json::Value,
    ) -> Result<K, Error> {
        self.patch_at(path, patch, PatchKind::Merge).await
    }

    /// A PATCH of `kind` of the object (or subresource) at `path`, answered with the object.
    pub async fn patch_at<K: Resource>(
        &self,
        path: String,
        patch: &serde_json::Value,
        kind: PatchKind,
    ) -> Result<K, Error> {
        let mut spec = RequestSpec::new(Method::Patch, path, "patch");
        spec.body = Some((encode(patch)?.into(), kind.content_type()));
        decode(&self.transport.execute(&spec).await?)
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
