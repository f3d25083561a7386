//! The client's one error type; whether an error is worth retrying is decided here, once.

use std::fmt;
use std::time::Duration;

use crate::deadline::Timeout;

/// Everything a request to the API server can end in, other than success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The server answered with a Kubernetes `Status` (or at least an HTTP error code).
    Api {
        code: u16,
        reason: String,
        message: String,
        /// `Retry-After` from a 429 or 503, when the server sent one.
        retry_after: Option<Duration>,
    },
    /// A watch was asked to resume from a resourceVersion the server no longer has (410 Gone).
    Expired(String),
    /// Dialing, TLS, reading or writing failed, or the connection closed early.
    Transport(String),
    /// The request did not finish before its timeout or deadline.
    Timeout(String),
    /// A watch heard nothing (no event, no bookmark) within its idle deadline; its connection
    /// was abandoned.
    Silent(String),
    /// A connection was abandoned because another connection to the same server got no reply
    /// in time (see [`super::liveness`]).
    Suspect(String),
    /// The server's reply could not be decoded.
    Decode(String),
    /// A client-side limit refused the request (rate limiter deadline, fence, invalid input).
    Refused(String),
    /// No credential to send: an exec credential plugin failed (the message names it).
    Credentials(String),
}

impl Error {
    /// Whether trying the same request again later may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Api { code, .. } => matches!(code, 429 | 500 | 502 | 503 | 504),
            // A plugin may fail for a passing reason (network, its own rate limits).
            Error::Transport(_)
            | Error::Timeout(_)
            | Error::Silent(_)
            | Error::Suspect(_)
            | Error::Credentials(_) => true,
            Error::Expired(_) | Error::Decode(_) | Error::Refused(_) => false,
        }
    }

    /// The HTTP status code, for API errors.
    pub fn code(&self) -> Option<u16> {
        match self {
            Error::Api { code, .. } => Some(*code),
            Error::Expired(_) => Some(410),
            _ => None,
        }
    }

    /// Whether the server gave no answer at all: no connection, no reply, or a connection
    /// abandoned. A server that replied with an error did answer.
    pub fn is_unanswered(&self) -> bool {
        matches!(
            self,
            Error::Transport(_) | Error::Timeout(_) | Error::Silent(_) | Error::Suspect(_)
        )
    }

    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409)
    }

    pub fn is_already_exists(&self) -> bool {
        matches!(self, Error::Api { code: 409, reason, .. } if reason == "AlreadyExists")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Api {
                code,
                reason,
                message,
                ..
            } => write!(f, "API error {code} {reason}: {message}"),
            Error::Expired(m) => write!(f, "resource version expired (410 Gone): {m}"),
            Error::Transport(m) => write!(f, "connection error: {m}"),
            Error::Timeout(m) => write!(f, "timed out: {m}"),
            Error::Silent(m) => write!(f, "watch silent: {m}"),
            Error::Suspect(m) => write!(f, "connection suspect: {m}"),
            Error::Decode(m) => write!(f, "could not decode the server's reply: {m}"),
            Error::Refused(m) => write!(f, "request refused: {m}"),
            Error::Credentials(m) => write!(f, "no credentials: {m}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<Timeout> for Error {
    fn from(timeout: Timeout) -> Error {
        Error::Timeout(timeout.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Error {
        /// An API error with `code` and nothing else, for the tests of every module.
        pub(crate) fn with_code(code: u16) -> Error {
            Error::Api {
                code,
                reason: String::new(),
                message: format!("test {code}"),
                retry_after: None,
            }
        }
    }

    fn api(code: u16) -> Error {
        Error::with_code(code)
    }

    #[test]
    fn throttling_and_server_errors_are_retryable_client_errors_are_not() {
        for code in [429, 500, 503, 504] {
            assert!(api(code).is_retryable(), "{code}");
        }
        for code in [400, 401, 403, 404, 409, 422] {
            assert!(!api(code).is_retryable(), "{code}");
        }
        assert!(!Error::Expired("x".into()).is_retryable());
        assert!(Error::Timeout("x".into()).is_retryable());
    }

    #[test]
    fn already_exists_is_a_conflict_with_its_own_reason() {
        let e = Error::Api {
            code: 409,
            reason: "AlreadyExists".into(),
            message: String::new(),
            retry_after: None,
        };
        assert!(e.is_conflict() && e.is_already_exists());
        assert!(!api(409).is_already_exists());
    }
}
