//! Kubernetes Events: the record a user sees in `kubectl describe` (leader changes, conflicts).
//!
//! Recording is best effort. An Event that cannot be written is logged and dropped; it must
//! never hold up the work it describes.

use super::Client;
use super::api::{CoreEvent, EventSource, ObjectMeta, ObjectReference, Resource};
use std::time::{SystemTime, UNIX_EPOCH};

/// Writes `v1` Events as one component (`skiff`) and instance (this replica's identity).
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    component: String,
    instance: String,
}

impl Recorder {
    pub fn new(client: &Client, component: &str, instance: &str) -> Recorder {
        Recorder {
            client: client.clone(),
            component: component.to_owned(),
            instance: instance.to_owned(),
        }
    }

    pub async fn normal(&self, regarding: ObjectReference, reason: &str, message: &str) {
        self.record(regarding, "Normal", reason, message).await;
    }

    pub async fn warning(&self, regarding: ObjectReference, reason: &str, message: &str) {
        self.record(regarding, "Warning", reason, message).await;
    }

    async fn record(&self, regarding: ObjectReference, type_: &str, reason: &str, message: &str) {
        let now = SystemTime::now();
        let nanos = now
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let name = format!("{}.{nanos:x}", regarding.name.as_deref().unwrap_or("skiff"));
        let stamp = crate::time::rfc3339_seconds(now);
        let event = CoreEvent {
            metadata: ObjectMeta::named(regarding.namespace.as_deref(), &name),
            involved_object: regarding,
            reason: Some(reason.to_owned()),
            message: Some(message.to_owned()),
            type_: Some(type_.to_owned()),
            source: Some(EventSource {
                component: Some(self.component.clone()),
            }),
            first_timestamp: Some(stamp.clone()),
            last_timestamp: Some(stamp),
            count: Some(1),
            reporting_component: Some(self.component.clone()),
            reporting_instance: Some(self.instance.clone()),
        };
        if let Err(e) = self.client.create(&event).await {
            log::warn!("could not record {type_} event {reason}: {e}");
        }
    }
}

/// A reference to `object` for an Event's `involvedObject`.
pub fn reference_to<K: Resource>(object: &K) -> ObjectReference {
    let meta = object.metadata();
    ObjectReference {
        api_version: Some(K::API_VERSION.to_owned()),
        kind: Some(K::KIND.to_owned()),
        namespace: meta.namespace.clone(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
    }
}
