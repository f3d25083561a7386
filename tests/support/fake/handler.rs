//! Request dispatch: authorisation, routing, and the CRUD/list answers as JSON; watches are
//! handed to the watch streamer as a plan.

use super::events::WatchFilter;
use super::http::RequestHead;
use super::routes::{self, Resource, Target};
use super::selectors::{FieldSelector, LabelSelector};
use super::shared::{Shared, lock};
use super::status::ApiError;
use super::store::{ObjectKey, WriteMode};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;

/// What to send back.
pub enum Reply {
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    Watch(WatchPlan),
}

/// A watch to stream: what to match, where to start, how long, bookmarks or not.
pub struct WatchPlan {
    pub filter: WatchFilter,
    /// `None`: start with the current objects; `Some(rv)`: replay after rv.
    pub from: Option<u64>,
    pub timeout: Option<Duration>,
    pub bookmarks: bool,
    pub kind: String,
    pub api_version: String,
}

impl Reply {
    pub fn json(status: u16, value: &Value) -> Reply {
        Reply::Full {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: value.to_string().into_bytes(),
        }
    }

    pub fn error(error: &ApiError) -> Reply {
        Reply::json(error.code, &error.to_status())
    }
}

pub fn is_watch(query: &HashMap<String, String>) -> bool {
    matches!(query.get("watch").map(String::as_str), Some("true" | "1"))
}

/// Answers one request.
pub fn handle(shared: &Shared, head: &RequestHead, body: &[u8]) -> Reply {
    route(shared, head, body).unwrap_or_else(|error| Reply::error(&error))
}

fn authorize(shared: &Shared, head: &RequestHead) -> Result<(), ApiError> {
    match lock(&shared.token).as_deref() {
        Some(token) if head.header("authorization") != Some(&format!("Bearer {token}")) => {
            Err(ApiError::unauthorized())
        }
        _ => Ok(()),
    }
}

fn route(shared: &Shared, head: &RequestHead, body: &[u8]) -> Result<Reply, ApiError> {
    authorize(shared, head)?;
    let target = routes::parse(&head.path).ok_or_else(|| ApiError::path_not_found(&head.path))?;
    let query = routes::parse_query(&head.query);
    let mut store = lock(&shared.store);
    match (head.method.as_str(), target) {
        (
            "GET",
            Target::Object {
                resource,
                namespace,
                name,
                ..
            },
        ) => {
            let key = ObjectKey::new(&resource, namespace.as_deref(), &name);
            Ok(Reply::json(200, &store.get(&key)?))
        }
        (
            "GET",
            Target::Collection {
                resource,
                namespace,
            },
        ) => {
            let filter = filter_from(&resource, namespace, &query)?;
            if is_watch(&query) {
                return Ok(Reply::Watch(watch_plan(resource, filter, &query)?));
            }
            let after = match query.get("continue").filter(|t| !t.is_empty()) {
                Some(token) => Some(routes::decode_continue(token).ok_or_else(|| {
                    ApiError::bad_request(
                        "invalid continue token: pass the token of the previous page unchanged",
                    )
                })?),
                None => None,
            };
            let limit = query.get("limit").and_then(|l| l.parse().ok());
            let page = store.list(&filter, limit, after);
            let mut metadata = json!({"resourceVersion": store.resource_version().to_string()});
            if let Some(token) = page.continue_token {
                metadata["continue"] = json!(token);
                metadata["remainingItemCount"] = json!(page.remaining);
            }
            let list = json!({
                "kind": format!("{}List", resource.kind()),
                "apiVersion": resource.api_version(),
                "metadata": metadata,
                "items": page.items,
            });
            Ok(Reply::json(200, &list))
        }
        (
            "POST",
            Target::Collection {
                resource,
                namespace,
            },
        ) => {
            let object = parse_body(body)?;
            Ok(Reply::json(
                201,
                &store.create(&resource, namespace.as_deref(), object, false)?,
            ))
        }
        (
            "PUT",
            Target::Object {
                resource,
                namespace,
                name,
                status,
            },
        ) => {
            let key = ObjectKey::new(&resource, namespace.as_deref(), &name);
            let mode = WriteMode::of_request(status);
            Ok(Reply::json(
                200,
                &store.replace(&key, parse_body(body)?, mode, &resource)?,
            ))
        }
        (
            "PATCH",
            Target::Object {
                resource,
                namespace,
                name,
                status,
            },
        ) => {
            let content_type = head.header("content-type").unwrap_or_default();
            let strategic = content_type.contains("strategic-merge-patch+json");
            if !content_type.contains("merge-patch+json") {
                return Err(ApiError::unsupported_media_type(content_type));
            }
            let key = ObjectKey::new(&resource, namespace.as_deref(), &name);
            let mode = WriteMode::of_request(status);
            let patch = parse_body(body)?;
            Ok(Reply::json(
                200,
                &store.patch(&key, &patch, strategic, mode, &resource)?,
            ))
        }
        (
            "DELETE",
            Target::Object {
                resource,
                namespace,
                name,
                status: false,
            },
        ) => {
            let key = ObjectKey::new(&resource, namespace.as_deref(), &name);
            let options = if body.is_empty() {
                Value::Null
            } else {
                parse_body(body)?
            };
            let precondition = options
                .pointer("/preconditions/resourceVersion")
                .and_then(Value::as_str);
            Ok(Reply::json(200, &store.delete(&key, precondition)?))
        }
        (method, _) => Err(ApiError::method_not_allowed(method)),
    }
}

fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|error| {
        ApiError::bad_request(format!("the request body is not valid JSON: {error}"))
    })
}

fn filter_from(
    resource: &Resource,
    namespace: Option<String>,
    query: &HashMap<String, String>,
) -> Result<WatchFilter, ApiError> {
    let text = |name: &str| query.get(name).map(String::as_str).unwrap_or_default();
    Ok(WatchFilter {
        group: resource.group.clone(),
        plural: resource.plural.clone(),
        namespace,
        labels: LabelSelector::parse(text("labelSelector")).map_err(ApiError::bad_request)?,
        fields: FieldSelector::parse(text("fieldSelector")).map_err(ApiError::bad_request)?,
    })
}

fn watch_plan(
    resource: Resource,
    filter: WatchFilter,
    query: &HashMap<String, String>,
) -> Result<WatchPlan, ApiError> {
    let from = match query.get("resourceVersion").map(String::as_str) {
        None | Some("" | "0") => None,
        Some(rv) => Some(rv.parse().map_err(|_| {
            ApiError::bad_request(format!(
                "resourceVersion {rv:?} is not one this server issued"
            ))
        })?),
    };
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse().ok())
        .map(Duration::from_secs);
    Ok(WatchPlan {
        filter,
        from,
        timeout,
        bookmarks: matches!(
            query.get("allowWatchBookmarks").map(String::as_str),
            Some("true" | "1")
        ),
        kind: resource.kind(),
        api_version: resource.api_version(),
    })
}
