//! Reading skiff's `/metrics` from a test: one plain HTTP GET and sums of matching samples.
//!
//! Why: metrics are how an operator sees what skiff's clients did (e.g. how many requests the
//! API server refused with 429), so the e2e suites check them the way a scraper would.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

/// The scrape's read and write timeout; skiff answers from memory.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);

/// The body of `GET http://127.0.0.1:<port>/metrics`; panics if skiff does not answer.
pub fn scrape(port: u16) -> String {
    let address = format!("127.0.0.1:{port}");
    let mut tcp = TcpStream::connect(&address).unwrap_or_else(|e| panic!("{address}: {e}"));
    let _ = tcp.set_read_timeout(Some(SCRAPE_TIMEOUT));
    let _ = tcp.set_write_timeout(Some(SCRAPE_TIMEOUT));
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    tcp.write_all(request.as_bytes())
        .unwrap_or_else(|e| panic!("send to {address}: {e}"));
    let mut raw = Vec::new();
    let _ = tcp.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    assert!(head.starts_with("HTTP/1.1 200"), "GET /metrics: {head}");
    body.to_owned()
}

/// The sum of the samples of `name` whose labels include every `name="value"` of `labels`.
pub fn sum_samples(metrics: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    metrics
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.rsplit_once(' '))
        .filter(|(series, _)| {
            let series_name = series.split('{').next().unwrap_or_default();
            series_name == name
                && labels
                    .iter()
                    .all(|(k, v)| series.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|(_, value)| value.trim().parse::<f64>().ok())
        .sum()
}
