//! The API client against servers that misbehave on purpose: the in-repo fake API server
//! (faults, per-connection accounting), scripted responders, TLS, proxies and credential
//! plugins. One test program, one module per concern; shared helpers in `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod api;
mod cancel;
mod exec_client_cert;
mod exec_plugin;
mod fake_server;
mod faults;
mod impersonation;
mod kubeconfig_diff;
mod kubeconfig_shapes;
mod lease_client;
mod lease_renewals;
mod proxy;
mod smoke;
mod tls;
mod watch;
