//! Entry points for the fuzzers in `fuzz/` (built with `--cfg fuzzing`, as cargo-fuzz does):
//! every parser that reads bytes from outside the process, each checking the bounds it
//! promises, so a broken bound is a crash the fuzzer reports.
//!
//! The same entry points run in the unit tests over every file in `fuzz/seeds/` and
//! `fuzz/regressions/` (where a fuzzer's finding is kept), so CI replays them on stable Rust.

use std::path::Path;

use smol::io::Cursor;

use crate::hooked::{Before, Hooked, ReadHook};
use crate::kind::certificates::only_certificates;
use crate::kube::api::ConfigMap;
use crate::kube::proxy::{self, ProxyConfig};
use crate::kube::reply_limits::{self, BodyLimit, MAX_OBJECT_BYTES, MAX_WATCH_LINE_BYTES};
use crate::kube::{WatchStream, kubeconfig, tunnel};
use crate::serve::{client_hello, head, limits};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use openssl::pkey::PKey;
use openssl::x509::X509;

/// Reads a reader's input at most this many bytes a read.
struct Pieces(usize);

impl ReadHook for Pieces {
    fn before_read(&mut self, buf: &mut [u8]) -> Before {
        Before::Read(buf.len().min(self.0))
    }
}

/// A reader over the input that hands out a few hundred bytes a read, the size varying with
/// the input's length, so reads end in different places.
fn owned(data: &[u8]) -> Hooked<Cursor<Vec<u8>>, Pieces> {
    Hooked::new(Cursor::new(data.to_vec()), Pieces(data.len() % 509 + 1))
}

/// An HTTP reply from the API server (or a proxy): head, chunks, body, read as one object and
/// as a LIST page.
pub fn reply(data: &[u8]) {
    for limit in [BodyLimit::Object, BodyLimit::List(500)] {
        let decoded = smol::block_on(reply_limits::decode_reply(owned(data), limit));
        if let Ok((_, body)) = decoded
            && limit == BodyLimit::Object
        {
            assert!(body.len() <= MAX_OBJECT_BYTES);
        }
    }
}

/// A watch body, event lines as the API server streams them.
pub fn watch(data: &[u8]) {
    let mut stream = WatchStream::<ConfigMap>::from_reader(owned(data));
    smol::block_on(async {
        let mut errors = 0;
        while let Some(event) = stream.next().await {
            errors += usize::from(event.is_err());
            assert!(stream.buffer_capacity() <= MAX_WATCH_LINE_BYTES + 1);
        }
        assert!(errors <= 1);
    });
}

/// An HTTP CONNECT reply from a proxy.
pub fn connect_reply(data: &[u8]) {
    let mut stream = owned(data);
    if let Ok(head) = smol::block_on(tunnel::read_head(&mut stream)) {
        assert!(head.len() <= tunnel::MAX_REPLY_HEAD);
        let _ = tunnel::accepted(&head);
    }
}

/// A request head sent to the probe or metrics port, parsed whole and read in pieces.
pub fn request_head(data: &[u8]) {
    match head::parse(data) {
        head::Parsed::Partial => assert!(data.len() < limits::MAX_HEAD_BYTES),
        head::Parsed::Complete(_, used) => assert!(used <= limits::MAX_HEAD_BYTES),
        head::Parsed::Rejected(rejection) => assert!(!rejection.why.is_empty()),
    }
    let mut stream = owned(data);
    let mut buf = Vec::new();
    let deadlines = head::Deadlines {
        idle_until: std::time::Instant::now() + std::time::Duration::from_secs(1),
        head_by: None,
    };
    let _ = smol::block_on(head::read(&mut stream, &mut buf, deadlines));
    assert!(buf.capacity() <= limits::MAX_HEAD_BYTES);
}

/// The first TLS record on the metrics port.
pub fn client_hello(data: &[u8]) {
    let mut stream = owned(data);
    let first = smol::block_on(client_hello::read_first(&mut stream));
    if let client_hello::FirstRecord::Hello(record) = first {
        assert!(record.len() <= limits::MAX_CLIENT_HELLO_BYTES + client_hello::RECORD_HEADER_BYTES);
    }
}

/// A kubeconfig (files it names are resolved under a directory that does not exist; devices
/// and kernel files named by absolute paths are trusted input, not explored here).
pub fn kubeconfig(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if ["/dev", "/proc", "/sys"]
        .iter()
        .any(|dir| text.contains(dir))
    {
        return;
    }
    let _ = kubeconfig::load_text(text, Path::new("/nonexistent-skiff-fuzz"));
}

/// A proxy URL, a `NO_PROXY` list and a server URL, separated by newlines.
pub fn proxy(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\n');
    let (proxy_url, no_proxy, server) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let _ = proxy::parse_proxy_url(proxy_url, "HTTPS_PROXY");
    let Ok(server) = http_types::Url::parse(server) else {
        return;
    };
    let env = |name: &str| match name {
        "HTTPS_PROXY" | "HTTP_PROXY" => Some(proxy_url.to_owned()),
        "NO_PROXY" => Some(no_proxy.to_owned()),
        _ => None,
    };
    let _ = proxy::resolve(&ProxyConfig::FromEnvironment, &server, &env);
    let _ = proxy::resolve(&ProxyConfig::Url(proxy_url.to_owned()), &server, &env);
}

/// A Secret's value a projection may publish as a ConfigMap's (`kind::certificates`). The
/// oracle, read apart from the check: what passes holds, between whitespace, only
/// `CERTIFICATE` blocks, each of which the openssl crate parses as exactly one certificate,
/// and no private key in any form.
pub fn certificates(data: &[u8]) {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    if only_certificates(data).is_err() {
        return;
    }
    let text = std::str::from_utf8(data).expect("what passes is text");
    let (mut rest, mut blocks) = (text, 0);
    while let Some(start) = rest.find(BEGIN) {
        assert!(
            rest[..start].trim_ascii().is_empty(),
            "text before block {blocks}"
        );
        let body = &rest[start + BEGIN.len()..];
        let end = body.find(END).expect("each block ends");
        let base64: String = (body[..end].chars())
            .filter(|c| !c.is_ascii_whitespace())
            .collect();
        let der = STANDARD.decode(base64).expect("a block is base64");
        let certificate = X509::from_der(&der).expect("a block is a certificate");
        assert_eq!(
            certificate.to_der().ok(),
            Some(der),
            "block {blocks} holds more"
        );
        rest = &body[end + END.len()..];
        blocks += 1;
    }
    assert!(
        rest.trim_ascii().is_empty() && blocks > 0,
        "text after the blocks"
    );
    assert!(
        PKey::private_key_from_pem(data).is_err(),
        "a private key passed"
    );
    assert!(
        PKey::private_key_from_der(data).is_err(),
        "a DER key passed"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fuzz target: one input, checked.
    pub type Target = fn(&[u8]);

    /// The targets by name, as `fuzz/fuzz_targets/` and `fuzz/seeds/` name them.
    pub const TARGETS: [(&str, Target); 8] = [
        ("reply", reply),
        ("watch", watch),
        ("connect_reply", connect_reply),
        ("request_head", request_head),
        ("client_hello", client_hello),
        ("kubeconfig", kubeconfig),
        ("proxy", proxy),
        ("certificates", certificates),
    ];

    /// Every seed and every kept finding of each target, run through it.
    #[test]
    fn seeds_and_regressions_pass_every_target() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
        let mut ran = 0;
        for (name, target) in TARGETS {
            for dir in ["seeds", "regressions"] {
                let Ok(entries) = std::fs::read_dir(root.join(dir).join(name)) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let data = std::fs::read(entry.path()).expect("read a seed");
                    target(&data);
                    ran += 1;
                }
            }
        }
        assert!(
            ran >= TARGETS.len(),
            "only {ran} inputs in fuzz/seeds and fuzz/regressions"
        );
    }
}
