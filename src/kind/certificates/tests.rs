use super::*;
use crate::testing::assert_mentions;
use crate::testing::pem::issued;

fn refused(value: &[u8]) -> String {
    only_certificates(value).expect_err("refused")
}

#[test]
fn a_certificate_and_a_chain_pass_as_written_or_reindented() {
    let pem = issued();
    assert_eq!(only_certificates(pem.ca.as_bytes()), Ok(()));
    assert_eq!(only_certificates(pem.chain.as_bytes()), Ok(()));
    let crlf = pem.chain.replace('\n', "\r\n");
    assert_eq!(
        only_certificates(format!("\n{crlf}\n\n").as_bytes()),
        Ok(())
    );
    let body: String = pem.ca.lines().filter(|l| !l.starts_with("-----")).collect();
    let one_line = format!("-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----");
    assert_eq!(only_certificates(one_line.as_bytes()), Ok(()));
    let no_breaks = pem.ca.replace('\n', "");
    assert_mentions(
        &refused(no_breaks.as_bytes()),
        &["not all certificates OpenSSL reads"],
    );
}

#[test]
fn a_private_key_in_any_pem_form_is_refused_naming_its_type() {
    let pem = issued();
    assert_mentions(&refused(pem.key.as_bytes()), &["PRIVATE KEY", "not only"]);
    assert_mentions(&refused(pem.ec_key.as_bytes()), &["EC PRIVATE KEY"]);
    let combined = format!("{}{}", pem.chain, pem.key);
    assert_mentions(&refused(combined.as_bytes()), &["PRIVATE KEY"]);
    let hidden = pem.key.replace("PRIVATE KEY", "CERTIFICATE");
    assert_mentions(&refused(hidden.as_bytes()), &["not all certificates"]);
}

#[test]
fn binary_values_are_refused_as_not_text() {
    let pem = issued();
    let jks = [0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2];
    for binary in [&pem.key_der[..], &pem.keystore[..], &jks[..]] {
        assert_mentions(&refused(binary), &["not text", "DER key or a keystore"]);
    }
}

#[test]
fn text_beside_the_certificates_is_refused() {
    let pem = issued();
    assert_mentions(&refused(b"hunter2"), &["no PEM certificate"]);
    assert_mentions(&refused(b""), &["no PEM certificate"]);
    for beside in [
        format!("password: hunter2\n{}", pem.ca),
        format!("{}# a comment\n", pem.ca),
    ] {
        assert_mentions(&refused(beside.as_bytes()), &["more than its certificates"]);
    }
    let glued = pem.ca.replace("-----BEGIN", "x-----BEGIN");
    assert_mentions(
        &refused(glued.as_bytes()),
        &["not all certificates OpenSSL reads"],
    );
}

#[test]
fn a_block_holding_more_than_one_certificate_is_refused() {
    let pem = issued();
    let der = X509::from_pem(pem.ca.as_bytes())
        .expect("a certificate")
        .to_der()
        .expect("DER");
    let mut padded = der.clone();
    padded.extend_from_slice(b"trailing");
    let block = |bytes: &[u8]| {
        use base64::Engine as _;
        let body = base64::engine::general_purpose::STANDARD.encode(bytes);
        format!("-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n")
    };
    assert_eq!(only_certificates(block(&der).as_bytes()), Ok(()));
    assert_mentions(
        &refused(block(&padded).as_bytes()),
        &["more than its certificates"],
    );
    let old_label = block(&der).replace("CERTIFICATE", "X509 CERTIFICATE");
    assert_mentions(&refused(old_label.as_bytes()), &["X509 CERTIFICATE"]);
}

/// Mutated certificates, chains and keys: what passes is certificates alone, block by block,
/// as the fuzz target's oracle reads it (`fuzzing::certificates`).
#[test]
fn property_what_passes_mutated_is_certificates_alone() {
    let pem = issued();
    let combined = format!("{}{}", pem.chain, pem.key);
    let seeds = [pem.ca.as_str(), &pem.chain, &pem.key, &combined];
    crate::property::check("certificate mutations", |random| {
        let seed = seeds[random.below(seeds.len())].as_bytes();
        crate::fuzzing::certificates(&crate::property::mutate(seed, random));
    });
}
