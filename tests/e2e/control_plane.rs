//! e2e: the control plane harness itself: identities, trust, and cleanup on drop.
//!
//! Why: every e2e suite relies on the admin and operator kubeconfigs being who they claim, and
//! on a stopped control plane leaving no process and no temp dir behind.

use crate::support::control_plane::{
    ControlPlane, OPERATOR_NAMESPACE, OPERATOR_USER, require_e2e_binaries,
};
use crate::support::kubectl::https_get;

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn kubeconfigs_authenticate_as_admin_and_as_the_operator() {
    require_e2e_binaries();
    let cp = ControlPlane::shared();
    let whoami = ["auth", "whoami", "-o", "jsonpath={.status.userInfo}"];
    let admin = cp.kubectl_ok(&whoami);
    assert!(admin.contains(r#""username":"admin""#), "{admin}");
    assert!(admin.contains("system:masters"), "{admin}");
    let operator = crate::support::kubectl::succeeded(&whoami, cp.kubectl_as_operator(&whoami));
    assert!(
        operator.contains(&format!(r#""username":"{OPERATOR_USER}""#)),
        "{operator}"
    );
    assert!(
        operator.contains(&format!("system:serviceaccounts:{OPERATOR_NAMESPACE}")),
        "{operator}"
    );
    let namespace = ["config", "view", "--minify", "-o", "jsonpath={..namespace}"];
    let operator_ns =
        crate::support::kubectl::succeeded(&namespace, cp.kubectl_as_operator(&namespace));
    assert_eq!(operator_ns, OPERATOR_NAMESPACE);
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn the_api_server_reports_the_pinned_kubernetes_version() {
    require_e2e_binaries();
    let cp = ControlPlane::shared();
    let reply = cp.raw_get("/version", cp.admin_token());
    assert_eq!(reply.status, 200, "{}", reply.body);
    let version: serde_json::Value = serde_json::from_str(&reply.body).expect("version JSON");
    assert_eq!(version["gitVersion"], "v1.36.3", "{}", reply.body);
    assert_eq!(
        (version["major"].as_str(), version["minor"].as_str()),
        (Some("1"), Some("36"))
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn raw_requests_trust_only_the_serving_ca_and_check_the_token() {
    require_e2e_binaries();
    let cp = ControlPlane::shared();
    assert_eq!(cp.raw_get("/version", cp.admin_token()).status, 200);
    assert_eq!(cp.raw_get("/api/v1/namespaces", "not-a-token").status, 401);
    let other_ca = openssl_self_signed_pem();
    let untrusted = https_get(cp.url(), &other_ca, "/version", Some(cp.admin_token()));
    assert!(
        untrusted.is_err(),
        "TLS accepted a server the CA did not sign"
    );
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn own_control_plane_stops_and_removes_its_dir_on_drop() {
    require_e2e_binaries();
    let cp = ControlPlane::start();
    let (url, ca, token, dir) = (
        cp.url().to_owned(),
        cp.ca_pem().to_owned(),
        cp.admin_token().to_owned(),
        cp.dir().to_owned(),
    );
    assert!(cp.admin_kubeconfig().is_file() && cp.operator_kubeconfig().is_file());
    assert_eq!(cp.raw_get("/readyz", &token).status, 200);
    drop(cp);
    assert!(
        https_get(&url, &ca, "/readyz", Some(&token)).is_err(),
        "{url} still answers"
    );
    assert!(!dir.exists(), "{} left behind", dir.display());
}

/// A CA that signed nothing the server presents.
fn openssl_self_signed_pem() -> String {
    use openssl::{asn1::Asn1Time, hash::MessageDigest, pkey::PKey, rsa::Rsa, x509};
    let key = PKey::from_rsa(Rsa::generate(2048).expect("RSA key")).expect("key");
    let mut name = x509::X509NameBuilder::new().expect("name");
    name.append_entry_by_text("CN", "not-the-cluster-ca")
        .expect("CN");
    let name = name.build();
    let mut cert = x509::X509Builder::new().expect("builder");
    cert.set_subject_name(&name).expect("subject");
    cert.set_issuer_name(&name).expect("issuer");
    cert.set_pubkey(&key).expect("pubkey");
    cert.set_not_before(&Asn1Time::days_from_now(0).expect("time"))
        .expect("not before");
    cert.set_not_after(&Asn1Time::days_from_now(1).expect("time"))
        .expect("not after");
    cert.sign(&key, MessageDigest::sha256()).expect("sign");
    String::from_utf8(cert.build().to_pem().expect("pem")).expect("PEM is ASCII")
}
