//! The API client as a watcher's source: a collection, scoped to one namespace or to all.

use super::list_watch::{EventStream, ListWatch};
use crate::kube::api::{ObjectList, Resource};
use crate::kube::liveness::WatchHealth;
use crate::kube::{Client, Error, ListParams, WatchEvent, WatchParams, WatchStream};

/// Lists and watches `K` through `client`, in `namespace` or (`None`) across all namespaces.
pub struct ApiSource {
    client: Client,
    namespace: Option<String>,
}

impl ApiSource {
    pub fn new(client: &Client, namespace: Option<&str>) -> ApiSource {
        ApiSource {
            client: client.clone(),
            namespace: namespace.map(str::to_owned),
        }
    }
}

impl<K: Resource> ListWatch<K> for ApiSource {
    type Stream = WatchStream<K>;

    async fn list(&self, params: &ListParams) -> Result<ObjectList<K>, Error> {
        self.client.list(self.namespace.as_deref(), params).await
    }

    async fn watch(&self, params: &WatchParams) -> Result<WatchStream<K>, Error> {
        self.client.watch(self.namespace.as_deref(), params).await
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
