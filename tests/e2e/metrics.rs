//! e2e: `/metrics` as the shipped manifests serve it: HTTPS, and only to callers whose token the
//! API server authenticates (TokenReview) and authorizes for `get /metrics`
//! (SubjectAccessReview), with the shipped `skiff-metrics-auth` and `skiff-metrics-reader`
//! roles. skiff runs as its ServiceAccount, so the shipped RBAC is what lets it ask.
//!
//! Why: a scraper's 401, 403 or 200 is decided by the real authenticator and RBAC authorizer,
//! and the reviews are POSTs, which the leader-election fence refuses on the main client: only
//! a standby answering a scrape shows that the reviews bypass the fence as they must.

use std::sync::Mutex;
use std::time::Duration;

use crate::support::control_plane::{ControlPlane, OPERATOR_NAMESPACE, require_e2e_binaries};
use crate::support::metrics_reader::service_account_token;
use crate::support::scrape::{Trust, scrape_https, sum_samples};
use crate::support::skiff::{Skiff, TempDir, eventually, free_port};
use openssl::asn1::Asn1Time;
use openssl::bn::BigNum;
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private};
use openssl::x509::extension::{BasicConstraints, SubjectAlternativeName};
use openssl::x509::{X509, X509NameBuilder};

/// Start-up, a review round trip and an election take well under this on a busy machine.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

/// The tests share the control plane's one `skiff-leader` Lease: one at a time.
static LEASE: Mutex<()> = Mutex::new(());

/// The Lease held by a replica that is not running, for an hour: every skiff started now is a
/// standby, whose main client is fenced.
fn hold_lease_elsewhere(cp: &ControlPlane) {
    cp.apply(&lease("another-replica", 3600));
}

fn lease(holder: &str, seconds: u32) -> String {
    serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "skiff-leader", "namespace": OPERATOR_NAMESPACE},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": seconds},
    })
    .to_string()
}

/// skiff as its ServiceAccount with leader election, serving `/metrics` securely on `port`.
fn start_skiff(cp: &ControlPlane, dir: &TempDir, port: u16, extra: &[&str]) -> Skiff {
    let metrics = format!("--metrics-bind-address=127.0.0.1:{port}");
    let mut args = vec!["--leader-elect", metrics.as_str()];
    args.extend_from_slice(extra);
    let log = dir.0.join("skiff.log");
    let skiff = Skiff::start(&cp.operator_kubeconfig(), log, &args);
    let serving = eventually(STEP_TIMEOUT, || {
        matches!(scrape_https(port, None, Trust::Any), Ok((401, _)))
    });
    assert!(serving, "no 401 over HTTPS; log:\n{}", skiff.logs());
    skiff
}

/// The metric names README's metrics table lists (its first column).
fn readme_metric_names() -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).expect("read README.md");
    let table = readme
        .split("| metric | labels |")
        .nth(1)
        .expect("README has a metrics table");
    let rows = table
        .lines()
        .skip(2)
        .take_while(|line| line.starts_with('|'));
    let first_cells = rows.filter_map(|row| row.split('|').nth(1));
    let names: Vec<String> = first_cells
        .flat_map(|cell| cell.split('`').skip(1).step_by(2).map(str::to_owned))
        .collect();
    assert!(names.len() >= 10, "too few names in README: {names:?}");
    names
}

/// POSTs of `client` counted in `metrics`.
fn posts(metrics: &str, client: &str) -> f64 {
    let labels = [("client", client), ("method", "POST")];
    sum_samples(metrics, "rest_client_requests_total", &labels)
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn only_a_reader_token_is_let_in_on_a_standby_and_on_the_leader() {
    require_e2e_binaries();
    let _one_at_a_time = LEASE.lock().unwrap_or_else(|e| e.into_inner());
    let cp = ControlPlane::installed();
    hold_lease_elsewhere(cp);
    let stranger = service_account_token(cp, "stranger", false);
    let reader = service_account_token(cp, "reader", true);
    let dir = TempDir::new("e2e-metrics");
    let port = free_port();
    let skiff = start_skiff(cp, &dir, port, &[]);
    let scrape = |token: Option<&str>| {
        scrape_https(port, token, Trust::Any)
            .unwrap_or_else(|e| panic!("{e}; log:\n{}", skiff.logs()))
    };

    let (status, body) = scrape(Some("not-a-token-the-api-server-issued"));
    assert_eq!(status, 401, "{body}");
    let (status, body) = scrape(Some(&stranger));
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("skiff-metrics-reader"), "{body}");
    let (status, standby) = scrape(Some(&reader));
    assert_eq!(status, 200, "{standby}");
    assert!(
        standby.contains("leader_election_master_status{name=\"skiff-leader\"} 0"),
        "a standby answered:\n{standby}"
    );
    // Three reviews of tokens (one denied at authentication) and two of access, all on the
    // main client; the lease client sent none. Answers are cached: asking again costs nothing.
    assert_eq!(posts(&standby, "main"), 5.0, "{standby}");
    assert_eq!(posts(&standby, "leader-election"), 0.0, "{standby}");
    for token in [
        Some("not-a-token-the-api-server-issued"),
        Some(stranger.as_str()),
    ] {
        assert_ne!(scrape(token).0, 200);
    }
    let (_, again) = scrape(Some(&reader));
    assert_eq!(
        posts(&again, "main"),
        5.0,
        "cached answers sent reviews:\n{again}"
    );

    // Released: skiff leads, runs its controllers, and the reader sees every README metric.
    cp.apply(&lease("", 1));
    let leads = eventually(STEP_TIMEOUT, || {
        let (_, text) = scrape(Some(&reader));
        text.contains("leader_election_master_status{name=\"skiff-leader\"} 1")
            && text.contains("skiff_lease_last_renew_timestamp_seconds")
    });
    assert!(leads, "skiff did not lead; log:\n{}", skiff.logs());
    let (status, leader) = scrape(Some(&reader));
    assert_eq!(status, 200, "{leader}");
    let missing: Vec<String> = readme_metric_names()
        .into_iter()
        .filter(|name| !leader.contains(&format!("# TYPE {name} ")))
        .collect();
    assert!(missing.is_empty(), "missing {missing:?} in:\n{leader}");
    let build_info = format!(
        "skiff_build_info{{version=\"{}\",",
        env!("CARGO_PKG_VERSION")
    );
    assert!(leader.contains(&build_info), "{leader}");
}

/// A CA and a `localhost` serving certificate it signed: `(ca_pem, cert_pem, key_pem)`, the key
/// in PKCS#1 form as `openssl genrsa` and older cert-manager versions write it.
fn ca_and_serving_cert() -> (String, Vec<u8>, Vec<u8>) {
    let ca_key = PKey::from_rsa(openssl::rsa::Rsa::generate(2048).expect("key")).expect("pkey");
    let ca = certificate("e2e-ca", &ca_key, None, &ca_key);
    let rsa = openssl::rsa::Rsa::generate(2048).expect("key");
    let key = PKey::from_rsa(rsa.clone()).expect("pkey");
    let cert = certificate("localhost", &key, Some(&ca), &ca_key);
    let ca_pem = String::from_utf8(ca.to_pem().expect("pem")).expect("utf-8");
    let key_pem = rsa.private_key_to_pem().expect("pem");
    (ca_pem, cert.to_pem().expect("pem"), key_pem)
}

fn certificate(
    cn: &str,
    key: &PKey<Private>,
    issuer: Option<&X509>,
    signer: &PKey<Private>,
) -> X509 {
    let mut name = X509NameBuilder::new().expect("name");
    name.append_entry_by_text("CN", cn).expect("CN");
    let name = name.build();
    let mut cert = X509::builder().expect("builder");
    cert.set_version(2).expect("version");
    let serial = BigNum::from_u32(if issuer.is_some() { 2 } else { 1 }).expect("serial");
    cert.set_serial_number(&serial.to_asn1_integer().expect("serial"))
        .expect("serial");
    cert.set_subject_name(&name).expect("subject");
    cert.set_issuer_name(issuer.map_or(&name, |ca| ca.subject_name()))
        .expect("issuer");
    cert.set_pubkey(key).expect("pubkey");
    cert.set_not_before(&Asn1Time::days_from_now(0).expect("time"))
        .expect("not before");
    cert.set_not_after(&Asn1Time::days_from_now(1).expect("time"))
        .expect("not after");
    if issuer.is_none() {
        let ca = BasicConstraints::new().critical().ca().build().expect("ca");
        cert.append_extension(ca).expect("ca");
    } else {
        let context = cert.x509v3_context(issuer.map(|ca| &**ca), None);
        let san = SubjectAlternativeName::new()
            .dns("localhost")
            .build(&context)
            .expect("san");
        cert.append_extension(san).expect("san");
    }
    cert.sign(signer, MessageDigest::sha256()).expect("sign");
    cert.build()
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn a_cert_dir_serves_a_certificate_scrapers_can_verify() {
    require_e2e_binaries();
    let _one_at_a_time = LEASE.lock().unwrap_or_else(|e| e.into_inner());
    let cp = ControlPlane::installed();
    hold_lease_elsewhere(cp);
    let reader = service_account_token(cp, "verifying-reader", true);
    let dir = TempDir::new("e2e-metrics-cert-dir");
    let certs = dir.0.join("certs");
    std::fs::create_dir_all(&certs).expect("create cert dir");
    let (ca, cert, key) = ca_and_serving_cert();
    std::fs::write(certs.join("tls.crt"), cert).expect("write tls.crt");
    std::fs::write(certs.join("tls.key"), key).expect("write tls.key");
    let port = free_port();
    let cert_dir = format!("--metrics-cert-dir={}", certs.display());
    let skiff = start_skiff(cp, &dir, port, &[&cert_dir]);

    let verified = scrape_https(port, Some(&reader), Trust::Ca(&ca));
    assert!(
        matches!(&verified, Ok((200, body)) if body.contains("skiff_build_info")),
        "{verified:?}; log:\n{}",
        skiff.logs()
    );
    let (other_ca, _, _) = ca_and_serving_cert();
    let refused = scrape_https(port, Some(&reader), Trust::Ca(&other_ca));
    assert!(
        refused.as_ref().is_err_and(|e| e.contains("TLS handshake")),
        "a certificate from another CA was accepted: {refused:?}"
    );
}
