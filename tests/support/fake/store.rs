//! The object store: objects keyed by resource/namespace/name, one global resourceVersion
//! counter, and the apiserver's write rules (conflicts, generation, status, finalizers).

use super::events::{EventType, Events, StoredEvent, WatchEvent, WatchFilter};
use super::object::{self, metadata_mut};
use super::routes::Resource;
use super::status::ApiError;
use serde_json::{Value, json};
use smol::channel::Receiver;
use std::collections::BTreeMap;

/// Where an object lives. The version is not part of it: one object, any served version.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectKey {
    pub group: String,
    pub plural: String,
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(resource: &Resource, namespace: Option<&str>, name: &str) -> ObjectKey {
        ObjectKey {
            group: resource.group.clone(),
            plural: resource.plural.clone(),
            namespace: namespace.unwrap_or_default().to_string(),
            name: name.to_string(),
        }
    }
}

/// How a write treats the stored object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// PUT/PATCH of the main resource: resourceVersion precondition; status kept for kinds
    /// with a status subresource.
    Main,
    /// PUT/PATCH of `/status`: only `.status` changes.
    Status,
    /// Test-side update: unconditional, everything replaced.
    Force,
}

impl WriteMode {
    /// The mode of a client's PUT or PATCH, on `/status` or on the main resource.
    pub fn of_request(status: bool) -> WriteMode {
        if status {
            WriteMode::Status
        } else {
            WriteMode::Main
        }
    }
}

/// One page of a LIST.
pub struct ListPage {
    pub items: Vec<Value>,
    pub continue_token: Option<String>,
    pub remaining: usize,
}

#[derive(Default)]
pub struct Store {
    objects: BTreeMap<ObjectKey, Value>,
    resource_version: u64,
    next_uid: u64,
    pub events: Events,
}

impl Store {
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    pub fn get(&self, key: &ObjectKey) -> Result<Value, ApiError> {
        self.objects
            .get(key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&key.plural, &key.name))
    }

    /// POST: assigns uid, resourceVersion, creationTimestamp and generation 1; emits ADDED.
    pub fn create(
        &mut self,
        resource: &Resource,
        namespace: Option<&str>,
        mut object: Value,
        keep_status: bool,
    ) -> Result<Value, ApiError> {
        if !object.is_object() {
            return Err(ApiError::bad_request(
                "the request body is not a JSON object",
            ));
        }
        let body_namespace = object::namespace_of(&object).map(str::to_string);
        if let (Some(path_ns), Some(body_ns)) = (namespace, body_namespace.as_deref())
            && path_ns != body_ns
        {
            return Err(ApiError::bad_request(format!(
                "the namespace of the provided object ({body_ns}) does not match the namespace sent on the request ({path_ns})"
            )));
        }
        let namespace = namespace.map(str::to_string).or(body_namespace);
        let name = self.name_for_create(&object)?;
        let key = ObjectKey::new(resource, namespace.as_deref(), &name);
        if self.objects.contains_key(&key) {
            return Err(ApiError::already_exists(&resource.plural, &name));
        }
        self.resource_version += 1;
        self.next_uid += 1;
        let fields = object
            .as_object_mut()
            .ok_or_else(|| ApiError::bad_request("not an object"))?;
        fields
            .entry("apiVersion")
            .or_insert_with(|| json!(resource.api_version()));
        fields
            .entry("kind")
            .or_insert_with(|| json!(resource.kind()));
        if !keep_status && resource.has_status_subresource() {
            fields.remove("status");
        }
        let metadata = metadata_mut(&mut object);
        metadata.insert("name".into(), json!(name));
        if let Some(ns) = &namespace {
            metadata.insert("namespace".into(), json!(ns));
        }
        metadata.insert(
            "uid".into(),
            json!(format!("00000000-0000-4000-8000-{:012x}", self.next_uid)),
        );
        metadata.insert(
            "resourceVersion".into(),
            json!(self.resource_version.to_string()),
        );
        metadata.insert("creationTimestamp".into(), json!(object::now_rfc3339()));
        metadata.insert("generation".into(), json!(1));
        metadata.remove("deletionTimestamp");
        self.objects.insert(key.clone(), object.clone());
        self.publish(&key, EventType::Added, object.clone(), None);
        Ok(object)
    }

    fn name_for_create(&self, object: &Value) -> Result<String, ApiError> {
        if let Some(name) = object::name_of(object).filter(|n| !n.is_empty()) {
            return Ok(name.to_string());
        }
        match object
            .pointer("/metadata/generateName")
            .and_then(Value::as_str)
        {
            Some(prefix) if !prefix.is_empty() => {
                Ok(format!("{prefix}{:05x}", self.resource_version + 1))
            }
            _ => Err(ApiError::invalid(
                "metadata.name: Required value: name or generateName is required",
            )),
        }
    }

    /// PUT (and the test-side update): replaces the object under the write rules of `mode`.
    pub fn replace(
        &mut self,
        key: &ObjectKey,
        candidate: Value,
        mode: WriteMode,
        resource: &Resource,
    ) -> Result<Value, ApiError> {
        let stored = self.get(key)?;
        if !candidate.is_object() {
            return Err(ApiError::bad_request(
                "the request body is not a JSON object",
            ));
        }
        if mode != WriteMode::Force && object::name_of(&candidate).is_some_and(|n| n != key.name) {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({})",
                object::name_of(&candidate).unwrap_or_default(),
                key.name
            )));
        }
        self.check_precondition(key, &stored, object::resource_version_of(&candidate), mode)?;
        let next = compose(&stored, candidate, mode, resource);
        Ok(self.commit_update(key, stored, next))
    }

    /// PATCH (merge patch, or a strategic one): the patched object goes through the same rules
    /// as PUT.
    pub fn patch(
        &mut self,
        key: &ObjectKey,
        patch: &Value,
        strategic: bool,
        mode: WriteMode,
        resource: &Resource,
    ) -> Result<Value, ApiError> {
        let stored = self.get(key)?;
        let precondition = patch
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str);
        self.check_precondition(key, &stored, precondition, mode)?;
        let mut candidate = stored.clone();
        if strategic {
            object::strategic_merge_patch(&mut candidate, patch);
        } else {
            object::merge_patch(&mut candidate, patch);
        }
        let next = compose(&stored, candidate, mode, resource);
        Ok(self.commit_update(key, stored, next))
    }

    fn check_precondition(
        &self,
        key: &ObjectKey,
        stored: &Value,
        wanted: Option<&str>,
        mode: WriteMode,
    ) -> Result<(), ApiError> {
        match wanted {
            Some(rv)
                if mode != WriteMode::Force && Some(rv) != object::resource_version_of(stored) =>
            {
                Err(ApiError::conflict(&key.plural, &key.name))
            }
            _ => Ok(()),
        }
    }

    /// Stores a changed object (no-op writes change nothing, as on the apiserver); an object
    /// being deleted whose last finalizer went away is removed.
    fn commit_update(&mut self, key: &ObjectKey, stored: Value, mut next: Value) -> Value {
        if object::is_deleting(&next) && object::finalizers_empty(&next) {
            return self.remove_now(key, next);
        }
        if next == stored {
            return stored;
        }
        self.resource_version += 1;
        metadata_mut(&mut next).insert(
            "resourceVersion".into(),
            json!(self.resource_version.to_string()),
        );
        self.objects.insert(key.clone(), next.clone());
        self.publish(key, EventType::Modified, next.clone(), Some(stored));
        next
    }

    /// DELETE: with finalizers, marks `deletionTimestamp` (MODIFIED); without, removes (DELETED).
    pub fn delete(
        &mut self,
        key: &ObjectKey,
        precondition: Option<&str>,
    ) -> Result<Value, ApiError> {
        let stored = self.get(key)?;
        self.check_precondition(key, &stored, precondition, WriteMode::Main)?;
        if object::finalizers_empty(&stored) {
            return Ok(self.remove_now(key, stored));
        }
        if object::is_deleting(&stored) {
            return Ok(stored);
        }
        let mut next = stored.clone();
        let metadata = metadata_mut(&mut next);
        metadata.insert("deletionTimestamp".into(), json!(object::now_rfc3339()));
        metadata.insert("deletionGracePeriodSeconds".into(), json!(0));
        Ok(self.commit_update(key, stored, next))
    }

    fn remove_now(&mut self, key: &ObjectKey, mut last: Value) -> Value {
        self.objects.remove(key);
        self.resource_version += 1;
        metadata_mut(&mut last).insert(
            "resourceVersion".into(),
            json!(self.resource_version.to_string()),
        );
        self.publish(key, EventType::Deleted, last.clone(), None);
        last
    }

    fn publish(
        &mut self,
        key: &ObjectKey,
        event_type: EventType,
        object: Value,
        previous: Option<Value>,
    ) {
        self.events.publish(StoredEvent {
            resource_version: self.resource_version,
            event_type,
            group: key.group.clone(),
            plural: key.plural.clone(),
            namespace: key.namespace.clone(),
            object,
            previous,
        });
    }

    /// Objects of a resource (one namespace or all), sorted by namespace/name, that pass `filter`.
    pub fn matching(&self, filter: &WatchFilter) -> impl Iterator<Item = (&ObjectKey, &Value)> {
        let start = ObjectKey {
            group: filter.group.clone(),
            plural: filter.plural.clone(),
            namespace: filter.namespace.clone().unwrap_or_default(),
            name: String::new(),
        };
        self.objects
            .range(start..)
            .take_while(move |(key, _)| key.group == filter.group && key.plural == filter.plural)
            .filter(move |(key, object)| {
                filter
                    .namespace
                    .as_ref()
                    .is_none_or(|ns| *ns == key.namespace)
                    && filter.matches(object)
            })
    }

    /// LIST: a page of at most `limit` items starting after the `after` (namespace, name).
    pub fn list(
        &self,
        filter: &WatchFilter,
        limit: Option<usize>,
        after: Option<(String, String)>,
    ) -> ListPage {
        let mut candidates: Vec<(&ObjectKey, &Value)> = self
            .matching(filter)
            .filter(|(key, _)| {
                after
                    .as_ref()
                    .is_none_or(|(ns, name)| (&key.namespace, &key.name) > (ns, name))
            })
            .collect();
        let limit = limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
        let remaining = candidates.len().saturating_sub(limit);
        candidates.truncate(limit);
        let continue_token = match (remaining, candidates.last()) {
            (1.., Some((key, _))) => {
                Some(super::routes::encode_continue(&key.namespace, &key.name))
            }
            _ => None,
        };
        ListPage {
            items: candidates
                .into_iter()
                .map(|(_, object)| object.clone())
                .collect(),
            continue_token,
            remaining,
        }
    }

    /// Opens a watch: see [`Events::subscribe`].
    pub fn watch(
        &mut self,
        filter: WatchFilter,
        from: Option<u64>,
    ) -> Result<(u64, Receiver<WatchEvent>), ApiError> {
        let initial = match from {
            None => self
                .matching(&filter)
                .map(|(_, object)| object.clone())
                .collect(),
            Some(_) => Vec::new(),
        };
        self.events.subscribe(filter, from, initial)
    }

    pub fn compact(&mut self) {
        let current = self.resource_version;
        self.events.compact(current);
    }
}

/// The object a write stores: immutable metadata kept, `.status` per `mode`, generation bumped
/// when anything outside metadata and status changed.
fn compose(stored: &Value, candidate: Value, mode: WriteMode, resource: &Resource) -> Value {
    let mut next = match mode {
        WriteMode::Status => {
            let mut next = stored.clone();
            set_status(&mut next, candidate.get("status").cloned());
            next
        }
        WriteMode::Main if resource.has_status_subresource() => {
            let mut next = candidate;
            set_status(&mut next, stored.get("status").cloned());
            next
        }
        _ => candidate,
    };
    if let (Some(fields), Some(old_fields)) = (next.as_object_mut(), stored.as_object()) {
        for field in ["apiVersion", "kind"] {
            if let (None, Some(value)) = (fields.get(field), old_fields.get(field)) {
                fields.insert(field.into(), value.clone());
            }
        }
    }
    let old_metadata = stored.get("metadata").cloned().unwrap_or_default();
    let metadata = metadata_mut(&mut next);
    for field in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "resourceVersion",
    ] {
        match old_metadata.get(field) {
            Some(value) => metadata.insert(field.into(), value.clone()),
            None => metadata.remove(field),
        };
    }
    let generation = old_metadata
        .get("generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let bumped = object::spec_part(stored) != object::spec_part(&next);
    metadata_mut(&mut next).insert("generation".into(), json!(generation + i64::from(bumped)));
    next
}

fn set_status(object: &mut Value, status: Option<Value>) {
    if let Some(fields) = object.as_object_mut() {
        match status {
            Some(status) => fields.insert("status".into(), status),
            None => fields.remove("status"),
        };
    }
}
