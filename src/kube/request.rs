//! One HTTP exchange with the API server: build the request, send it on a pooled connection,
//! read the whole reply (within [`super::reply_limits`]), and turn a non-2xx reply into an
//! [`Error`].

use super::Error;
use super::api::Status;
use super::body::Pieces;
use super::config::{Config, Credential};
use super::connect::Connection;
use super::pool::Pool;
use super::reply_head::HeadGuard;
use super::reply_limits::{BodyLimit, read_body};
use crate::deadline::or_timeout;
use http_types::{Body, Method, Request, Response, Url};
use std::time::Duration;

/// What to send; rebuilt into a fresh `http_types::Request` for every attempt.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    pub method: Method,
    /// Path below the server URL, e.g. `/api/v1/namespaces/a/configmaps`.
    pub path: String,
    pub query: Vec<(&'static str, String)>,
    /// The JSON body and its content type.
    pub body: Option<(Pieces, &'static str)>,
    /// The `verb` label of the latency metric (get, list, watch, create, update, patch, delete).
    pub verb: &'static str,
    /// The reply's media types, in the Accept header.
    pub accept: &'static str,
}

impl RequestSpec {
    /// How much of the reply to this request may be read ([`super::reply_limits`]).
    pub fn body_limit(&self) -> BodyLimit {
        let page_size = self.query.iter().find(|(key, _)| *key == "limit");
        BodyLimit::for_reply(self.verb, page_size.map(|(_, value)| value.as_str()))
    }

    pub fn new(method: Method, path: String, verb: &'static str) -> RequestSpec {
        RequestSpec {
            method,
            path,
            query: Vec::new(),
            body: None,
            verb,
            accept: "application/json",
        }
    }

    pub fn is_mutating(&self) -> bool {
        matches!(
            self.method,
            Method::Post | Method::Put | Method::Patch | Method::Delete
        )
    }

    /// The full URL: the server URL (keeping any path prefix) + path + query.
    pub fn url(&self, server: &Url) -> Url {
        let mut url = server.clone();
        let prefix = server.path().trim_end_matches('/');
        url.set_path(&format!("{prefix}{}", self.path));
        url.set_query(None);
        if !self.query.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (key, value) in &self.query {
                pairs.append_pair(key, value);
            }
        }
        url
    }

    /// The request with skiff's headers, `credential`'s bearer token if it has one, and the
    /// impersonation headers if the config impersonates.
    pub fn build(&self, config: &Config, credential: &Credential) -> Request {
        let mut req = Request::new(self.method, self.url(&config.server));
        if let Some((body, content_type)) = &self.body {
            req.set_body(body.http_body());
            req.insert_header("Content-Type", *content_type);
        }
        req.insert_header("Accept", self.accept);
        req.insert_header("User-Agent", config.user_agent.as_str());
        if let Some(token) = &credential.token {
            req.insert_header("Authorization", format!("Bearer {token}"));
        }
        for (name, value) in config.impersonate.iter().flat_map(|i| i.headers()) {
            req.append_header(name.as_str(), value);
        }
        req
    }
}

/// A complete reply: status, `Retry-After`, and the whole body.
#[derive(Debug)]
pub struct Reply {
    pub code: u16,
    pub retry_after: Option<Duration>,
    pub body: Vec<u8>,
}

/// Where an exchange failed: before a response head arrived (safe to retry an idempotent
/// request on a new connection) or after.
enum Failure {
    BeforeResponse(Error),
    AfterResponse(Error),
}

/// Sends `spec` on a pooled connection and reads the whole reply. A reused connection that
/// turns out dead before answering is replaced by a new one, once, for GET requests.
pub async fn send_pooled(
    pool: &Pool,
    config: &Config,
    spec: &RequestSpec,
    credential: &Credential,
) -> Result<Reply, Error> {
    let identity = credential.identity.as_ref();
    let checkout = pool.checkout(identity).await?;
    match exchange(pool, checkout.conn, spec, config, credential).await {
        Ok(reply) => Ok(reply),
        Err(Failure::BeforeResponse(e)) if checkout.reused && spec.method == Method::Get => {
            log::debug!("reused connection failed ({e}); redialing once");
            let conn = pool.dial(identity).await?;
            exchange(pool, conn, spec, config, credential)
                .await
                .map_err(Failure::into_error)
        }
        Err(failure) => Err(failure.into_error()),
    }
}

/// Sends `spec` on a new connection (a hedge: the pooled ones may be dead) and reads the
/// whole reply; the connection joins the pool afterwards if it can be reused.
pub async fn send_fresh(
    pool: &Pool,
    config: &Config,
    spec: &RequestSpec,
    credential: &Credential,
) -> Result<Reply, Error> {
    let conn = pool.dial(credential.identity.as_ref()).await?;
    exchange(pool, conn, spec, config, credential)
        .await
        .map_err(Failure::into_error)
}

impl Failure {
    fn into_error(self) -> Error {
        match self {
            Failure::BeforeResponse(e) | Failure::AfterResponse(e) => e,
        }
    }
}

/// `spec` sent on `conn` as `credential`, and its whole reply read.
async fn exchange(
    pool: &Pool,
    conn: Connection,
    spec: &RequestSpec,
    config: &Config,
    credential: &Credential,
) -> Result<Reply, Failure> {
    let mut in_flight = spec.is_mutating().then(|| pool.writes.track(&conn));
    let (limited, head_read) = HeadGuard::new(conn.io());
    let req = spec.build(config, credential);
    let mut res = Box::pin(async_h1::client::connect(limited, req))
        .await
        .map_err(|e| Failure::BeforeResponse(Error::Transport(format!("no response: {e}"))))?;
    head_read.release();
    if let Some(write) = &mut in_flight {
        write.answered();
    }
    let expected_len = content_length(&res);
    let body = read_body(res.take_body(), spec.body_limit(), expected_len)
        .await
        .map_err(Failure::AfterResponse)?;
    // async-h1 ends a Content-Length body quietly at EOF: a reset mid-body must not pass.
    if let Some(expected) = expected_len.filter(|&n| n != body.len()) {
        return Err(Failure::AfterResponse(Error::Transport(format!(
            "the connection closed after {} of {expected} body bytes",
            body.len()
        ))));
    }
    let reply = Reply {
        code: res.status() as u16,
        retry_after: retry_after(&res),
        body,
    };
    if can_reuse(&res) {
        pool.checkin(conn);
    }
    Ok(reply)
}

/// Sends a watch on a new connection of its own and returns the body once a 2xx head arrives
/// within `timeout`; the body then streams for as long as the server keeps it open.
pub async fn start_watch(
    pool: &Pool,
    config: &Config,
    spec: &RequestSpec,
    credential: &Credential,
    timeout: Duration,
) -> Result<Body, Error> {
    let head = async {
        let conn = pool.dial(credential.identity.as_ref()).await?;
        let (limited, head_read) = HeadGuard::new(conn.io());
        let mut res = async_h1::client::connect(limited, spec.build(config, credential))
            .await
            .map_err(|e| Error::Transport(format!("no response to the watch request: {e}")))?;
        head_read.release();
        if res.status().is_success() {
            return Ok(res.take_body());
        }
        let body = read_body(res.take_body(), BodyLimit::Object, content_length(&res)).await?;
        Err(reply_error(&Reply {
            code: res.status() as u16,
            retry_after: retry_after(&res),
            body,
        }))
    };
    or_timeout(head, smol::Timer::after(timeout), || {
        format!(
            "watch {} got no response head within {timeout:?}",
            spec.path
        )
    })
    .await
}

/// Whether the connection may carry another request after this (fully read) response.
pub fn can_reuse(res: &Response) -> bool {
    let close = res
        .header("Connection")
        .is_some_and(|v| v.as_str().eq_ignore_ascii_case("close"));
    let delimited = res.header("Content-Length").is_some()
        || res.header("Transfer-Encoding").is_some()
        || matches!(res.status() as u16, 204 | 304);
    !close && delimited
}

fn content_length(res: &Response) -> Option<usize> {
    number(res, "Content-Length")
}

pub fn retry_after(res: &Response) -> Option<Duration> {
    number(res, "Retry-After").map(Duration::from_secs)
}

/// The header's (last) value, if it is a number.
fn number<T: std::str::FromStr>(res: &Response, header: &str) -> Option<T> {
    res.header(header)?.last().as_str().trim().parse().ok()
}

/// The error for a non-2xx reply: the server's `Status` if it sent one, else what came back.
pub fn reply_error(reply: &Reply) -> Error {
    let code = reply.code;
    let http_reason = http_types::StatusCode::try_from(code)
        .map(|s| s.canonical_reason().replace(' ', ""))
        .unwrap_or_else(|_| format!("HTTP{code}"));
    let status: Option<Status> = serde_json::from_slice::<Status>(&reply.body)
        .ok()
        .filter(|s| s.message.is_some() || s.reason.is_some());
    let (reason, message) = match status {
        Some(status) => (
            status
                .reason
                .filter(|r| !r.is_empty())
                .unwrap_or(http_reason),
            status.message.unwrap_or_default(),
        ),
        None => (
            http_reason,
            format!(
                "the server answered {code} without a Kubernetes Status: {:?}",
                preview(&reply.body)
            ),
        ),
    };
    match code {
        401 => Error::Api {
            code,
            reason,
            message: format!(
                "the server rejected the credentials: the bearer token or client certificate is wrong or expired; check the kubeconfig user or the service-account token ({message})"
            ),
            retry_after: None,
        },
        410 => Error::Expired(message),
        _ => Error::Api {
            code,
            reason,
            message,
            retry_after: reply.retry_after,
        },
    }
}

pub fn preview(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).chars().take(200).collect()
}

#[cfg(test)]
mod tests;
