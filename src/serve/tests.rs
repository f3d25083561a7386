use super::*;
use http_types::{Method, Request, StatusCode, Url};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::TcpStream;

async fn get(addr: SocketAddr, path: &str) -> (StatusCode, String, Option<String>) {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let url = Url::parse(&format!("http://{addr}{path}")).expect("url");
    let mut res = async_h1::connect(stream, Request::new(Method::Get, url))
        .await
        .expect("response");
    let content_type = res.header("Content-Type").map(|v| v.as_str().to_owned());
    let body = res.body_string().await.expect("body");
    (res.status(), body, content_type)
}

async fn start(probes: Option<Arc<Probes>>, metrics: Option<MetricsSecurity>) -> SocketAddr {
    let loopback = "127.0.0.1:0".parse().expect("addr");
    let listener = bind(loopback, "--test-address").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    smol::spawn(serve("test", listener, Routes { probes, metrics })).detach();
    addr
}

#[test]
fn probes_answer_healthz_and_readyz() {
    smol::block_on(async {
        let probes = Arc::new(Probes::new(Vec::new()));
        let addr = start(Some(probes.clone()), None).await;
        assert_eq!(get(addr, "/healthz").await.0, StatusCode::Ok);
        assert_eq!(
            get(addr, "/readyz").await.0,
            StatusCode::InternalServerError
        );
        probes.set_ready(true);
        let (status, body, _) = get(addr, "/readyz").await;
        assert_eq!((status, body.as_str()), (StatusCode::Ok, "ok"));
        assert_eq!(get(addr, "/metrics").await.0, StatusCode::NotFound);
        assert_eq!(get(addr, "/other").await.0, StatusCode::NotFound);
    });
}

#[test]
fn a_failing_check_makes_healthz_fail_with_its_message() {
    smol::block_on(async {
        let healthy = Arc::new(AtomicBool::new(true));
        let flag = healthy.clone();
        let ok: Check = Box::new(|_| Ok(()));
        let lease: Check = Box::new(move |_| match flag.load(Ordering::Relaxed) {
            true => Ok(()),
            false => Err("last renew 40s ago".to_owned()),
        });
        let probes = Arc::new(Probes::new(vec![("ok-check", ok), ("lease", lease)]));
        let addr = start(Some(probes.clone()), None).await;
        assert_eq!(get(addr, "/healthz").await.0, StatusCode::Ok);
        healthy.store(false, Ordering::Relaxed);
        let (status, body, _) = get(addr, "/healthz").await;
        assert_eq!(status, StatusCode::InternalServerError);
        assert_eq!(body, "lease: last renew 40s ago");
    });
}

#[test]
fn metrics_are_served_in_prometheus_text_format() {
    smol::block_on(async {
        crate::metrics::counter("skiff_serve_test_total", "A test counter.", &[]).inc();
        let addr = start(None, Some(MetricsSecurity::Plain)).await;
        let (status, body, content_type) = get(addr, "/metrics").await;
        assert_eq!(status, StatusCode::Ok);
        assert_eq!(content_type.as_deref(), Some(METRICS_CONTENT_TYPE));
        assert!(body.contains("skiff_serve_test_total 1"), "{body}");
        assert_eq!(get(addr, "/healthz").await.0, StatusCode::NotFound);
    });
}

async fn get_tls(addr: SocketAddr, token: Option<&str>) -> (StatusCode, String) {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let tls = async_native_tls::TlsConnector::new()
        .danger_accept_invalid_certs(true)
        .connect("localhost", tcp)
        .await
        .expect("TLS handshake");
    let url = Url::parse("https://localhost/metrics").expect("url");
    let mut req = Request::new(Method::Get, url);
    if let Some(token) = token {
        req.insert_header("Authorization", format!("Bearer {token}"));
    }
    let stream = async_dup::Arc::new(async_dup::Mutex::new(tls));
    let mut res = async_h1::connect(stream, req).await.expect("response");
    (res.status(), res.body_string().await.expect("body"))
}

/// A secure metrics server whose reviews cannot reach any API server.
async fn start_secure_without_api_server() -> SocketAddr {
    let nowhere = Url::parse("http://127.0.0.1:1").expect("url");
    let client = crate::kube::Client::new(crate::kube::Config::new(nowhere)).expect("client");
    let security = MetricsSecurity::Secure {
        tls: metrics_tls_acceptor(None).expect("self-signed"),
        auth: MetricsAuth::new(client),
    };
    start(None, Some(security)).await
}

#[test]
fn secure_metrics_refuse_without_a_token_and_fail_closed_when_reviews_fail() {
    smol::block_on(async {
        crate::metrics::counter("skiff_serve_secure_test_total", "A test counter.", &[]).inc();
        let addr = start_secure_without_api_server().await;
        let (status, body) = get_tls(addr, None).await;
        assert_eq!(status, StatusCode::Unauthorized, "{body}");
        assert!(!body.contains("skiff_serve_secure_test_total"), "{body}");
        let (status, body) = get_tls(addr, Some("some-token")).await;
        assert_eq!(status, StatusCode::InternalServerError, "{body}");
        assert!(!body.contains("skiff_serve_secure_test_total"), "{body}");
    });
}

#[test]
fn binding_a_taken_address_names_the_flag() {
    smol::block_on(async {
        let loopback = "127.0.0.1:0".parse().expect("addr");
        let first = bind(loopback, "--a").await.expect("bind");
        let taken = first.local_addr().expect("local addr");
        let err = bind(taken, "--health-probe-bind-address")
            .await
            .unwrap_err();
        assert!(err.contains("--health-probe-bind-address"), "{err}");
        assert!(err.contains(&taken.to_string()), "{err}");
    });
}

/// Sends `request` on a new connection and reads until the server closes: the raw answer.
async fn exchange(addr: SocketAddr, request: &[u8]) -> String {
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let _ = tcp.write_all(request).await;
    let mut answer = Vec::new();
    let _ = tcp.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn oversized_heads_bodies_and_other_methods_are_refused_with_their_status() {
    smol::block_on(async {
        let addr = start(Some(Arc::new(Probes::new(Vec::new()))), None).await;
        let mut huge = b"GET /healthz HTTP/1.1\r\nX-Flood: ".to_vec();
        huge.extend(std::iter::repeat_n(b'x', 64 * 1024));
        let answer = exchange(addr, &huge).await;
        assert!(answer.starts_with("HTTP/1.1 431 "), "{answer}");
        assert!(answer.contains("Connection: close"), "{answer}");
        let body = b"POST /healthz HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
        assert!(exchange(addr, body).await.starts_with("HTTP/1.1 413 "));
        let delete = b"DELETE /healthz HTTP/1.1\r\nConnection: close\r\n\r\n";
        let answer = exchange(addr, delete).await;
        assert!(answer.starts_with("HTTP/1.1 405 "), "{answer}");
        assert!(answer.contains("Allow: GET, HEAD"), "{answer}");
        let head = b"HEAD /healthz HTTP/1.1\r\nConnection: close\r\n\r\n";
        let answer = exchange(addr, head).await;
        assert!(
            answer.ends_with("Content-Length: 2\r\nConnection: close\r\n\r\n"),
            "{answer}"
        );
    });
}

#[test]
fn a_kept_alive_connection_serves_several_requests() {
    smol::block_on(async {
        let addr = start(Some(Arc::new(Probes::new(Vec::new()))), None).await;
        let two = b"GET /healthz HTTP/1.1\r\n\r\nGET /readyz HTTP/1.1\r\nConnection: close\r\n\r\n";
        let answer = exchange(addr, two).await;
        assert_eq!(answer.matches("HTTP/1.1 ").count(), 2, "{answer}");
        assert!(answer.contains("not ready"), "{answer}");
    });
}

#[test]
fn plain_http_on_the_secure_port_is_told_to_use_https() {
    smol::block_on(async {
        let addr = start_secure_without_api_server().await;
        let answer = exchange(addr, b"GET /metrics HTTP/1.1\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.0 400 "), "{answer}");
        assert!(answer.contains("HTTPS"), "{answer}");
    });
}
