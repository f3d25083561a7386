//! The control plane's audit log: every request the operator's identities made, as the API
//! server received it.
//!
//! Why: a fault test must count what reached the server, not what skiff believes it sent. A
//! write delivered late after a partition heals shows here with the time the server received
//! it; skiff's own logs could never show it. The operator has two tokens for the same
//! ServiceAccount with different uids, so two replicas are told apart while RBAC treats them
//! alike; a bound ServiceAccount token (the comparison's peer) is told apart by its id.

use std::path::Path;
use std::time::SystemTime;

use serde_json::Value;

/// Logs every request of skiff's ServiceAccount and of the comparison's peer and Kyverno
/// controllers, and of any other ServiceAccount (a fleet member's identity on a hub), once its
/// response is complete (watches: once the response started, as they
/// never complete within a test).
pub const POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: [\"system:serviceaccount:skiff-system:skiff\", \"system:serviceaccount:skiff-peer:skiff-peer\",
    \"system:serviceaccount:kyverno:kyverno-admission-controller\",
    \"system:serviceaccount:kyverno:kyverno-background-controller\"]
- level: Metadata
  userGroups: [\"system:serviceaccounts\"]
- level: None
";

/// One audit event, as much of it as the tests read.
#[derive(Debug, Clone)]
pub struct AuditEvent {
    pub user: String,
    /// The user the request acted as (`Impersonate-User`), if it impersonated.
    pub impersonated: Option<String>,
    /// The token's uid: which replica sent it.
    pub uid: String,
    /// The bound token's id (`JTI=…`), else the uid: which credential sent it.
    pub credential: String,
    pub verb: String,
    pub uri: String,
    pub stage: String,
    pub code: Option<u64>,
    /// When the API server received the request.
    pub received: SystemTime,
}

impl AuditEvent {
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
    }

    /// A full read of a collection: a LIST, or a watch streaming the initial state first
    /// (`sendInitialEvents=true`, client-go's WatchList).
    pub fn is_relist(&self) -> bool {
        self.verb == "list" || (self.verb == "watch" && self.uri.contains("sendInitialEvents=true"))
    }

    /// A request about the Lease (the lease client's traffic).
    pub fn is_lease(&self) -> bool {
        self.uri.contains("/leases")
    }
}

/// The events in the audit log at `path` (missing file: none).
pub fn read(path: &Path) -> Vec<AuditEvent> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|event| parse(&event))
        .collect()
}

/// How the audit log names a bound ServiceAccount token (a JWT): `JTI=<its jti claim>`.
pub fn token_credential(token: &str) -> Option<String> {
    use base64::Engine as _;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    Some(format!("JTI={}", claims["jti"].as_str()?))
}

fn parse(event: &Value) -> Option<AuditEvent> {
    let text = |pointer: &str| event.pointer(pointer)?.as_str().map(str::to_owned);
    let uid = text("/user/uid").unwrap_or_default();
    let credential = text("/user/extra/authentication.kubernetes.io~1credential-id/0");
    Some(AuditEvent {
        user: text("/user/username").unwrap_or_default(),
        impersonated: text("/impersonatedUser/username"),
        credential: credential.unwrap_or_else(|| uid.clone()),
        uid,
        verb: text("/verb")?,
        uri: text("/requestURI")?,
        stage: text("/stage")?,
        code: event
            .pointer("/responseStatus/code")
            .and_then(Value::as_u64),
        received: skiff::time::parse_rfc3339(&text("/requestReceivedTimestamp")?)?,
    })
}
