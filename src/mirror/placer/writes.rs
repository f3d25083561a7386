//! How the hub writes what a [`Placer`] decided: a Placement created, or replaced whole by a
//! JSON patch conditional on the version read; a tombstone; a Secret's carrier beside its
//! Placement, owned by it. Each write counts in `skiff_fleet_placement_writes_total`.

use super::Placer;
use crate::kube::api::{OwnerReference, Resource, Secret};
use crate::kube::{Error, PatchKind};
use crate::mirror::copy::{Owner, SOURCE_HASH_ANNOTATION, labelled_for, owner_of};
use crate::mirror::fleet_metrics;
use crate::mirror::placement::{CARRIER_TYPE, Placement, PlacementInfo, PlacementSpec};
use crate::mirror::types::API_VERSION;
use crate::runtime::ObjectKey;
use serde_json::{Map, Value, json};

impl Placer {
    /// After a create met 409: whether `owner` holds the Placement `ns/name` (written by an
    /// earlier reconcile whose watch event has not come yet; it will wake the Mirror again), or
    /// something else does, without the labels the hub's watch selects.
    pub(super) async fn holds(&self, owner: &Owner, ns: &str, name: &str) -> Result<bool, Error> {
        let path = Placement::url_path(Some(ns), Some(name));
        let held: Placement = self.client.get_at(path).await?;
        Ok(PlacementInfo::of(&held).owner.as_ref() == Some(owner))
    }

    pub(super) async fn create(
        &self,
        owner: &Owner,
        ns: &str,
        name: &str,
        spec: &PlacementSpec,
    ) -> Result<Option<String>, Error> {
        let placement = Placement {
            api_version: Some(API_VERSION.to_owned()),
            kind: Some("Placement".to_owned()),
            metadata: labelled_for(owner, ns, name),
            spec: spec.clone(),
            status: None,
        };
        let created = self.client.create(&placement).await?;
        fleet_metrics::placement_written(ns);
        Ok(created.metadata.uid)
    }

    /// Replaces the spec whole, if the Placement is still at `rv`: a JSON patch, as a merge
    /// patch would leave behind the keys the new content no longer holds.
    pub(super) async fn replace(
        &self,
        ns: &str,
        name: &str,
        rv: &str,
        spec: &PlacementSpec,
    ) -> Result<(), Error> {
        let patch = json!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "replace", "path": "/spec", "value": spec},
        ]);
        let path = Placement::url_path(Some(ns), Some(name));
        let _: Placement = self.client.patch_at(path, &patch, PatchKind::Json).await?;
        fleet_metrics::placement_written(ns);
        Ok(())
    }

    pub(super) async fn tombstone(&self, key: &ObjectKey, rv: &str) -> Result<(), Error> {
        let patch = json!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "replace", "path": "/spec/withdrawn", "value": true},
            {"op": "remove", "path": "/spec/content"},
        ]);
        let path = Placement::url_path(Some(&key.namespace), Some(&key.name));
        let tombstone = self
            .client
            .patch_at::<Placement>(path.clone(), &patch, PatchKind::Json);
        match tombstone.await {
            // No content to remove (a Secret's Placement): the tombstone alone.
            Err(e) if e.code() == Some(422) => {
                let patch = json!([
                    {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
                    {"op": "add", "path": "/spec/withdrawn", "value": true},
                ]);
                self.client
                    .patch_at::<Placement>(path, &patch, PatchKind::Json)
                    .await
                    .map(drop)
            }
            other => other.map(drop),
        }?;
        fleet_metrics::placement_written(&key.namespace);
        Ok(())
    }

    /// Writes the carrier of a Secret's data beside its Placement (`at`: namespace, name and
    /// uid), owned by it: data only, none of the source's or target's metadata, of a type no
    /// controller acts on. False when another fleet Mirror's carrier holds the name there:
    /// carriers are named by the copy's name, and a conflict is reported, not overwritten.
    pub(super) async fn carry(
        &self,
        owner: &Owner,
        (ns, placement, uid): (&str, &str, Option<&str>),
        spec: &PlacementSpec,
        data: &Option<Value>,
    ) -> Result<bool, Error> {
        let (Some(carrier), Some(data)) = (&spec.secret, data) else {
            return Ok(true);
        };
        let mut meta = labelled_for(owner, ns, &carrier.name);
        meta.annotations
            .insert(SOURCE_HASH_ANNOTATION.to_owned(), carrier.hash.clone());
        meta.owner_references = uid
            .map(|uid| owned_by(placement, uid))
            .into_iter()
            .collect();
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta,
            "type": CARRIER_TYPE, "data": data});
        let path = Secret::url_path(Some(ns), None);
        let body = serde_json::to_vec(&secret).map_err(|e| Error::Refused(e.to_string()))?;
        match self.client.create_encoded_at(path, body.into()).await {
            Err(e) if e.is_already_exists() => {
                let path = Secret::url_path(Some(ns), Some(&carrier.name));
                let held: Secret = self.client.get_at(path.clone()).await?;
                if owner_of(&held.metadata).as_ref() != Some(owner) {
                    return Ok(false);
                }
                let mut patch = Map::new();
                patch.insert("metadata".into(), json!({"annotations": meta.annotations}));
                let mut data = data.as_object().cloned().unwrap_or_default();
                data.insert("$patch".into(), "replace".into());
                patch.insert("data".into(), Value::Object(data));
                let patch = Value::Object(patch);
                let _: Secret = self
                    .client
                    .patch_at(path, &patch, PatchKind::Strategic)
                    .await?;
                Ok(true)
            }
            other => other.map(|_| true),
        }
    }
}

/// An owner reference to the Placement `name` with `uid`: the carrier goes with it.
fn owned_by(name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: API_VERSION.to_owned(),
        kind: "Placement".to_owned(),
        name: name.to_owned(),
        uid: uid.to_owned(),
        ..OwnerReference::default()
    }
}

pub(super) fn gone_is_fine(result: Result<(), Error>) -> Result<(), Error> {
    match result {
        Err(e) if e.is_not_found() => Ok(()),
        other => other,
    }
}
