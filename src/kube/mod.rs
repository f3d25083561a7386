//! The hand-written Kubernetes API client.
//!
//! - [`config`]: where the server is and how to authenticate. Layered one way, bottom up:
//!   [`config_error`] and `client_identity`; the credential sources `tokenfile` and `exec`
//!   (credential plugins); [`config`] itself; `kubeconfig_file` (the file format) and
//!   `credentials` (its entries as TLS, proxy and auth settings); the loaders `kubeconfig` and
//!   `incluster` (the pod's service account); and [`load`], which picks one in kubectl's order.
//!   [`proxy`] picks the proxy (HTTP CONNECT or SOCKS5), if any; [`impersonate`] the user every request acts as.
//! - [`connect`]: one [`Connector`] per client dials TCP (+TLS); nothing is shared between
//!   clients, so the lease client never waits on the main client's connections.
//! - [`ratelimit`]: the client-side [`TokenBucket`] (client-go semantics).
//! - [`client`]: the typed [`Client`] over its own connection `pool` and `request` path;
//!   [`stream`] decodes watch streams.
//! - [`error`]: one error enum; which errors are retryable is written on the type.
//! - [`api`]: the typed objects skiff reads and writes.
//! - [`params`]: LIST and WATCH query parameters; [`watch`]: decoded watch events.
//! - [`guard`]: the hook that lets the leader-election fence refuse writes.
//! - [`liveness`]: suspicion of dead connections shared by both clients, and how long each
//!   watch has heard nothing; `watch_body` puts a deadline on a watch's silence, `hedge`
//!   resends a lease request on a new connection, `inflight` resets writes when the fence
//!   closes.
//! - [`events`]: best-effort Kubernetes Events (leader changes, conflicts).
pub mod api;
pub mod body;
pub mod client;
mod client_identity;
mod client_metrics;
pub mod config;
pub mod config_error;
pub mod connect;
mod credentials;
pub mod error;
pub mod events;
mod exec;
pub mod guard;
mod hedge;
pub mod impersonate;
mod incluster;
mod inflight;
pub(crate) mod kubeconfig;
mod kubeconfig_file;
mod kubeconfig_read;
mod list_meter;
pub mod liveness;
pub mod load;
pub mod params;
mod pool;
pub mod proxy;
pub mod ratelimit;
mod reply_head;
pub mod reply_limits;
mod reply_sizes;
mod request;
mod socks;
pub mod stream;
#[cfg(test)]
mod test_cert;
#[cfg(test)]
mod test_dir;
mod tls_buffers;
pub(crate) mod tls_setup;
pub mod tls_stream;
mod tokenfile;
mod transport;
pub(crate) mod tunnel;
pub mod watch;
mod watch_body;
pub mod yaml;

pub use body::Pieces;
pub use client::{Client, METADATA_ONLY, PatchKind, Written};
pub use config::{Auth, ClientIdentity, Config, ProxyConfig};
pub use error::Error;
pub use guard::WriteGuard;
pub use liveness::Liveness;
pub use load::{LoadOptions, load_kubeconfig_files};
pub use params::{ListParams, Selectors, WatchParams};
pub use ratelimit::TokenBucket;
pub use stream::WatchStream;
pub use watch::WatchEvent;
