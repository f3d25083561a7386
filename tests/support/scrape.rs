//! Reading skiff's `/metrics` from a test: a plain HTTP GET, an HTTPS GET with a bearer token
//! (as a scraper of the secure endpoint), and sums of matching samples.
//!
//! Why: metrics are how an operator sees what skiff's clients did (e.g. how many requests the
//! API server refused with 429), so the e2e suites check them the way a scraper would.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};
use openssl::x509::X509;

/// The scrape's read and write timeout; skiff answers from memory.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);
/// A secure scrape may wait for a TokenReview and a SubjectAccessReview on a busy machine.
const SECURE_SCRAPE_TIMEOUT: Duration = Duration::from_secs(30);

/// The body of `GET http://127.0.0.1:<port>/metrics`; panics if skiff does not answer.
pub fn scrape(port: u16) -> String {
    let address = format!("127.0.0.1:{port}");
    let mut tcp = TcpStream::connect(&address).unwrap_or_else(|e| panic!("{address}: {e}"));
    let _ = tcp.set_read_timeout(Some(SCRAPE_TIMEOUT));
    let _ = tcp.set_write_timeout(Some(SCRAPE_TIMEOUT));
    tcp.write_all(request(&address, None).as_bytes())
        .unwrap_or_else(|e| panic!("send to {address}: {e}"));
    let mut raw = Vec::new();
    let _ = tcp.read_to_end(&mut raw);
    let (status, body) = split_response(&raw);
    assert_eq!(status, Some(200), "GET /metrics: {body}");
    body
}

/// Which server certificate a secure scrape accepts.
pub enum Trust<'a> {
    /// Any: skiff's self-signed certificate proves nothing (scrapers skip verification).
    Any,
    /// Only one signed by this CA (PEM), for the name `localhost`.
    Ca(&'a str),
}

/// `GET https://127.0.0.1:<port>/metrics` with `Authorization: Bearer <token>` when given:
/// `(status, body)`, or why no HTTP answer came (connection or TLS handshake failed).
pub fn scrape_https(port: u16, token: Option<&str>, trust: Trust) -> Result<(u16, String), String> {
    let address = format!("127.0.0.1:{port}");
    let mut connector =
        SslConnector::builder(SslMethod::tls_client()).map_err(|e| e.to_string())?;
    match trust {
        Trust::Any => connector.set_verify(SslVerifyMode::NONE),
        Trust::Ca(pem) => {
            let ca = X509::from_pem(pem.as_bytes()).map_err(|e| e.to_string())?;
            connector
                .cert_store_mut()
                .add_cert(ca)
                .map_err(|e| e.to_string())?;
        }
    }
    let tcp = TcpStream::connect(&address).map_err(|e| format!("{address}: {e}"))?;
    let _ = tcp.set_read_timeout(Some(SECURE_SCRAPE_TIMEOUT));
    let _ = tcp.set_write_timeout(Some(SECURE_SCRAPE_TIMEOUT));
    let mut tls = connector
        .build()
        .connect("localhost", tcp)
        .map_err(|e| format!("TLS handshake with {address}: {e}"))?;
    tls.write_all(request(&address, token).as_bytes())
        .map_err(|e| format!("send to {address}: {e}"))?;
    let mut raw = Vec::new();
    // skiff closes after the response; an unclean TLS close after it is no error here.
    let _ = tls.read_to_end(&mut raw);
    match split_response(&raw) {
        (Some(status), body) => Ok((status, body)),
        (None, _) => Err(format!("no HTTP response from {address}")),
    }
}

fn request(address: &str, token: Option<&str>) -> String {
    let authorization = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    format!("GET /metrics HTTP/1.1\r\nHost: {address}\r\n{authorization}Connection: close\r\n\r\n")
}

/// The status code (if a response head came) and the body (content-length bodies only, as
/// skiff sends).
fn split_response(raw: &[u8]) -> (Option<u16>, String) {
    let text = String::from_utf8_lossy(raw).into_owned();
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return (None, text);
    };
    let status = head
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok());
    (status, body.to_owned())
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
