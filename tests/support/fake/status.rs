//! API errors as the apiserver sends them: a `Status` object with the matching HTTP code.

use serde_json::{Value, json};

/// A failed request: HTTP code, machine-readable reason, human message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
        }
    }
    pub fn not_found(plural: &str, name: &str) -> ApiError {
        ApiError::new(404, "NotFound", format!("{plural} \"{name}\" not found"))
    }
    pub fn path_not_found(path: &str) -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }
    pub fn already_exists(plural: &str, name: &str) -> ApiError {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{plural} \"{name}\" already exists"),
        )
    }
    pub fn conflict(plural: &str, name: &str) -> ApiError {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {plural} \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
            ),
        )
    }
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(422, "Invalid", message)
    }
    pub fn unauthorized() -> ApiError {
        ApiError::new(401, "Unauthorized", "Unauthorized")
    }
    pub fn too_many_requests() -> ApiError {
        ApiError::new(
            429,
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        )
    }
    pub fn internal() -> ApiError {
        ApiError::new(
            500,
            "InternalError",
            "an error on the server (injected fault) has prevented the request from succeeding",
        )
    }
    pub fn expired(resource_version: u64) -> ApiError {
        ApiError::new(
            410,
            "Expired",
            format!("too old resource version: {resource_version}"),
        )
    }
    pub fn method_not_allowed(method: &str) -> ApiError {
        ApiError::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method ({method}) on the requested resource"),
        )
    }
    pub fn unsupported_media_type(content_type: &str) -> ApiError {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!("the body of the request was in an unsupported format: {content_type}"),
        )
    }

    /// The `Status` object carried in the response body (and in watch ERROR events).
    pub fn to_status(&self) -> Value {
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        })
    }
}
