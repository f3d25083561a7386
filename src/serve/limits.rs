//! The bounds every connection to the probe and metrics servers lives within.
//!
//! skiff runs under a small memory limit, and anyone who can reach a port can open connections
//! and send bytes before anything is authenticated (the kubelet's probes carry no credentials;
//! `/metrics` checks a token only once a whole request has arrived). So each connection gets a
//! deadline for every phase and a ceiling on what it may make skiff hold, and each server a
//! ceiling on how many connections it keeps:
//!
//! - before its first request is complete, a connection holds at most [`MAX_HEAD_BYTES`] of
//!   request head (grown as bytes arrive) or [`MAX_CLIENT_HELLO_BYTES`] of TLS ClientHello, plus
//!   the last read's slack ([`READ_CHUNK_BYTES`]) and its task (under 1 KiB);
//! - the kernel queues at most [`SOCKET_BUFFER_BYTES`] (doubled by Linux for its bookkeeping) of
//!   unread input per socket, which counts against the container's memory limit too;
//! - a server keeps at most [`MAX_CONNECTIONS`] connections (fewer when the open-file limit is
//!   low, see [`connection_cap`]); the oldest connection still waiting for a request makes room
//!   for a new one, so a flood cannot lock the kubelet out.

use std::time::Duration;

/// Connections one server (probes or metrics) keeps open at once. The kubelet opens one per
/// probe and closes it; a scraper keeps one or two. See [`crate::serve::admission`].
pub const MAX_CONNECTIONS: usize = 128;
/// Connections the metrics server keeps when it serves TLS. An established TLS session costs
/// skiff about 38 KiB (OpenSSL's per-session state: 128 of them added 4.9 MiB of RssAnon), and
/// a scraper keeps one or two, so fewer suffice.
pub const MAX_TLS_CONNECTIONS: usize = 32;
/// From accept (or, on a kept-alive connection, from the first byte of the next request) to
/// the end of the request head, TLS handshake included: a slow sender (slowloris) is closed.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a kept-alive connection may stay silent between requests.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// From accept to an established TLS session on the metrics port.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long writing one response may take (a client that does not read is dropped).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest request line (`GET /path HTTP/1.1`); a longer one is answered 414.
pub const MAX_REQUEST_LINE_BYTES: usize = 1024;
/// Largest request head, request line and headers together; a larger one is answered 431.
/// A scraper's bearer token (a ServiceAccount JWT is about 1 KiB) fits several times over.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;
/// Most header fields in a request head; more are answered 431.
pub const MAX_HEADERS: usize = 32;
/// Largest TLS ClientHello record accepted; real ones are 0.2 to 2 KiB (with post-quantum key
/// shares). It is read whole before OpenSSL sees the connection, so a half-sent one costs
/// only its bytes.
pub const MAX_CLIENT_HELLO_BYTES: usize = 8 * 1024;
/// TLS handshakes computing at once (key exchange and signature). Each keeps its slot until
/// every other ready task has run once, so a flood of ClientHellos delays `/healthz` and the
/// controllers by at most this many handshake computations.
pub const HANDSHAKE_SLOTS: usize = 4;
/// Receive buffer asked of the kernel for each accepted socket (Linux doubles it): what a
/// sender can make the kernel queue before skiff reads it.
pub const SOCKET_BUFFER_BYTES: usize = 8 * 1024;
/// After refusing a request (4xx), how much more input is read and dropped, and for how long,
/// so the client sees the answer instead of a reset; then the connection is closed.
pub const DRAIN_BYTES: usize = 64 * 1024;
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(1);
/// Bytes read from a socket at a time while a request head or ClientHello arrives.
pub const READ_CHUNK_BYTES: usize = 1024;

/// File descriptors kept free for the API clients (the lease client, the main client and its
/// watches) whatever the servers hold.
pub const RESERVED_FDS: u64 = 256;

/// Connections each of the two servers may keep with `open_files` as the process's soft limit:
/// [`MAX_CONNECTIONS`], or less when that would eat into [`RESERVED_FDS`]. Never below 8.
pub fn connection_cap(open_files: u64) -> usize {
    let spare = open_files.saturating_sub(RESERVED_FDS) / 2;
    let spare = usize::try_from(spare).unwrap_or(usize::MAX);
    spare.clamp(8, MAX_CONNECTIONS)
}

/// The connection cap for the process's current open-file limit.
pub fn current_connection_cap() -> usize {
    connection_cap(crate::fd_limit::soft_limit().unwrap_or(1024))
}

/// The cap of a server as it serves now: [`MAX_TLS_CONNECTIONS`] at most over TLS.
pub fn server_connection_cap(tls: bool) -> usize {
    match tls {
        true => current_connection_cap().min(MAX_TLS_CONNECTIONS),
        false => current_connection_cap(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_the_reserve_to_the_clients() {
        assert_eq!(connection_cap(1_048_576), MAX_CONNECTIONS);
        assert_eq!(connection_cap(1024), MAX_CONNECTIONS);
        assert_eq!(connection_cap(356), 50);
        assert!(2 * connection_cap(356) as u64 + RESERVED_FDS <= 356);
        assert_eq!(connection_cap(100), 8, "a tiny limit still serves probes");
    }
}
