//! A minimal HTTP client for the fake server's self-tests: async-h1 over a plain or TLS stream,
//! raw byte exchanges, and a line-by-line watch reader.

use crate::support::fake::FakeServer;
use http_types::{Method, Request, Response, Url};
use serde_json::{Value, json};
use smol::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use smol::net::TcpStream;
use smol::{Timer, future::FutureExt};
use std::time::Duration;

/// Longest a test waits for one answer or event before failing.
pub const PATIENCE: Duration = Duration::from_secs(5);

pub fn address(server: &FakeServer) -> String {
    let url = server.url();
    url.split("://").nth(1).unwrap_or_default().to_string()
}

pub fn request(server: &FakeServer, method: Method, path: &str, body: Option<&Value>) -> Request {
    let url = Url::parse(&format!("{}{path}", server.url())).expect("test URL");
    let mut request = Request::new(method, url);
    if let Some(body) = body {
        request.set_body(body.to_string());
        let content_type = if method == Method::Patch {
            "application/merge-patch+json"
        } else {
            "application/json"
        };
        request.insert_header("Content-Type", content_type);
    }
    request
}

pub async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    future
        .or(async {
            Timer::after(PATIENCE).await;
            panic!("no answer within {PATIENCE:?}")
        })
        .await
}

/// Sends one request on `stream` and reads the whole answer: (status, JSON body, response).
pub async fn exchange<S>(stream: S, request: Request) -> (u16, Value, Response)
where
    S: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static,
{
    within(async {
        let mut response = async_h1::connect(stream, request)
            .await
            .expect("HTTP exchange");
        let text = response.body_string().await.expect("response body");
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        (u16::from(response.status()), body, response)
    })
    .await
}

/// One request on a fresh connection.
pub fn call(server: &FakeServer, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    smol::block_on(async {
        let stream = TcpStream::connect(address(server)).await.expect("connect");
        let (status, body, _) =
            exchange(stream, request(server, method, path, body.as_ref())).await;
        (status, body)
    })
}

pub fn configmap(namespace: &str, name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": namespace, "labels": labels},
           "data": {"k": "v"}})
}

pub fn names(items: &Value) -> Vec<String> {
    items["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| {
                    i["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A watch stream opened with a raw request; events are read line by line.
pub struct WatchStream(BufReader<Response>);

impl WatchStream {
    pub fn open(server: &FakeServer, path_and_query: &str) -> WatchStream {
        smol::block_on(async {
            let stream = TcpStream::connect(address(server)).await.expect("connect");
            let response = within(async_h1::connect(
                stream,
                request(server, Method::Get, path_and_query, None),
            ))
            .await
            .expect("watch request");
            assert_eq!(u16::from(response.status()), 200);
            WatchStream(BufReader::new(response))
        })
    }

    /// The next event, or `None` when the stream ended.
    pub fn next(&mut self) -> Option<Value> {
        smol::block_on(within(async {
            let mut line = String::new();
            match self.0.read_line(&mut line).await {
                Ok(0) | Err(_) => None,
                Ok(_) => Some(serde_json::from_str(&line).expect("watch line is JSON")),
            }
        }))
    }
}

pub fn event_summary(event: &Value) -> (String, String) {
    (
        event["type"].as_str().unwrap_or_default().to_string(),
        event["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

/// Sends raw bytes and reads until the server closes.
pub fn raw(server: &FakeServer, text: &str) -> Vec<u8> {
    smol::block_on(within(async {
        let mut stream = TcpStream::connect(address(server)).await.expect("connect");
        stream.write_all(text.as_bytes()).await.expect("send");
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        answer
    }))
}
