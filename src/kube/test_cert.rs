//! A self-signed certificate for the unit tests of client certificates and keys.

use openssl::pkey::{PKey, Private};

/// A PEM certificate for `key`, CN `skiff-test`, valid for a day.
pub fn self_signed(key: &PKey<Private>) -> Vec<u8> {
    let mut name = openssl::x509::X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", "skiff-test").unwrap();
    let name = name.build();
    let mut cert = openssl::x509::X509Builder::new().unwrap();
    cert.set_version(2).unwrap();
    cert.set_subject_name(&name).unwrap();
    cert.set_issuer_name(&name).unwrap();
    cert.set_pubkey(key).unwrap();
    let not_before = openssl::asn1::Asn1Time::days_from_now(0).unwrap();
    let not_after = openssl::asn1::Asn1Time::days_from_now(1).unwrap();
    cert.set_not_before(&not_before).unwrap();
    cert.set_not_after(&not_after).unwrap();
    cert.sign(key, openssl::hash::MessageDigest::sha256())
        .unwrap();
    cert.build().to_pem().unwrap()
}
