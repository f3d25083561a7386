//! Throwaway TLS identity for the fake server: a CA and a server certificate for 127.0.0.1 and
//! `localhost`, generated with openssl at start so no key material lives in the repository.

use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::error::ErrorStack;
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkcs12::Pkcs12;
use openssl::pkey::{PKey, Private};
use openssl::stack::Stack;
use openssl::x509::extension::{
    BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName, SubjectKeyIdentifier,
};
use openssl::x509::{X509, X509NameBuilder};

/// Password of the in-memory PKCS#12 bundle; it never leaves the process.
pub const PKCS12_PASSWORD: &str = "fake-apiserver";
/// Validity of the generated certificates; tests run for minutes, not days.
const VALIDITY_DAYS: u32 = 2;

/// The generated material: the CA certificate (PEM) a client trusts, and the server identity.
pub struct TlsMaterial {
    pub ca_pem: Vec<u8>,
    pub server_pkcs12: Vec<u8>,
}

/// Generates a fresh CA and a server certificate signed by it.
pub fn generate() -> Result<TlsMaterial, ErrorStack> {
    let ca_key = new_key()?;
    let ca_cert = ca_certificate(&ca_key)?;
    let server_key = new_key()?;
    let server_cert = server_certificate(&server_key, &ca_cert, &ca_key)?;
    let mut chain = Stack::new()?;
    chain.push(ca_cert.clone())?;
    let bundle = Pkcs12::builder()
        .name("fake-apiserver")
        .pkey(&server_key)
        .cert(&server_cert)
        .ca(chain)
        .build2(PKCS12_PASSWORD)?;
    Ok(TlsMaterial {
        ca_pem: ca_cert.to_pem()?,
        server_pkcs12: bundle.to_der()?,
    })
}

/// A plain self-signed certificate for `key`, named `common_name` (client identities and
/// kubeconfig fixtures in tests; no extensions).
pub fn self_signed(key: &PKey<Private>, common_name: &str) -> Result<X509, ErrorStack> {
    let mut builder = base_builder(key, common_name)?;
    let issuer = name(common_name)?;
    builder.set_issuer_name(&issuer)?;
    builder.sign(key, MessageDigest::sha256())?;
    Ok(builder.build())
}

fn new_key() -> Result<PKey<Private>, ErrorStack> {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
    PKey::from_ec_key(EcKey::generate(&group)?)
}

fn random_serial() -> Result<openssl::asn1::Asn1Integer, ErrorStack> {
    let mut serial = BigNum::new()?;
    serial.rand(127, MsbOption::MAYBE_ZERO, false)?;
    serial.to_asn1_integer()
}

fn name(common_name: &str) -> Result<openssl::x509::X509Name, ErrorStack> {
    let mut builder = X509NameBuilder::new()?;
    builder.append_entry_by_nid(Nid::COMMONNAME, common_name)?;
    Ok(builder.build())
}

fn base_builder(
    key: &PKey<Private>,
    subject: &str,
) -> Result<openssl::x509::X509Builder, ErrorStack> {
    let mut builder = X509::builder()?;
    builder.set_version(2)?;
    let serial = random_serial()?;
    builder.set_serial_number(&serial)?;
    let subject = name(subject)?;
    builder.set_subject_name(&subject)?;
    builder.set_pubkey(key)?;
    let not_before = Asn1Time::days_from_now(0)?;
    builder.set_not_before(&not_before)?;
    let not_after = Asn1Time::days_from_now(VALIDITY_DAYS)?;
    builder.set_not_after(&not_after)?;
    Ok(builder)
}

fn ca_certificate(key: &PKey<Private>) -> Result<X509, ErrorStack> {
    let mut builder = base_builder(key, "fake-apiserver-ca")?;
    let issuer = name("fake-apiserver-ca")?;
    builder.set_issuer_name(&issuer)?;
    builder.append_extension(BasicConstraints::new().critical().ca().build()?)?;
    builder.append_extension(
        KeyUsage::new()
            .critical()
            .key_cert_sign()
            .crl_sign()
            .build()?,
    )?;
    let key_id = SubjectKeyIdentifier::new().build(&builder.x509v3_context(None, None))?;
    builder.append_extension(key_id)?;
    builder.sign(key, MessageDigest::sha256())?;
    Ok(builder.build())
}

fn server_certificate(
    key: &PKey<Private>,
    ca_cert: &X509,
    ca_key: &PKey<Private>,
) -> Result<X509, ErrorStack> {
    let mut builder = base_builder(key, "127.0.0.1")?;
    builder.set_issuer_name(ca_cert.subject_name())?;
    builder.append_extension(BasicConstraints::new().build()?)?;
    builder.append_extension(
        KeyUsage::new()
            .critical()
            .digital_signature()
            .key_encipherment()
            .build()?,
    )?;
    builder.append_extension(ExtendedKeyUsage::new().server_auth().build()?)?;
    let san = SubjectAlternativeName::new()
        .ip("127.0.0.1")
        .dns("localhost")
        .build(&builder.x509v3_context(Some(ca_cert), None))?;
    builder.append_extension(san)?;
    builder.sign(ca_key, MessageDigest::sha256())?;
    Ok(builder.build())
}
