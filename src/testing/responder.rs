//! A small HTTP/1.1 server for unit tests that need an API server's replies but none of its
//! behaviour: each request goes to a closure, which counts it, holds it or refuses it, and
//! answers with a status and a JSON body. Each connection has a thread of its own and is served
//! until the client closes it, so a client's pooled connections and concurrent requests work as
//! against a real server. The fake API server of `tests/support` is for the binary's wiring; this
//! one is for one module's own requests.

use serde_json::Value;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

/// One request as the closure sees it.
pub struct Request {
    pub method: String,
    /// The request target: path and query.
    pub path: String,
    /// The body as JSON, `Null` when there is none or it is not JSON.
    pub body: Value,
}

/// Serves on a free loopback port until the process ends, answering each request with what
/// `answer` returns (a status code and a JSON body); returns the server's `http://` URL.
pub fn serve(answer: impl Fn(Request) -> (u16, Value) + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("its address"));
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let answer = Arc::clone(&answer);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(&stream);
                while let Some(request) = read(&mut reader) {
                    let (status, body) = answer(request);
                    if write(&stream, status, &body).is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

/// The next request on the connection; `None` once the client closed it or sent no HTTP.
fn read(reader: &mut BufReader<&TcpStream>) -> Option<Request> {
    let mut first = String::new();
    reader.read_line(&mut first).ok().filter(|n| *n > 0)?;
    let mut parts = first.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut length = 0;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok().filter(|n| *n > 0)?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Request { method, path, body })
}

fn write(mut stream: &TcpStream, status: u16, body: &Value) -> std::io::Result<()> {
    let reason = http_types::StatusCode::try_from(status).map_or("", |s| s.canonical_reason());
    let body = body.to_string();
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())
}
