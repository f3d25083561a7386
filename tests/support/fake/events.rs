//! The event history and the open watches: every change is recorded (bounded) and pushed to
//! each matching watch in resourceVersion order.
//!
//! Events are sent while the store lock is held, so a watch registered under the same lock sees
//! replay + live events with no gap and no duplicate.

use super::selectors::{FieldSelector, LabelSelector};
use super::status::ApiError;
use serde_json::{Value, json};
use smol::channel::{Receiver, Sender};
use std::collections::VecDeque;

/// Events kept for watches resuming from a resourceVersion (the apiserver's watch cache holds a
/// comparable window); older resume points get 410 Expired.
pub const HISTORY_LIMIT: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One change, as recorded in the history.
#[derive(Debug, Clone)]
pub struct StoredEvent {
    pub resource_version: u64,
    pub event_type: EventType,
    pub group: String,
    pub plural: String,
    pub namespace: String,
    pub object: Value,
    /// The state before a MODIFIED, to tell when an object enters or leaves a selector.
    pub previous: Option<Value>,
}

/// One line of a watch stream.
#[derive(Debug, Clone)]
pub struct WatchEvent {
    pub event_type: &'static str,
    pub object: Value,
}

impl WatchEvent {
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = json!({"type": self.event_type, "object": self.object}).to_string();
        line.push('\n');
        line.into_bytes()
    }
}

/// Which events a watch wants.
#[derive(Debug, Clone)]
pub struct WatchFilter {
    pub group: String,
    pub plural: String,
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl WatchFilter {
    pub fn matches(&self, object: &Value) -> bool {
        self.labels.matches(object) && self.fields.matches(object)
    }

    fn wants_resource(&self, event: &StoredEvent) -> bool {
        event.group == self.group
            && event.plural == self.plural
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| *ns == event.namespace)
    }

    /// The event this watch sees: selectors turn a MODIFIED into ADDED/DELETED when an object
    /// enters or leaves the selection, as the apiserver's watch cache does.
    pub fn translate(&self, event: &StoredEvent) -> Option<WatchEvent> {
        if !self.wants_resource(event) {
            return None;
        }
        let now = self.matches(&event.object);
        let before = event.previous.as_ref().is_some_and(|p| self.matches(p));
        let event_type = match (event.event_type, now, before) {
            (EventType::Added, true, _) => "ADDED",
            (EventType::Deleted, true, _) => "DELETED",
            (EventType::Modified, true, true) => "MODIFIED",
            (EventType::Modified, true, false) => "ADDED",
            (EventType::Modified, false, true) => "DELETED",
            _ => return None,
        };
        Some(WatchEvent {
            event_type,
            object: event.object.clone(),
        })
    }
}

struct Watcher {
    id: u64,
    filter: WatchFilter,
    sender: Sender<WatchEvent>,
}

/// History plus open watches.
#[derive(Default)]
pub struct Events {
    history: VecDeque<StoredEvent>,
    /// Resume points below this are gone (compacted or trimmed): 410.
    compacted_through: u64,
    watchers: Vec<Watcher>,
    next_watcher_id: u64,
}

impl Events {
    /// Records an event and sends it to every matching watch; watches whose reader is gone are
    /// dropped.
    pub fn publish(&mut self, event: StoredEvent) {
        self.watchers
            .retain(|watcher| match watcher.filter.translate(&event) {
                Some(line) => watcher.sender.try_send(line).is_ok(),
                None => !watcher.sender.is_closed(),
            });
        self.history.push_back(event);
        while self.history.len() > HISTORY_LIMIT {
            if let Some(dropped) = self.history.pop_front() {
                self.compacted_through = dropped.resource_version;
            }
        }
    }

    /// Opens a watch. `from: None` starts with `initial` as synthetic ADDED events; `Some(rv)`
    /// replays the history after `rv` (410 Expired when that part was forgotten).
    pub fn subscribe(
        &mut self,
        filter: WatchFilter,
        from: Option<u64>,
        initial: Vec<Value>,
    ) -> Result<(u64, Receiver<WatchEvent>), ApiError> {
        let (sender, receiver) = smol::channel::unbounded();
        match from {
            Some(rv) if rv < self.compacted_through => return Err(ApiError::expired(rv)),
            Some(rv) => self
                .history
                .iter()
                .filter(|event| event.resource_version > rv)
                .filter_map(|event| filter.translate(event))
                .for_each(|line| {
                    let _ = sender.try_send(line);
                }),
            None => initial.into_iter().for_each(|object| {
                let _ = sender.try_send(WatchEvent {
                    event_type: "ADDED",
                    object,
                });
            }),
        }
        self.next_watcher_id += 1;
        let id = self.next_watcher_id;
        self.watchers.push(Watcher { id, filter, sender });
        Ok((id, receiver))
    }

    /// Queues a BOOKMARK after every event already sent to that watch.
    pub fn bookmark(
        &mut self,
        watcher_id: u64,
        resource_version: u64,
        kind: &str,
        api_version: &str,
    ) {
        if let Some(watcher) = self.watchers.iter().find(|w| w.id == watcher_id) {
            let _ = watcher.sender.try_send(WatchEvent {
                event_type: "BOOKMARK",
                object: json!({
                    "kind": kind,
                    "apiVersion": api_version,
                    "metadata": {"resourceVersion": resource_version.to_string()},
                }),
            });
        }
    }

    pub fn unsubscribe(&mut self, watcher_id: u64) {
        self.watchers.retain(|watcher| watcher.id != watcher_id);
    }

    /// Drops every watch: their streams end as if the connection were lost.
    pub fn close_all(&mut self) {
        self.watchers.clear();
    }

    /// Forgets the history: resuming from before `current` gets 410.
    pub fn compact(&mut self, current: u64) {
        self.history.clear();
        self.compacted_through = current;
    }
}
