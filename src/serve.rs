//! The probes and metrics HTTP servers: `/healthz`, `/readyz` and `/metrics`.
//!
//! They start before leader election on every replica, so the kubelet sees a standby as alive
//! and ready, and Prometheus scrapes every replica. The caller binds the listeners first (see
//! [`bind`]) so that "address in use" stops the process at start, naming the flag.
//!
//! `/metrics` is served as kubebuilder's scaffold serves it: over HTTPS ([`tls`]) to callers the
//! API server vouches for ([`authz`]), unless `--metrics-secure=false` asks for plain HTTP.
//! Probes stay plain HTTP: the kubelet calls them without credentials.
//!
//! Anyone who can reach a port can send bytes before anything is authenticated, so each server
//! holds a bounded number of connections ([`admission`]), each within deadlines and sizes
//! ([`limits`]): request heads are read and parsed here ([`head`]), TLS handshakes start only
//! once the whole ClientHello is in ([`client_hello`], [`handshake`]), and what is refused is
//! counted ([`refusals`]).

mod admission;
mod authz;
pub(crate) mod client_hello;
mod connection;
mod handshake;
pub(crate) mod head;
pub mod limits;
mod refusals;
mod reply;
mod review_cache;
mod routes;
mod tls;

pub use authz::{Decision, MetricsAuth, NEW_TOKEN_REVIEW_BURST, NEW_TOKEN_REVIEWS_PER_SECOND};
pub use tls::{MetricsTls, acceptor as metrics_tls_acceptor};

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use smol::net::TcpListener;

use connection::Server;
use routes::Routes;

/// Content type of the Prometheus text exposition format.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4";

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

/// Binds `addr` for the server behind `flag` and logs the address bound (the port the kernel
/// chose, for port 0); the error names both, and the fix.
pub async fn bind(addr: SocketAddr, flag: &str) -> Result<TcpListener, String> {
    let listener = TcpListener::bind(addr).await.map_err(|e| {
        format!("cannot listen on {addr} ({flag}): {e}; choose another address with {flag}")
    })?;
    let bound = listener.local_addr().unwrap_or(addr);
    log::info!("listening on {bound} ({flag})");
    Ok(listener)
}

/// How `/metrics` is served.
#[derive(Clone)]
pub enum MetricsSecurity {
    /// Plain HTTP to anyone who can connect (`--metrics-secure=false`).
    Plain,
    /// HTTPS, answering only callers `auth` admits.
    Secure {
        tls: MetricsTls,
        auth: Arc<MetricsAuth>,
    },
}

/// Serves `/healthz` and `/readyz` on `listener` until the future is dropped.
pub async fn serve_probes(listener: TcpListener, probes: Arc<Probes>) {
    let routes = Routes {
        probes: Some(probes),
        metrics: None,
    };
    serve("probes", listener, routes).await
}

/// Serves `/metrics` on `listener`, as `security` says, until the future is dropped (over TLS,
/// on a thread of its own that lives as long as the process).
pub async fn serve_metrics(listener: TcpListener, security: MetricsSecurity) {
    let routes = Routes {
        probes: None,
        metrics: Some(security),
    };
    serve("metrics", listener, routes).await
}

/// Runs one server until the future is dropped. Its connections are tasks of an executor of
/// its own: run here, on the caller's executor, for plain HTTP; on a thread of its own for
/// TLS, so a flood of handshakes never delays `/healthz` or the controllers.
async fn serve(name: &'static str, listener: TcpListener, routes: Routes) {
    let tls = match &routes.metrics {
        Some(MetricsSecurity::Secure { tls, .. }) => Some(handshake::Handshakes::new(tls.clone())),
        _ => None,
    };
    let on_own_thread = tls.is_some();
    let executor = Arc::new(smol::Executor::new());
    let server = Arc::new(Server {
        name,
        admission: admission::Admission::new(
            limits::server_connection_cap(on_own_thread),
            refusals::ServerStats::new(name),
        ),
        routes,
        tls,
        executor: executor.clone(),
    });
    if !on_own_thread {
        return executor
            .run(connection::accept_loop(listener, server))
            .await;
    }
    let thread = std::thread::Builder::new()
        .name(format!("skiff-{name}"))
        .spawn(move || smol::block_on(executor.run(connection::accept_loop(listener, server))));
    match thread {
        Ok(_) => std::future::pending().await,
        Err(e) => log::error!("{name} server: cannot start its thread: {e}; not serving"),
    }
}

#[cfg(test)]
mod tests;
