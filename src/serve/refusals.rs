//! What the probe and metrics servers refused, counted by reason, and how many connections each
//! holds: the figures that show a flood, or a limit that is too tight, on a dashboard.

use crate::metrics::{Counter, Gauge, counter, gauge};

const REFUSED: &str = "skiff_serve_refused_total";
const REFUSED_HELP: &str = "Connections and requests the probe and metrics servers refused or \
     closed early, by server and reason.";
const CONNECTIONS: &str = "skiff_serve_connections";
const CONNECTIONS_HELP: &str = "Connections the probe and metrics servers hold open, by server.";

/// Why a connection was closed early or a request refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The server was full and every connection was being answered: the new one was closed.
    OverCapacity,
    /// Closed to make room for a new connection: the oldest one still waiting for a request.
    Evicted,
    /// The request head did not arrive in time (or a kept-alive connection stayed silent).
    HeadTimeout,
    /// The request line or head was too long (414, 431).
    TooLarge,
    /// Not a request skiff serves: malformed, with a body, not GET or HEAD (400, 405, 413).
    BadRequest,
    /// The TLS handshake did not finish in time.
    HandshakeTimeout,
    /// The TLS handshake failed (not TLS, a bad ClientHello, no common cipher).
    HandshakeFailed,
    /// `/metrics` could not review a new token now (reviews in flight or their rate): 429.
    ReviewsBusy,
}

impl Refusal {
    /// Every reason, with its `reason` label.
    const ALL: [(Refusal, &'static str); 8] = [
        (Refusal::OverCapacity, "over_capacity"),
        (Refusal::Evicted, "evicted"),
        (Refusal::HeadTimeout, "head_timeout"),
        (Refusal::TooLarge, "too_large"),
        (Refusal::BadRequest, "bad_request"),
        (Refusal::HandshakeTimeout, "handshake_timeout"),
        (Refusal::HandshakeFailed, "handshake_failed"),
        (Refusal::ReviewsBusy, "reviews_busy"),
    ];
}

/// One server's counters, every series created at zero so dashboards see them from the start.
pub struct ServerStats {
    refused: [(Refusal, Counter); Refusal::ALL.len()],
    open: Gauge,
}

impl ServerStats {
    /// `server` is the label value: `probes` or `metrics`.
    pub fn new(server: &str) -> ServerStats {
        let refused = Refusal::ALL.map(|(reason, label)| {
            let labels = [("server", server), ("reason", label)];
            (reason, counter(REFUSED, REFUSED_HELP, &labels))
        });
        ServerStats {
            refused,
            open: gauge(CONNECTIONS, CONNECTIONS_HELP, &[("server", server)]),
        }
    }

    pub fn refused(&self, reason: Refusal) {
        if let Some((_, counter)) = self.refused.iter().find(|(r, _)| *r == reason) {
            counter.inc();
        }
    }

    pub fn set_open(&self, connections: usize) {
        self.open.set(connections as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl ServerStats {
        /// How many `reason` refusals were counted (for the servers' tests).
        pub(crate) fn count(&self, reason: Refusal) -> u64 {
            let counted = self.refused.iter().find(|(r, _)| *r == reason);
            counted.map_or(0, |(_, counter)| counter.get())
        }
    }
}
