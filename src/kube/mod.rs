//! The hand-written Kubernetes API client.
//!
//! - [`config`]: where the server is and how to authenticate; loaded from a kubeconfig
//!   (`kubeconfig`, `credentials`, `tokenfile`, `exec` credential plugins) or the pod's service
//!   account (`incluster`); [`proxy`] picks the HTTP proxy, if any.
//! - [`connect`]: one [`Connector`] per client dials TCP (+TLS); nothing is shared between
//!   clients, so the lease client never waits on the main client's connections.
//! - [`ratelimit`]: the client-side [`TokenBucket`] (client-go semantics).
//! - [`client`]: the typed [`Client`] over its own connection `pool` and `request` path;
//!   [`stream`] decodes watch streams.
//! - [`error`]: one error enum; which errors are retryable is written on the type.
//! - [`api`]: the typed objects skiff reads and writes.
//! - [`params`]: LIST and WATCH query parameters; [`watch`]: decoded watch events.
//! - [`guard`]: the hook that lets the leader-election fence refuse writes.
//! - [`events`]: best-effort Kubernetes Events (leader changes, conflicts).
pub mod api;
pub mod client;
mod client_metrics;
pub mod config;
pub mod connect;
mod credentials;
pub mod error;
pub mod events;
mod exec;
pub mod guard;
mod incluster;
pub(crate) mod kubeconfig;
mod list_meter;
pub mod params;
mod pool;
pub mod proxy;
pub mod ratelimit;
mod reply_head;
pub mod reply_limits;
mod request;
pub mod stream;
#[cfg(test)]
mod test_cert;
#[cfg(test)]
mod test_dir;
mod tls_setup;
pub mod tls_stream;
mod tokenfile;
pub(crate) mod tunnel;
pub mod watch;

pub use client::Client;
pub use config::{
    Auth, ClientIdentity, Config, ConfigError, Credential, ExecPlugin, LoadOptions, ProxyConfig,
    TlsOptions, TokenFile,
};
pub use connect::{Connection, Connector};
pub use error::Error;
pub use guard::WriteGuard;
pub use params::{ListParams, WatchParams};
pub use ratelimit::TokenBucket;
pub use stream::WatchStream;
pub use watch::Event;
