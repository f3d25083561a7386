//! The probes and metrics HTTP server: `/healthz`, `/readyz` and `/metrics` over async-h1.
//!
//! It starts before leader election on every replica, so the kubelet sees a standby as alive
//! and ready, and Prometheus scrapes every replica. The caller binds the listeners first (see
//! [`bind`]) so that "address in use" stops the process at start, naming the flag.
//!
//! `/metrics` is served as kubebuilder's scaffold serves it: over HTTPS ([`tls`]) to callers the
//! API server vouches for ([`authz`]), unless `--metrics-secure=false` asks for plain HTTP.
//! Probes stay plain HTTP: the kubelet calls them without credentials.

mod authz;
mod review_cache;
mod tls;

pub use authz::{Decision, MAX_REVIEWS_IN_FLIGHT, MetricsAuth};
pub use review_cache::{ALLOWED_TTL, DENIED_TTL};
pub use tls::{CERT_FILE, KEY_FILE, acceptor as metrics_tls_acceptor};

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use async_native_tls::TlsAcceptor;
use http_types::{Request, Response, StatusCode};
use smol::io::{AsyncRead, AsyncWrite};
use smol::net::{TcpListener, TcpStream};

/// Content type of the Prometheus text exposition format.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4";
/// Pause after a failed `accept` (e.g. out of file descriptors) so the loop never spins hot.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);
/// A TLS client that does not finish its handshake in this time is dropped, so idle
/// connections cannot pile up.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A liveness check at a given instant: `Err(why)` makes `/healthz` answer 500 with the reason.
pub type Check = Box<dyn Fn(Instant) -> Result<(), String> + Send + Sync>;

/// The state behind `/readyz` and `/healthz`, shared (in an `Arc`) with whoever knows it.
pub struct Probes {
    ready: AtomicBool,
    checks: Vec<(&'static str, Check)>,
}

impl Probes {
    /// Not ready yet, with the named liveness checks `/healthz` runs.
    pub fn new(checks: Vec<(&'static str, Check)>) -> Self {
        Probes {
            ready: AtomicBool::new(false),
            checks,
        }
    }

    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// Runs every check as of `now`, in order; the first failure is `Err("name: why")`.
    pub fn health(&self, now: Instant) -> Result<(), String> {
        for (name, check) in &self.checks {
            check(now).map_err(|why| format!("{name}: {why}"))?;
        }
        Ok(())
    }
}

/// Binds `addr` for the server behind `flag`; the error names both, and the fix.
pub async fn bind(addr: SocketAddr, flag: &str) -> Result<TcpListener, String> {
    TcpListener::bind(addr).await.map_err(|e| {
        format!("cannot listen on {addr} ({flag}): {e}; choose another address with {flag}")
    })
}

/// How `/metrics` is served.
#[derive(Clone)]
pub enum MetricsSecurity {
    /// Plain HTTP to anyone who can connect (`--metrics-secure=false`).
    Plain,
    /// HTTPS, answering only callers `auth` admits.
    Secure {
        tls: TlsAcceptor,
        auth: Arc<MetricsAuth>,
    },
}

/// Serves `/healthz` and `/readyz` on `listener` until the future is dropped.
pub async fn serve_probes(listener: TcpListener, probes: Arc<Probes>) {
    let routes = Routes {
        probes: Some(probes),
        metrics: None,
    };
    serve(listener, routes).await
}

/// Serves `/metrics` on `listener`, as `security` says, until the future is dropped.
pub async fn serve_metrics(listener: TcpListener, security: MetricsSecurity) {
    let routes = Routes {
        probes: None,
        metrics: Some(security),
    };
    serve(listener, routes).await
}

/// Which paths a listener answers: probes, metrics, or both.
#[derive(Clone)]
struct Routes {
    probes: Option<Arc<Probes>>,
    metrics: Option<MetricsSecurity>,
}

async fn serve(listener: TcpListener, routes: Routes) {
    loop {
        match listener.accept().await {
            Ok((stream, _peer)) => {
                smol::spawn(serve_connection(stream, routes.clone())).detach();
            }
            Err(e) => {
                log::warn!("probe/metrics server: accept failed: {e}");
                smol::Timer::after(ACCEPT_ERROR_PAUSE).await;
            }
        }
    }
}

async fn serve_connection(stream: TcpStream, routes: Routes) {
    let Some(MetricsSecurity::Secure { tls, .. }) = &routes.metrics else {
        return serve_http(stream, routes).await;
    };
    let handshake = async { Some(tls.accept(stream).await) };
    let timeout = async {
        smol::Timer::after(HANDSHAKE_TIMEOUT).await;
        None
    };
    match smol::future::or(handshake, timeout).await {
        Some(Ok(stream)) => {
            let stream = async_dup::Arc::new(async_dup::Mutex::new(stream));
            serve_http(stream, routes).await
        }
        Some(Err(e)) => log::debug!("metrics TLS handshake failed: {e}"),
        None => log::debug!("metrics TLS handshake timed out after {HANDSHAKE_TIMEOUT:?}"),
    }
}

async fn serve_http<S>(stream: S, routes: Routes)
where
    S: AsyncRead + AsyncWrite + Clone + Send + Sync + Unpin + 'static,
{
    let result = async_h1::accept(stream, |req| {
        let routes = routes.clone();
        async move { Ok(respond(&req, &routes).await) }
    })
    .await;
    if let Err(e) = result {
        log::debug!("probe/metrics connection ended: {e}");
    }
}

async fn respond(req: &Request, routes: &Routes) -> Response {
    match (req.url().path(), &routes.probes, &routes.metrics) {
        ("/healthz", Some(probes), _) => match probes.health(Instant::now()) {
            Ok(()) => text(StatusCode::Ok, "ok"),
            Err(why) => text(StatusCode::InternalServerError, &why),
        },
        ("/readyz", Some(probes), _) if probes.is_ready() => text(StatusCode::Ok, "ok"),
        ("/readyz", Some(_), _) => text(StatusCode::InternalServerError, "not ready"),
        ("/metrics", _, Some(security)) => metrics(req, security).await,
        _ => text(StatusCode::NotFound, "not found"),
    }
}

async fn metrics(req: &Request, security: &MetricsSecurity) -> Response {
    if let MetricsSecurity::Secure { auth, .. } = security {
        let authorization = req.header("Authorization").map(|v| v.as_str());
        if let Decision::Deny(status, message) = auth.check(authorization).await {
            let mut res = text(status, &message);
            if status == StatusCode::Unauthorized {
                res.insert_header("WWW-Authenticate", "Bearer");
            }
            return res;
        }
    }
    let mut res = Response::new(StatusCode::Ok);
    res.insert_header("Content-Type", METRICS_CONTENT_TYPE);
    res.set_body(crate::metrics::render());
    res
}

fn text(status: StatusCode, body: &str) -> Response {
    let mut res = Response::new(status);
    res.insert_header("Content-Type", "text/plain; charset=utf-8");
    res.set_body(body);
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_types::{Method, Url};

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
        smol::spawn(serve(listener, Routes { probes, metrics })).detach();
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

    #[test]
    fn secure_metrics_refuse_without_a_token_and_fail_closed_when_reviews_fail() {
        smol::block_on(async {
            crate::metrics::counter("skiff_serve_secure_test_total", "A test counter.", &[]).inc();
            let nowhere = Url::parse("http://127.0.0.1:1").expect("url");
            let client =
                crate::kube::Client::new(crate::kube::Config::new(nowhere)).expect("client");
            let security = MetricsSecurity::Secure {
                tls: metrics_tls_acceptor(None).expect("self-signed"),
                auth: MetricsAuth::new(client),
            };
            let addr = start(None, Some(security)).await;
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
}
