//! One client connection: read requests one after another (keep-alive), log each, apply any
//! injected fault, answer.

use super::faults::{Fault, RequestClass};
use super::handler::{self, Reply};
use super::http::{self, RequestHead, chunk, response_head};
use super::routes::parse_query;
use super::shared::{RequestRecord, Shared, lock};
use super::status::ApiError;
use super::watch::{self, Next, chunked_head};
use smol::Timer;
use smol::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use std::io;
use std::time::Instant;

/// A watch line cut in half by [`Fault::TruncatedChunk`].
const HALF_EVENT: &[u8] = br#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVer"#;
/// The body of [`Fault::Garbage`].
const GARBAGE: &[u8] = b"<html>this is not JSON {";

/// Serves requests on one connection until the client closes it or a response ends it.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin>(stream: S, shared: &Shared, conn_id: u64) {
    let mut conn = BufReader::new(stream);
    loop {
        let Ok(Some(head)) = http::read_head(&mut conn).await else {
            return;
        };
        let received = Instant::now();
        let Ok(body) = http::read_body(&mut conn, &head).await else {
            return;
        };
        match serve_one(&mut conn, shared, conn_id, &head, &body, received).await {
            Ok(Next::KeepAlive) if head.keep_alive() => {}
            _ => return,
        }
    }
}

async fn serve_one<S: AsyncRead + AsyncWrite + Unpin>(
    conn: &mut BufReader<S>,
    shared: &Shared,
    conn_id: u64,
    head: &RequestHead,
    body: &[u8],
    received: Instant,
) -> io::Result<Next> {
    let class = RequestClass::of_path(&head.path);
    let watch = head.method == "GET" && handler::is_watch(&parse_query(&head.query));
    let record = shared.record(RequestRecord {
        conn_id,
        method: head.method.clone(),
        path: head.path.clone(),
        query: head.query.clone(),
        class,
        user_agent: head.header("user-agent").map(str::to_string),
        accept: head.header("accept").map(str::to_string),
        token: head
            .header("authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_string),
        impersonation: head
            .headers
            .iter()
            .filter(|(name, _)| name.starts_with("impersonate-"))
            .cloned()
            .collect(),
        body: serde_json::from_slice(body).ok(),
        status: 0,
        received,
        answered: None,
        watch,
    });
    let target = format!("{}?{}", head.path, head.query);
    let fault = lock(&shared.faults).take(class, &target);
    if let Some(fault) = fault
        && let Some(next) = inject(conn, shared, record, fault, head, body).await?
    {
        return Ok(next);
    }
    match handler::handle(shared, head, body) {
        Reply::Full {
            status,
            headers,
            body,
        } => {
            shared.answered(record, status);
            http::write_full(conn.get_mut(), status, &headers, &body, head.keep_alive()).await?;
            Ok(Next::KeepAlive)
        }
        Reply::Watch(plan) => watch::stream(conn.get_mut(), shared, plan, record).await,
    }
}

/// Applies a fault; `None` means "now answer normally" (after a delay).
async fn inject<S: AsyncRead + AsyncWrite + Unpin>(
    conn: &mut BufReader<S>,
    shared: &Shared,
    record: usize,
    fault: Fault,
    head: &RequestHead,
    body: &[u8],
) -> io::Result<Option<Next>> {
    let keep_alive = head.keep_alive();
    let json = vec![("Content-Type".to_string(), "application/json".to_string())];
    match fault {
        Fault::Delay(delay) => {
            Timer::after(delay).await;
            Ok(None)
        }
        Fault::Hold(gate) => {
            let _ = gate.recv().await;
            Ok(None)
        }
        Fault::TooManyRequests { retry_after_secs } => {
            let mut headers = json;
            headers.push(("Retry-After".into(), retry_after_secs.to_string()));
            let status = ApiError::too_many_requests().to_status().to_string();
            shared.answered(record, 429);
            http::write_full(conn.get_mut(), 429, &headers, status.as_bytes(), keep_alive).await?;
            Ok(Some(Next::KeepAlive))
        }
        Fault::ServerError => {
            let status = ApiError::internal().to_status().to_string();
            shared.answered(record, 500);
            http::write_full(conn.get_mut(), 500, &json, status.as_bytes(), keep_alive).await?;
            Ok(Some(Next::KeepAlive))
        }
        Fault::Unauthorized => {
            let status = ApiError::unauthorized().to_status().to_string();
            shared.answered(record, 401);
            http::write_full(conn.get_mut(), 401, &json, status.as_bytes(), keep_alive).await?;
            Ok(Some(Next::KeepAlive))
        }
        Fault::Stall => {
            let mut sink = [0u8; 4096];
            while matches!(conn.read(&mut sink).await, Ok(1..)) {}
            Ok(Some(Next::Close))
        }
        Fault::Reset => Ok(Some(Next::Close)),
        Fault::ResetMidBody => {
            let (status, full_body) = match handler::handle(shared, head, body) {
                Reply::Full { status, body, .. } => (status, body),
                Reply::Watch(_) => (200, HALF_EVENT.repeat(2)),
            };
            let mut headers = json;
            headers.push(("Content-Length".into(), full_body.len().to_string()));
            let mut bytes = response_head(status, &headers);
            bytes.extend_from_slice(&full_body[..full_body.len() / 2]);
            shared.answered(record, status);
            conn.get_mut().write_all(&bytes).await?;
            conn.get_mut().flush().await?;
            Ok(Some(Next::Close))
        }
        Fault::TruncatedChunk => {
            let mut bytes = chunked_head();
            bytes.extend_from_slice(&chunk(HALF_EVENT));
            shared.answered(record, 200);
            conn.get_mut().write_all(&bytes).await?;
            conn.get_mut().flush().await?;
            Ok(Some(Next::Close))
        }
        Fault::Garbage => {
            shared.answered(record, 200);
            http::write_full(conn.get_mut(), 200, &json, GARBAGE, keep_alive).await?;
            Ok(Some(Next::KeepAlive))
        }
    }
}
