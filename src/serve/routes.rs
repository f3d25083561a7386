//! What each path answers: `/healthz` and `/readyz` on the probe port, `/metrics` on the
//! metrics port (after [`super::authz`] when served securely).

use std::sync::Arc;
use std::time::Instant;

use http_types::StatusCode;

use super::head::{Method, RequestHead};
use super::refusals::Refusal;
use super::reply::Reply;
use super::{Decision, METRICS_CONTENT_TYPE, MetricsSecurity, Probes};

/// Which paths a listener answers: probes, metrics, or both.
#[derive(Clone)]
pub struct Routes {
    pub probes: Option<Arc<Probes>>,
    pub metrics: Option<MetricsSecurity>,
}

impl Routes {
    /// The reply to `head`, and the refusal to count if it was one.
    pub async fn respond(&self, head: &RequestHead) -> (Reply, Option<Refusal>) {
        if head.method == Method::Other {
            let reply = Reply::text(StatusCode::MethodNotAllowed, "only GET and HEAD are served");
            return (
                reply.with_header("Allow", "GET, HEAD"),
                Some(Refusal::BadRequest),
            );
        }
        match (head.path.as_str(), &self.probes, &self.metrics) {
            ("/healthz", Some(probes), _) => (healthz(probes), None),
            ("/readyz", Some(probes), _) if probes.is_ready() => (ok(), None),
            ("/readyz", Some(_), _) => (
                Reply::text(StatusCode::InternalServerError, "not ready"),
                None,
            ),
            ("/metrics", _, Some(security)) => metrics(head, security).await,
            _ => (Reply::text(StatusCode::NotFound, "not found"), None),
        }
    }
}

fn ok() -> Reply {
    Reply::text(StatusCode::Ok, "ok")
}

fn healthz(probes: &Probes) -> Reply {
    match probes.health(Instant::now()) {
        Ok(()) => ok(),
        Err(why) => Reply::text(StatusCode::InternalServerError, &why),
    }
}

async fn metrics(head: &RequestHead, security: &MetricsSecurity) -> (Reply, Option<Refusal>) {
    if let MetricsSecurity::Secure { auth, .. } = security
        && let Decision::Deny(status, message) = auth.check(head.authorization.as_deref()).await
    {
        return denied(status, &message);
    }
    let reply = Reply {
        status: StatusCode::Ok,
        content_type: METRICS_CONTENT_TYPE,
        headers: Vec::new(),
        body: crate::metrics::render(),
    };
    (reply, None)
}

fn denied(status: StatusCode, message: &str) -> (Reply, Option<Refusal>) {
    let reply = Reply::text(status, message);
    match status {
        StatusCode::Unauthorized => (reply.with_header("WWW-Authenticate", "Bearer"), None),
        StatusCode::TooManyRequests | StatusCode::ServiceUnavailable => (
            reply.with_header("Retry-After", "1"),
            Some(Refusal::ReviewsBusy),
        ),
        _ => (reply, None),
    }
}
