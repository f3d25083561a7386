//! The client over TLS: the config's CA is trusted (and only it), tls-server-name is used for
//! verification, and a PKCS#8 client identity is accepted. Certificates are generated here.

use openssl::asn1::Asn1Time;
use openssl::bn::BigNum;
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::x509::extension::{BasicConstraints, SubjectAlternativeName};
use openssl::x509::{X509, X509Builder, X509NameBuilder};
use skiff::kube::api::ConfigMap;
use skiff::kube::{Client, ClientIdentity, Config, Error};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::TcpListener;

fn key() -> PKey<Private> {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
    PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap()
}

/// A certificate for `cn`, signed by `issuer` (self-signed CA when `None`).
fn cert(cn: &str, key: &PKey<Private>, issuer: Option<(&X509, &PKey<Private>)>) -> X509 {
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", cn).unwrap();
    let name = name.build();
    let mut b = X509Builder::new().unwrap();
    b.set_version(2).unwrap();
    let serial = BigNum::from_u32(unique_serial())
        .unwrap()
        .to_asn1_integer()
        .unwrap();
    b.set_serial_number(&serial).unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_pubkey(key).unwrap();
    b.set_not_before(&Asn1Time::days_from_now(0).unwrap())
        .unwrap();
    b.set_not_after(&Asn1Time::days_from_now(2).unwrap())
        .unwrap();
    match issuer {
        None => {
            b.set_issuer_name(&name).unwrap();
            b.append_extension(BasicConstraints::new().critical().ca().build().unwrap())
                .unwrap();
            b.sign(key, MessageDigest::sha256()).unwrap();
        }
        Some((ca, ca_key)) => {
            b.set_issuer_name(ca.subject_name()).unwrap();
            let san = SubjectAlternativeName::new()
                .dns("kube.test")
                .ip("127.0.0.1")
                .build(&b.x509v3_context(Some(ca), None))
                .unwrap();
            b.append_extension(san).unwrap();
            b.sign(ca_key, MessageDigest::sha256()).unwrap();
        }
    }
    b.build()
}

fn unique_serial() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
}

struct Pki {
    ca_pem: Vec<u8>,
    server: native_tls::Identity,
    client: ClientIdentity,
}

fn pki() -> Pki {
    let ca_key = key();
    let ca = cert("test-ca", &ca_key, None);
    let server_key = key();
    let server = cert("kube.test", &server_key, Some((&ca, &ca_key)));
    let client_key = key();
    let client = cert("skiff", &client_key, Some((&ca, &ca_key)));
    Pki {
        ca_pem: ca.to_pem().unwrap(),
        server: native_tls::Identity::from_pkcs8(
            &server.to_pem().unwrap(),
            &server_key.private_key_to_pem_pkcs8().unwrap(),
        )
        .unwrap(),
        client: ClientIdentity {
            cert_pem: client.to_pem().unwrap(),
            key_pkcs8_pem: client_key.private_key_to_pem_pkcs8().unwrap(),
        },
    }
}

/// Serves one fixed ConfigMap reply per TLS connection; returns the port.
fn tls_server(identity: native_tls::Identity) -> u16 {
    let listener = smol::block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let port = listener.local_addr().unwrap().port();
    let acceptor =
        async_native_tls::TlsAcceptor::from(native_tls::TlsAcceptor::new(identity).unwrap());
    std::thread::spawn(move || {
        smol::block_on(async {
            while let Ok((tcp, _)) = listener.accept().await {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    continue;
                };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if tls.read(&mut byte).await.unwrap_or(0) == 0 {
                        break;
                    }
                    head.push(byte[0]);
                }
                let body = r#"{"metadata":{"name":"over-tls"}}"#;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(reply.as_bytes()).await;
                let _ = tls.flush().await;
            }
        })
    });
    port
}

fn config(url: &str, ca_pem: Vec<u8>) -> Config {
    let mut config = Config::new(url.parse().unwrap());
    config.tls.ca_pem = Some(ca_pem);
    config
}

#[test]
fn trusts_the_config_ca_verifies_the_ip_and_loads_a_client_identity() {
    let pki = pki();
    let port = tls_server(pki.server);
    let mut config = config(&format!("https://127.0.0.1:{port}"), pki.ca_pem);
    config.tls.identity = Some(pki.client);
    let cm: ConfigMap = smol::block_on(Client::new(config).unwrap().get(None, "x")).unwrap();
    assert_eq!(cm.metadata.name(), "over-tls");
}

#[test]
fn tls_server_name_is_used_for_verification() {
    let pki = pki();
    let port = tls_server(pki.server);
    let mut config = config(&format!("https://localhost:{port}"), pki.ca_pem);
    // "localhost" is not in the certificate; the configured name is.
    config.tls.server_name = Some("kube.test".into());
    let cm: ConfigMap = smol::block_on(Client::new(config).unwrap().get(None, "x")).unwrap();
    assert_eq!(cm.metadata.name(), "over-tls");
}

#[test]
fn a_ca_that_did_not_sign_the_server_is_a_transport_error_naming_the_ca() {
    let server_pki = pki();
    let other = pki();
    let port = tls_server(server_pki.server);
    let config = config(&format!("https://127.0.0.1:{port}"), other.ca_pem);
    let err = smol::block_on(Client::new(config).unwrap().get::<ConfigMap>(None, "x")).unwrap_err();
    assert!(
        matches!(&err, Error::Transport(m) if m.contains("certificate-authority")),
        "{err}"
    );
}
