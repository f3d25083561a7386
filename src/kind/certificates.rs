//! The check a Secret's value passes before it is published as a ConfigMap's: PEM text holding
//! X.509 certificates and nothing else.
//!
//! A ConfigMap is read by anyone who may read ConfigMaps in its namespace, so a projection
//! publishes only what is public by nature: certificates are; private keys, keystores and
//! passwords are not. The check admits what trust-manager admits in a bundle (`CERTIFICATE`
//! blocks), and is stricter about the rest, because the value is published as it is, not
//! re-encoded: OpenSSL reads the certificates in it, and the value, whitespace aside, must be
//! exactly their PEM encoding. So text outside the blocks (a password, a comment), a block of
//! another type (a private key in any PEM form), trailing bytes inside a block and any other
//! encoding of a certificate are refused, and so is anything that is not text (a DER key, a
//! PKCS#12 or JKS keystore). The reasons are worded for a condition that names the key.

use openssl::x509::X509;

const BEGIN: &str = "-----BEGIN ";
const DASHES: &str = "-----";
const CERTIFICATE: &str = "CERTIFICATE";
/// The longest PEM label a message shows (`ENCRYPTED PRIVATE KEY` is 21 characters).
const LABEL_SHOWN: usize = 40;

/// Whether `value` is PEM text holding certificates and nothing else; why not, if it is not.
pub fn only_certificates(value: &[u8]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(value) else {
        return Err("it is not text: binary data such as a DER key or a keystore".to_owned());
    };
    let mut blocks = 0;
    for label in labels(text) {
        if label != CERTIFICATE {
            let shown: String = label.chars().take(LABEL_SHOWN).collect();
            return Err(format!(
                "it holds a PEM block of type {shown}, not only certificates"
            ));
        }
        blocks += 1;
    }
    if blocks == 0 {
        return Err("it holds no PEM certificate".to_owned());
    }
    let unread = || "its PEM blocks are not all certificates OpenSSL reads".to_owned();
    let read = X509::stack_from_pem(value).map_err(|_| unread())?;
    if read.len() != blocks {
        return Err(unread());
    }
    let mut encoded = Vec::with_capacity(value.len());
    for certificate in &read {
        let pem = certificate.to_pem().map_err(|e| e.to_string())?;
        encoded.extend_from_slice(&pem);
    }
    if !same_but_whitespace(value, &encoded) {
        return Err(
            "it holds more than its certificates: text outside their PEM blocks, or a block \
             that is not exactly one certificate"
                .to_owned(),
        );
    }
    Ok(())
}

/// The label of each `-----BEGIN <label>-----` line in `text` (the rest of the text after
/// `BEGIN ` when a line has no closing dashes).
fn labels(text: &str) -> impl Iterator<Item = &str> {
    text.split(BEGIN)
        .skip(1)
        .map(|rest| match rest.find(DASHES) {
            Some(end) => &rest[..end],
            None => rest,
        })
}

/// Whether `a` and `b` differ in ASCII whitespace only (PEM's line breaks and indentation).
fn same_but_whitespace(a: &[u8], b: &[u8]) -> bool {
    let kept = |bytes: &[u8]| -> Vec<u8> {
        bytes
            .iter()
            .copied()
            .filter(|b| !b.is_ascii_whitespace())
            .collect()
    };
    kept(a) == kept(b)
}

#[cfg(test)]
mod tests;
