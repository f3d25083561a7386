//! The metrics server's TLS identity: `tls.crt` and `tls.key` from `--metrics-cert-dir` (the
//! file names cert-manager and kubebuilder use), or a self-signed certificate made at start.
//!
//! A self-signed certificate encrypts scrapes but proves nothing about skiff, so scrapers
//! configured for it skip verification (as kubebuilder's default ServiceMonitor does); mount a
//! real certificate to have them verify it. Problems are found here, at start, naming the file.
//!
//! The context is OpenSSL's, shared by every connection, set for Mozilla's intermediate
//! profile (TLS 1.2 and 1.3) and for a small cost per connection before it is authenticated:
//! `RELEASE_BUFFERS` (an idle connection gives its 16 KiB read and write buffers back), no
//! server-side session cache (OpenSSL's default keeps up to 20,480 sessions, which a client
//! completing handshakes in a loop would fill) and no session tickets.

use std::path::Path;

use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::error::ErrorStack;
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::ssl::{Ssl, SslAcceptor, SslMethod, SslMode, SslOptions, SslSessionCacheMode};
use openssl::x509::extension::{BasicConstraints, ExtendedKeyUsage, SubjectAlternativeName};
use openssl::x509::{X509, X509NameBuilder};

use crate::kube::tls_setup::present;

/// Certificate file in `--metrics-cert-dir` (kubebuilder's `metrics-cert-name` default).
pub const CERT_FILE: &str = "tls.crt";
/// Key file in `--metrics-cert-dir` (kubebuilder's `metrics-cert-key` default).
pub const KEY_FILE: &str = "tls.key";
/// Validity of the self-signed certificate; a replica that runs longer keeps serving with it
/// (scrapers skip verification of a self-signed certificate anyway).
const SELF_SIGNED_DAYS: u32 = 365;

/// The metrics server's TLS context; cheap to clone.
#[derive(Clone)]
pub struct MetricsTls {
    acceptor: SslAcceptor,
}

impl MetricsTls {
    /// The state of one new server-side connection.
    pub fn ssl(&self) -> Result<Ssl, ErrorStack> {
        Ssl::new(self.acceptor.context())
    }
}

/// The TLS context for `--metrics-cert-dir`, or for a fresh self-signed certificate.
pub fn acceptor(cert_dir: Option<&Path>) -> Result<MetricsTls, String> {
    let (cert_pem, key_pem) = match cert_dir {
        Some(dir) => read_pair(dir)?,
        None => self_signed().map_err(|e| format!("cannot make a self-signed certificate: {e}"))?,
    };
    let mut builder = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls_server())
        .map_err(|e| format!("cannot set up TLS for /metrics: {e}"))?;
    present(&mut builder, &cert_pem, &key_pem)
        .map_err(|e| format!("the metrics certificate and key do not form a TLS identity: {e}"))?;
    builder.set_mode(SslMode::RELEASE_BUFFERS);
    builder.set_session_cache_mode(SslSessionCacheMode::OFF);
    builder.set_options(SslOptions::NO_TICKET);
    builder
        .set_num_tickets(0)
        .map_err(|e| format!("cannot set up TLS for /metrics: {e}"))?;
    Ok(MetricsTls {
        acceptor: builder.build(),
    })
}

/// The certificate chain and the key (PKCS#8, PKCS#1 or EC), as PEM, from `dir`.
fn read_pair(dir: &Path) -> Result<(Vec<u8>, Vec<u8>), String> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path).map_err(|e| {
            format!(
                "--metrics-cert-dir: cannot read {}: {e}; the directory must hold {CERT_FILE} \
                 and {KEY_FILE} (as a kubernetes.io/tls Secret mounted there does)",
                path.display()
            )
        })
    };
    let cert = read(CERT_FILE)?;
    X509::stack_from_pem(&cert)
        .ok()
        .filter(|certs| !certs.is_empty())
        .ok_or_else(|| {
            format!(
                "--metrics-cert-dir: {} holds no PEM certificate",
                dir.join(CERT_FILE).display()
            )
        })?;
    let key = read(KEY_FILE)?;
    PKey::private_key_from_pem(&key).map_err(|_| {
        format!(
            "--metrics-cert-dir: {} holds no PEM private key (PKCS#8, PKCS#1 or EC)",
            dir.join(KEY_FILE).display()
        )
    })?;
    Ok((cert, key))
}

/// A P-256 key and a certificate for it, signed by itself: `CN=skiff`, valid for the names a
/// scraper may use (`localhost`, the loopback addresses, the pod's hostname).
pub fn self_signed() -> Result<(Vec<u8>, Vec<u8>), ErrorStack> {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
    let key = PKey::from_ec_key(EcKey::generate(&group)?)?;
    let cert = certificate_for(&key)?;
    Ok((cert.to_pem()?, key.private_key_to_pem_pkcs8()?))
}

fn certificate_for(key: &PKey<Private>) -> Result<X509, ErrorStack> {
    let mut name = X509NameBuilder::new()?;
    name.append_entry_by_nid(Nid::COMMONNAME, "skiff")?;
    let name = name.build();
    let mut serial = BigNum::new()?;
    serial.rand(127, MsbOption::MAYBE_ZERO, false)?;
    let mut cert = X509::builder()?;
    cert.set_version(2)?;
    let serial = serial.to_asn1_integer()?;
    cert.set_serial_number(&serial)?;
    cert.set_subject_name(&name)?;
    cert.set_issuer_name(&name)?;
    cert.set_pubkey(key)?;
    let (not_before, not_after) = (
        Asn1Time::days_from_now(0)?,
        Asn1Time::days_from_now(SELF_SIGNED_DAYS)?,
    );
    cert.set_not_before(&not_before)?;
    cert.set_not_after(&not_after)?;
    let mut names = SubjectAlternativeName::new();
    names.dns("localhost").ip("127.0.0.1").ip("::1");
    if let Some(host) = hostname() {
        names.dns(&host);
    }
    let names = names.build(&cert.x509v3_context(None, None))?;
    cert.append_extension(names)?;
    cert.append_extension(BasicConstraints::new().critical().build()?)?;
    cert.append_extension(ExtendedKeyUsage::new().server_auth().build()?)?;
    cert.sign(key, MessageDigest::sha256())?;
    Ok(cert.build())
}

/// The pod's hostname (its name), if it is a usable DNS name.
fn hostname() -> Option<String> {
    let name = std::env::var("HOSTNAME").ok()?;
    let valid = !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    valid.then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("skiff-tls-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        dir
    }

    #[test]
    fn a_self_signed_certificate_names_localhost_and_serves() {
        let (cert, _key) = self_signed().expect("generated");
        let cert = X509::from_pem(&cert).expect("PEM");
        let names = cert.subject_alt_names().expect("SANs");
        assert!(names.iter().any(|n| n.dnsname() == Some("localhost")));
        assert!(acceptor(None).is_ok());
    }

    #[test]
    fn a_cert_dir_with_a_pkcs1_key_is_accepted() {
        let dir = temp_dir("pkcs1");
        let rsa = openssl::rsa::Rsa::generate(2048).expect("rsa");
        let key = PKey::from_rsa(rsa.clone()).expect("key");
        let cert = certificate_for(&key).expect("cert");
        std::fs::write(dir.join(CERT_FILE), cert.to_pem().expect("pem")).expect("write");
        std::fs::write(dir.join(KEY_FILE), rsa.private_key_to_pem().expect("pem")).expect("write");
        let result = acceptor(Some(&dir));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(result.is_ok(), "{:?}", result.err());
    }

    #[test]
    fn a_missing_or_bad_file_is_named_with_the_flag() {
        let dir = temp_dir("bad");
        let err = acceptor(Some(&dir)).err().expect("refused");
        assert!(
            err.contains("--metrics-cert-dir") && err.contains(CERT_FILE),
            "{err}"
        );
        let (cert, _) = self_signed().expect("generated");
        std::fs::write(dir.join(CERT_FILE), cert).expect("write");
        std::fs::write(dir.join(KEY_FILE), "not a key").expect("write");
        let err = acceptor(Some(&dir)).err().expect("refused");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            err.contains(KEY_FILE) && err.contains("no PEM private key"),
            "{err}"
        );
    }
}
