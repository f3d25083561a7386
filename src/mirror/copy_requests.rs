//! The API requests skiff makes on a copy, whatever its kind.
//!
//! A copy is a ConfigMap or a Secret, or an object of a kit kind, and the client's requests are
//! generic over the type. Each request is written here once per kind (once for all kit kinds,
//! through [`with_kit_type!`]), so the rest of the controller asks by [`SourceKind`] and the
//! request code is compiled in once per kind, not once per caller.

use super::copy::CopyInfo;
use super::existing::Existing;
use super::kit_types::{KitResource, with_kit_type};
use super::payload::Payload;
use super::types::SourceKind;
use crate::kube::api::{ConfigMap, Secret};
use crate::kube::{Client, Error, PatchKind, Pieces};

/// Requests on copies, through one client (the fenced main client).
#[derive(Clone)]
pub struct CopyRequests {
    client: Client,
}

impl CopyRequests {
    pub fn new(client: Client) -> CopyRequests {
        CopyRequests { client }
    }

    /// Reads the object of `kind` named `name` in `ns` from the server (not the cache).
    pub async fn existing(
        &self,
        kind: SourceKind,
        ns: &str,
        name: &str,
    ) -> Result<Existing, Error> {
        match kind {
            SourceKind::ConfigMap => self
                .client
                .get::<ConfigMap>(Some(ns), name)
                .await
                .map(|c| Existing::of_configmap(&c)),
            SourceKind::Secret => self
                .client
                .get::<Secret>(Some(ns), name)
                .await
                .map(|s| Existing::of_secret(&s)),
            kit => with_kit_type!(kit, K => self.client.get::<K>(Some(ns), name).await
                .map(|o| Existing::of_kit(kit, o.object())), else Err(unreachable_kind(kit))),
        }
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
        let client = &self.client;
        let created = match payload.kind() {
            SourceKind::ConfigMap => client.create_encoded::<ConfigMap>(Some(ns), body).await?,
            SourceKind::Secret => client.create_encoded::<Secret>(Some(ns), body).await?,
            kit => with_kit_type!(kit, K => client.create_encoded::<K>(Some(ns), body).await?,
                else return Err(unreachable_kind(kit))),
        };
        Ok(CopyInfo::written(&created.metadata, payload))
    }

    /// A strategic merge patch (`body`) of the copy named `name` in `ns`, which then holds
    /// `payload`; what the cache would keep of it. As a create's, the reply is asked for the
    /// metadata alone.
    pub async fn patch(
        &self,
        ns: &str,
        name: &str,
        body: Pieces,
        payload: &Payload,
    ) -> Result<CopyInfo, Error> {
        let (client, strategic) = (&self.client, PatchKind::Strategic);
        let patched = match payload.kind() {
            SourceKind::ConfigMap => {
                client
                    .patch_encoded::<ConfigMap>(Some(ns), name, body, strategic)
                    .await?
            }
            SourceKind::Secret => {
                client
                    .patch_encoded::<Secret>(Some(ns), name, body, strategic)
                    .await?
            }
            kit => with_kit_type!(kit, K => client.patch_encoded::<K>(Some(ns), name, body,
                strategic).await?, else return Err(unreachable_kind(kit))),
        };
        Ok(CopyInfo::written(&patched.metadata, payload))
    }

    /// Deletes the copy named `name` in `ns`, if it is still at version `rv`.
    pub async fn delete(
        &self,
        kind: SourceKind,
        ns: &str,
        name: &str,
        rv: &str,
    ) -> Result<(), Error> {
        match kind {
            SourceKind::ConfigMap => {
                self.client
                    .delete::<ConfigMap>(Some(ns), name, Some(rv))
                    .await
            }
            SourceKind::Secret => self.client.delete::<Secret>(Some(ns), name, Some(rv)).await,
            kit => {
                with_kit_type!(kit, K => self.client.delete::<K>(Some(ns), name, Some(rv)).await,
                else Err(unreachable_kind(kit)))
            }
        }
    }

    /// Deletes the object named `name` in `ns` only if it is still the one read: uid `uid` at
    /// version `rv`.
    pub async fn delete_exact(
        &self,
        kind: SourceKind,
        ns: &str,
        name: &str,
        uid: &str,
        rv: &str,
    ) -> Result<(), Error> {
        match kind {
            SourceKind::ConfigMap => {
                self.client
                    .delete_exact::<ConfigMap>(Some(ns), name, uid, rv)
                    .await
            }
            SourceKind::Secret => {
                self.client
                    .delete_exact::<Secret>(Some(ns), name, uid, rv)
                    .await
            }
            kit => with_kit_type!(kit, K => self.client.delete_exact::<K>(Some(ns), name, uid, rv)
                .await, else Err(unreachable_kind(kit))),
        }
    }
}

/// A ConfigMap or Secret where a kit kind was matched: never reached.
fn unreachable_kind(kind: SourceKind) -> Error {
    Error::Refused(format!("{} is not a kit kind", kind.as_str()))
}
