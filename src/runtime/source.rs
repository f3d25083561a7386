//! The API client as a watcher's source: a collection, scoped to one namespace or to all.

use super::list_watch::{EventStream, ListWatch};
use crate::kube::api::{ObjectList, Resource};
use crate::kube::liveness::WatchHealth;
use crate::kube::{Client, Error, ListParams, WatchEvent, WatchParams, WatchStream};

/// Lists and watches `K` through `client`, in `namespace` or (`None`) across all namespaces.
pub struct ApiSource {
    client: Client,
    namespace: Option<String>,
    /// The collection's path when the kind is known only at run time; `K`'s own otherwise.
    path: Option<String>,
}

impl ApiSource {
    pub fn new(client: &Client, namespace: Option<&str>) -> ApiSource {
        ApiSource {
            client: client.clone(),
            namespace: namespace.map(str::to_owned),
            path: None,
        }
    }

    /// A source listing and watching the collection at `path` (which names `namespace`, if any).
    pub fn at(client: &Client, namespace: Option<&str>, path: String) -> ApiSource {
        ApiSource {
            path: Some(path),
            ..ApiSource::new(client, namespace)
        }
    }
}

impl<K: Resource> ListWatch<K> for ApiSource {
    type Stream = WatchStream<K>;

    async fn list(&self, params: &ListParams) -> Result<ObjectList<K>, Error> {
        let path = self.path.clone();
        let path = path.unwrap_or_else(|| K::url_path(self.namespace.as_deref(), None));
        self.client.list_at(path, params).await
    }

    async fn watch(&self, params: &WatchParams) -> Result<WatchStream<K>, Error> {
        let path = self.path.clone();
        let path = path.unwrap_or_else(|| K::url_path(self.namespace.as_deref(), None));
        self.client.watch_at(path, params).await
    }

    fn register_health(&self, what: &str) -> Option<WatchHealth> {
        let what = match &self.namespace {
            Some(ns) => format!("{what} in namespace {ns}"),
            None => what.to_owned(),
        };
        Some(self.client.liveness().register(&what))
    }
}

impl<K: Resource> EventStream<K> for WatchStream<K> {
    async fn next(&mut self) -> Option<Result<WatchEvent<K>, Error>> {
        WatchStream::next(self).await
    }
}
