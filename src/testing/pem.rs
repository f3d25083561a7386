//! Certificates, keys and keystores as cert-manager writes them into a `kubernetes.io/tls`
//! Secret, made once for the tests that publish, or refuse to publish, a Secret's values.

use openssl::asn1::Asn1Time;
use openssl::bn::BigNum;
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkcs12::Pkcs12;
use openssl::pkey::{PKey, Private};
use openssl::x509::extension::BasicConstraints;
use openssl::x509::{X509, X509NameBuilder};
use std::sync::OnceLock;

/// A CA and a certificate it issued, each with its key, in the forms a Secret may hold them.
pub struct Issued {
    /// The CA's certificate, PEM (`ca.crt`).
    pub ca: String,
    /// The issued certificate followed by the CA's, PEM (`tls.crt` of a chain).
    pub chain: String,
    /// The issued certificate's key, PEM PKCS#8 (`tls.key`).
    pub key: String,
    /// The same key in the traditional EC form (`-----BEGIN EC PRIVATE KEY-----`).
    pub ec_key: String,
    /// The same key, DER (cert-manager's `key.der`).
    pub key_der: Vec<u8>,
    /// The certificate and key in a PKCS#12 keystore (`keystore.p12`).
    pub keystore: Vec<u8>,
}

/// The one set of certificates the tests share (made at first use).
pub fn issued() -> &'static Issued {
    static ISSUED: OnceLock<Issued> = OnceLock::new();
    ISSUED.get_or_init(make)
}

fn make() -> Issued {
    let ca_key = key();
    let ca = certificate("skiff-test-ca", &ca_key, None, true);
    let leaf_key = key();
    let leaf = certificate("app.example.com", &leaf_key, Some((&ca, &ca_key)), false);
    let pem = |c: &X509| String::from_utf8(c.to_pem().expect("PEM")).expect("text");
    let keystore = Pkcs12::builder()
        .name("app")
        .pkey(&leaf_key)
        .cert(&leaf)
        .build2("changeit")
        .expect("a keystore");
    let ec = leaf_key.ec_key().expect("an EC key");
    Issued {
        ca: pem(&ca),
        chain: pem(&leaf) + &pem(&ca),
        key: text(leaf_key.private_key_to_pem_pkcs8().expect("PEM")),
        ec_key: text(ec.private_key_to_pem().expect("PEM")),
        key_der: leaf_key.private_key_to_der().expect("DER"),
        keystore: keystore.to_der().expect("DER"),
    }
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).expect("PEM is text")
}

fn key() -> PKey<Private> {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).expect("P-256");
    PKey::from_ec_key(EcKey::generate(&group).expect("a key")).expect("a key")
}

/// A certificate for `cn` with `key`, signed by `issuer` (self-signed without one).
fn certificate(
    cn: &str,
    key: &PKey<Private>,
    issuer: Option<(&X509, &PKey<Private>)>,
    ca: bool,
) -> X509 {
    let mut name = X509NameBuilder::new().expect("a name");
    name.append_entry_by_text("CN", cn).expect("CN");
    let name = name.build();
    let mut cert = X509::builder().expect("a builder");
    cert.set_version(2).expect("v3");
    let serial = BigNum::from_u32(u32::from(ca) + 2).expect("a serial");
    cert.set_serial_number(&serial.to_asn1_integer().expect("a serial"))
        .expect("a serial");
    cert.set_subject_name(&name).expect("subject");
    let issuer_name = issuer.map_or(&*name, |(c, _)| c.subject_name());
    cert.set_issuer_name(issuer_name).expect("issuer");
    cert.set_pubkey(key).expect("key");
    cert.set_not_before(&Asn1Time::days_from_now(0).expect("now"))
        .expect("not before");
    cert.set_not_after(&Asn1Time::days_from_now(90).expect("later"))
        .expect("not after");
    if ca {
        let constraints = BasicConstraints::new().critical().ca().build();
        cert.append_extension(constraints.expect("CA")).expect("CA");
    }
    let signer = issuer.map_or(key, |(_, k)| k);
    cert.sign(signer, MessageDigest::sha256()).expect("signed");
    cert.build()
}
