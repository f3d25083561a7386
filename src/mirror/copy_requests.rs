//! The API requests skiff makes on a copy, addressed through its kind's row.
//!
//! Every kind is the same object type ([`Object`]) at its own path, so each request is written
//! once, for all kinds, and the row says the rest (its path, and which patch it takes).

use super::copy::CopyInfo;
use super::existing::Existing;
use super::payload::Payload;
use crate::kind::Kind;
use crate::kube::api::{Object, ObjectMeta};
use crate::kube::{Client, Error, ListParams, Pieces, Selectors};
use serde_json::{Value, json};

/// Requests on copies, through one client (the fenced main client).
#[derive(Clone)]
pub struct CopyRequests {
    client: Client,
}

impl CopyRequests {
    pub fn new(client: Client) -> CopyRequests {
        CopyRequests { client }
    }

    /// Reads the object of kind `row` named `name` in `ns` from the server (not the cache).
    pub async fn existing(
        &self,
        row: &'static Kind,
        ns: &str,
        name: &str,
    ) -> Result<Existing, Error> {
        let object: Object = self.client.get_at(row.object_path(ns, name)).await?;
        Ok(Existing::of(row, &object))
    }

    /// Creates the copy `body` encodes in `ns`, holding `payload`; what the cache would keep of
    /// the object created. The reply is asked for the metadata alone: the content is what was
    /// sent.
    pub async fn create(
        &self,
        ns: &str,
        body: Pieces,
        payload: &Payload,
    ) -> Result<CopyInfo, Error> {
        let path = payload.row().collection_path(Some(ns));
        let created = self.client.create_encoded_at(path, body).await?;
        Ok(CopyInfo::written(&created.metadata, payload))
    }

    /// A patch (`body`, of the kind the row takes) of the copy named `name` in `ns`, which then
    /// holds `payload`; what the cache would keep of it. As a create's, the reply is asked for
    /// the metadata alone.
    pub async fn patch(
        &self,
        ns: &str,
        name: &str,
        body: Pieces,
        payload: &Payload,
    ) -> Result<CopyInfo, Error> {
        let row = payload.row();
        let patched = (self.client)
            .patch_encoded_at(row.object_path(ns, name), body, row.patch)
            .await?;
        Ok(CopyInfo::written(&patched.metadata, payload))
    }

    /// The metadata of every object of the kind `row` whose labels `labels` selects, of every
    /// name or only `name`, across namespaces: read from the server, not the cache.
    pub async fn list_labelled(
        &self,
        row: &'static Kind,
        labels: &str,
        name: Option<&str>,
    ) -> Result<Vec<ObjectMeta>, Error> {
        let params = ListParams {
            selectors: Selectors {
                labels: Some(labels.to_owned()),
                fields: name.map(|n| format!("metadata.name={n}")),
            },
            ..ListParams::default()
        };
        (self.client)
            .list_metadata_at(row.collection_path(None), &params)
            .await
    }

    /// Patches the metadata of the object named `name` in `ns` with `patch`, of the kind the
    /// row takes (a patch carrying a resourceVersion is conditional on it).
    pub async fn patch_metadata(
        &self,
        row: &'static Kind,
        ns: &str,
        name: &str,
        patch: &Value,
    ) -> Result<(), Error> {
        let body = serde_json::to_vec(patch).map_err(|e| Error::Refused(e.to_string()))?;
        (self.client)
            .patch_encoded_at(row.object_path(ns, name), body.into(), row.patch)
            .await
            .map(drop)
    }

    /// Deletes the copy named `name` in `ns`, if it is still at version `rv`.
    pub async fn delete(
        &self,
        row: &'static Kind,
        ns: &str,
        name: &str,
        rv: &str,
    ) -> Result<(), Error> {
        let preconditions = json!({"resourceVersion": rv});
        (self.client)
            .delete_at(row.object_path(ns, name), Some(preconditions))
            .await
    }

    /// Deletes the object named `name` in `ns` only if it is still the one read: uid `uid` at
    /// version `rv`.
    pub async fn delete_exact(
        &self,
        row: &'static Kind,
        ns: &str,
        name: &str,
        (uid, rv): (&str, &str),
    ) -> Result<(), Error> {
        let preconditions = json!({"uid": uid, "resourceVersion": rv});
        (self.client)
            .delete_at(row.object_path(ns, name), Some(preconditions))
            .await
    }
}
