//! An in-repo fake Kubernetes API server for integration tests: real resourceVersion/409
//! semantics, list + chunked watch, 410, bookmarks, selectors, status subresource, finalizers,
//! fault injection by request class, and a log of every request with its TCP connection.
//!
//! It runs on its own thread with its own executor so a busy test executor cannot slow it, and
//! speaks plain HTTP/1.1 + JSON (optionally over TLS) like kube-apiserver. A [`FakeFleet`] is
//! many such servers on one thread, for benchmarks with hundreds of clusters.

mod conn;
mod events;
mod faults;
mod handler;
mod http;
mod object;
mod routes;
mod selectors;
mod shared;
mod status;
mod store;
pub mod tls;
mod watch;

pub use faults::{Fault, RequestClass};
pub use shared::RequestRecord;

use routes::{Resource, Target};
use serde_json::Value;
use shared::{Shared, lock};
use smol::{Executor, Timer};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use store::{ObjectKey, WriteMode};

/// Pause after a failed accept (e.g. out of file descriptors) before trying again.
const ACCEPT_RETRY_PAUSE: Duration = Duration::from_millis(10);

/// A running fake API server; dropping it closes the listener and every connection.
pub struct FakeServer {
    shared: Arc<Shared>,
    url: String,
    ca_pem: Option<Vec<u8>>,
    stop: Option<smol::channel::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeServer {
    /// Plain HTTP on 127.0.0.1 and a free port.
    pub fn start() -> FakeServer {
        launch(None)
    }

    /// HTTPS with a freshly generated CA and a server certificate for 127.0.0.1 and localhost.
    pub fn start_tls() -> FakeServer {
        let material = tls::generate().expect("generating the fake server's TLS certificates");
        launch(Some(material))
    }

    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// A client config for this server: its URL, and its CA when it serves TLS.
    pub fn config(&self) -> skiff::kube::Config {
        let url = self.url.parse().expect("the fake server's URL parses");
        let mut config = skiff::kube::Config::new(url);
        config.tls.ca_pem = self.ca_pem();
        config
    }

    /// PEM of the CA that signed the server certificate (TLS only).
    pub fn ca_pem(&self) -> Option<Vec<u8>> {
        self.ca_pem.clone()
    }

    /// From now on, requests without `Authorization: Bearer <token>` get 401.
    pub fn require_token(&self, token: &str) {
        *lock(&self.shared.token) = Some(token.to_string());
    }

    /// Server-side create (uid, resourceVersion, creationTimestamp, generation 1; status kept);
    /// emits ADDED. Panics on an object without apiVersion/kind/name or one that exists.
    pub fn insert(&self, object: Value) -> Value {
        let resource =
            Resource::of_object(&object).expect("insert: the object needs apiVersion and kind");
        lock(&self.shared.store)
            .create(&resource, None, object, true)
            .unwrap_or_else(|error| panic!("insert failed: {}", error.message))
    }

    /// The object at an object URL path, e.g. "/api/v1/namespaces/a/configmaps/x".
    pub fn get(&self, path: &str) -> Option<Value> {
        let (_, key) = object_key(path)?;
        lock(&self.shared.store).get(&key).ok()
    }

    /// The objects of a collection path ("/api/v1/configmaps" = every namespace).
    pub fn list(&self, collection_path: &str) -> Vec<Value> {
        let Some(Target::Collection {
            resource,
            namespace,
        }) = routes::parse(collection_path)
        else {
            panic!("list: {collection_path:?} is not a collection path");
        };
        let filter = events::WatchFilter {
            group: resource.group,
            plural: resource.plural,
            namespace,
            labels: Default::default(),
            fields: Default::default(),
        };
        lock(&self.shared.store).list(&filter, None, None).items
    }

    /// Server-side unconditional update of everything (spec, status, metadata); emits MODIFIED.
    /// Panics when the object does not exist.
    pub fn update(&self, object: Value) -> Value {
        let path = routes::object_path(&object)
            .expect("update: the object needs apiVersion, kind and name");
        let (resource, key) = object_key(&path).expect("update: unroutable object");
        lock(&self.shared.store)
            .replace(&key, object, WriteMode::Force, &resource)
            .unwrap_or_else(|error| panic!("update failed: {}", error.message))
    }

    /// Server-side delete honouring finalizers like DELETE; a missing object is ignored.
    pub fn remove(&self, path: &str) {
        if let Some((_, key)) = object_key(path) {
            let _ = lock(&self.shared.store).delete(&key, None);
        }
    }

    /// Applies `fault` to every following request of `class` until cleared.
    pub fn set_fault(&self, class: RequestClass, fault: Fault) {
        lock(&self.shared.faults).set(class, fault, None);
    }

    /// Applies `fault` to the next `times` requests of `class` only.
    pub fn set_fault_times(&self, class: RequestClass, fault: Fault, times: usize) {
        lock(&self.shared.faults).set(class, fault, Some(times));
    }

    pub fn clear_faults(&self) {
        lock(&self.shared.faults).clear();
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.shared.records).clone()
    }

    /// How many mutating requests (POST/PUT/PATCH/DELETE) have arrived so far; counted in
    /// place, so a wait may poll it often however long the request log grows.
    pub fn writes_received(&self) -> usize {
        lock(&self.shared.records)
            .iter()
            .filter(|r| r.is_mutating())
            .count()
    }

    /// Drops every open watch connection without a clean end (simulated connection loss).
    pub fn close_watches(&self) {
        lock(&self.shared.store).events.close_all();
    }

    /// Watches by `token`, open and new, send nothing from now on (no event, no bookmark), as
    /// when an API server's watch cache stalls; everything else still answers.
    pub fn silence_watches_of(&self, token: &str) {
        lock(&self.shared.deaf_tokens).insert(token.to_owned());
    }

    /// Forgets the event history: watches from an older resourceVersion get 410.
    pub fn compact(&self) {
        lock(&self.shared.store).compact();
    }

    /// Period of BOOKMARK events on watches that asked for them (default 1 s); applies to
    /// watches from their next bookmark on.
    pub fn set_bookmark_interval(&self, every: Duration) {
        *lock(&self.shared.bookmark_interval) = every;
    }

    pub fn current_resource_version(&self) -> u64 {
        lock(&self.shared.store).resource_version()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn object_key(path: &str) -> Option<(Resource, ObjectKey)> {
    match routes::parse(path)? {
        Target::Object {
            resource,
            namespace,
            name,
            ..
        } => {
            let key = ObjectKey::new(&resource, namespace.as_deref(), &name);
            Some((resource, key))
        }
        Target::Collection { .. } => None,
    }
}

fn launch(material: Option<tls::TlsMaterial>) -> FakeServer {
    let (listener, mut server) = bound(material.as_ref().map(|m| m.ca_pem.clone()));
    let acceptor = material.as_ref().map(|material| {
        smol::block_on(async_native_tls::TlsAcceptor::new(
            &material.server_pkcs12[..],
            tls::PKCS12_PASSWORD,
        ))
        .expect("loading the fake server's TLS identity")
    });
    let served = vec![(listener, server.shared.clone())];
    let (stop, thread) = serve_on_a_thread("fake-apiserver", served, acceptor);
    server.stop = Some(stop);
    server.thread = Some(thread);
    server
}

/// A listener on 127.0.0.1 and a free port, and the handle of the server it will be, not yet
/// served (`https` when it will serve TLS with `ca_pem`).
fn bound(ca_pem: Option<Vec<u8>>) -> (std::net::TcpListener, FakeServer) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("binding 127.0.0.1:0 for the fake server");
    let port = listener
        .local_addr()
        .expect("local address of the fake server")
        .port();
    let scheme = if ca_pem.is_some() { "https" } else { "http" };
    let server = FakeServer {
        shared: Arc::new(Shared::new()),
        url: format!("{scheme}://127.0.0.1:{port}"),
        ca_pem,
        stop: None,
        thread: None,
    };
    (listener, server)
}

/// Many fake API servers served by one thread: each with its own listener, store, faults and
/// request log, as [`FakeServer::start`] gives (plain HTTP).
///
/// Why: a benchmark with hundreds of member clusters (`benches/fleet.rs`) needs hundreds of
/// API servers; one thread and executor each would be hundreds of threads for servers that are
/// idle nearly all the time. Dropping the fleet closes every listener and connection.
pub struct FakeFleet {
    servers: Vec<FakeServer>,
    stop: Option<smol::channel::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeFleet {
    pub fn start(count: usize) -> FakeFleet {
        let (listeners, servers): (Vec<_>, Vec<_>) = (0..count).map(|_| bound(None)).unzip();
        let served = listeners
            .into_iter()
            .zip(&servers)
            .map(|(listener, server)| (listener, server.shared.clone()))
            .collect();
        let (stop, thread) = serve_on_a_thread("fake-apiservers", served, None);
        FakeFleet {
            servers,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn servers(&self) -> &[FakeServer] {
        &self.servers
    }
}

impl Drop for FakeFleet {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Serves each listener with its state on one new thread until the returned sender is
/// dropped.
fn serve_on_a_thread(
    name: &str,
    served: Vec<(std::net::TcpListener, Arc<Shared>)>,
    acceptor: Option<async_native_tls::TlsAcceptor>,
) -> (smol::channel::Sender<()>, JoinHandle<()>) {
    let (stop, stopped) = smol::channel::bounded::<()>(1);
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || run(served, acceptor, stopped))
        .expect("spawning the fake server thread");
    (stop, thread)
}

/// The server thread: accepts on every listener until stopped; dropping the executor then
/// cancels every accept and connection task, which closes their sockets.
fn run(
    served: Vec<(std::net::TcpListener, Arc<Shared>)>,
    acceptor: Option<async_native_tls::TlsAcceptor>,
    stopped: smol::channel::Receiver<()>,
) {
    let executor = Arc::new(Executor::new());
    for (listener, shared) in served {
        let Ok(listener) = smol::net::TcpListener::try_from(listener) else {
            return;
        };
        // Weak: the executor owns the accept loops, never the other way round, so dropping
        // it drops them and their listeners.
        let spawner = Arc::downgrade(&executor);
        let accept_loop = accept(listener, shared, acceptor.clone(), spawner);
        executor.spawn(accept_loop).detach();
    }
    let until_stopped = async {
        let _ = stopped.recv().await;
    };
    smol::block_on(executor.run(until_stopped));
}

/// Accepts connections on `listener` and serves each as a task of `executor`.
async fn accept(
    listener: smol::net::TcpListener,
    shared: Arc<Shared>,
    acceptor: Option<async_native_tls::TlsAcceptor>,
    executor: std::sync::Weak<Executor<'static>>,
) {
    loop {
        let tcp = match listener.accept().await {
            Ok((tcp, _)) => tcp,
            Err(_) => {
                Timer::after(ACCEPT_RETRY_PAUSE).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let conn_id = shared.next_conn_id();
        let shared = shared.clone();
        let acceptor = acceptor.clone();
        let Some(executor) = executor.upgrade() else {
            return;
        };
        executor
            .spawn(async move {
                match acceptor {
                    Some(acceptor) => {
                        if let Ok(stream) = acceptor.accept(tcp).await {
                            conn::serve(stream, &shared, conn_id).await;
                        }
                    }
                    None => conn::serve(tcp, &shared, conn_id).await,
                }
            })
            .detach();
    }
}
