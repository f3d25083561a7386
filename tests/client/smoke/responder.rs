//! A tiny scripted HTTP/1.1 responder on loopback for the client smoke tests: it answers each
//! request with what the test's script returns and records which connection carried it.

use skiff::kube::{Client, Config};
use smol::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use smol::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as the responder saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub connection: usize,
    pub request_line: String,
    pub headers: Vec<String>,
    pub body: String,
}

/// What the responder answers: full raw HTTP bytes, or `None` to never answer.
type Script = dyn Fn(usize, &Seen) -> Option<String> + Send + Sync;

pub struct Responder {
    pub port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    pub connections: Arc<AtomicUsize>,
}

impl Responder {
    pub fn start(
        script: impl Fn(usize, &Seen) -> Option<String> + Send + Sync + 'static,
    ) -> Responder {
        let listener = smol::block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let script: Arc<Script> = Arc::new(script);
        let (seen2, conns2) = (seen.clone(), connections.clone());
        std::thread::spawn(move || {
            smol::block_on(async {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        return;
                    };
                    let id = conns2.fetch_add(1, Ordering::SeqCst);
                    smol::spawn(serve(stream, id, seen2.clone(), script.clone())).detach();
                }
            })
        });
        Responder {
            port,
            seen,
            connections,
        }
    }

    pub fn client(&self) -> Client {
        let url = format!("http://127.0.0.1:{}", self.port).parse().unwrap();
        Client::new(Config::new(url)).unwrap()
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn serve(stream: TcpStream, id: usize, seen: Arc<Mutex<Vec<Seen>>>, script: Arc<Script>) {
    let mut writer = stream.clone();
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).await.unwrap_or(0) == 0 {
            return;
        }
        let mut headers = Vec::new();
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).await.unwrap();
            let line = line.trim_end().to_owned();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            headers.push(line);
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await.unwrap();
        let request = Seen {
            connection: id,
            request_line: request_line.trim_end().to_owned(),
            headers,
            body: String::from_utf8(body).unwrap(),
        };
        let index = {
            let mut seen = seen.lock().unwrap();
            seen.push(request.clone());
            seen.len() - 1
        };
        match script(index, &request) {
            Some(reply) => {
                writer.write_all(reply.as_bytes()).await.unwrap();
                // Lets a test hang up after a reply without telling the client beforehand.
                if reply.contains("\r\nX-Test-Hang-Up: yes\r\n") {
                    // Late enough that the client has already sent its next request.
                    smol::Timer::after(Duration::from_millis(50)).await;
                    return;
                }
            }
            None => {
                smol::Timer::after(Duration::from_secs(3600)).await;
            }
        }
    }
}

pub fn json(code: u16, reason: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// A 200 reply with `body` split into two chunks.
pub fn chunked(body: &str) -> String {
    let (a, b) = body.split_at(body.len() / 2);
    format!(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    )
}
