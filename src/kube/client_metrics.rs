//! One client's request metrics (the names client-go's dashboards know; README, "Probes,
//! metrics and logs"), with the series looked up once per client.
//!
//! Every request observes the rate-limiter wait and its latency. Looking those series up in
//! the process-wide registry each time would take its lock, shared by both clients and
//! `/metrics`, on every request; the handles are fixed per client and verb, so they are
//! resolved when the client is built. Only the request counter, labelled by the status code
//! the reply brings, is still found per request.

use crate::metrics::{Histogram, counter, histogram};

/// The verbs a client sends: the `verb` label of the latency histogram.
const VERBS: [&str; 7] = [
    "get", "list", "watch", "create", "update", "patch", "delete",
];

pub(super) struct ClientMetrics {
    client: String,
    rate_limiter: Histogram,
    latency: [Histogram; VERBS.len()],
}

impl ClientMetrics {
    pub(super) fn new(client: &str) -> ClientMetrics {
        ClientMetrics {
            client: client.to_owned(),
            rate_limiter: histogram(
                "rest_client_rate_limiter_duration_seconds",
                "Time requests waited for the client-side rate limiter.",
                &[("client", client)],
            ),
            latency: VERBS.map(|verb| latency(client, verb)),
        }
    }

    pub(super) fn rate_limited(&self, seconds: f64) {
        self.rate_limiter.observe(seconds);
    }

    /// One finished request: `code` is the reply's status, `<error>` when none came.
    pub(super) fn request(&self, verb: &'static str, method: &str, code: &str, seconds: f64) {
        counter(
            "rest_client_requests_total",
            "API server requests by client, status code and method.",
            &[("client", &self.client), ("code", code), ("method", method)],
        )
        .inc();
        match VERBS.iter().position(|v| *v == verb) {
            Some(i) => self.latency[i].observe(seconds),
            None => latency(&self.client, verb).observe(seconds),
        }
    }
}

fn latency(client: &str, verb: &str) -> Histogram {
    histogram(
        "rest_client_request_duration_seconds",
        "API server request latency by client and verb.",
        &[("client", client), ("verb", verb)],
    )
}
