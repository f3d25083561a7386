//! A client certificate and its key, as native-tls takes them: the key converted to PKCS#8
//! once, when a kubeconfig or a credential plugin's output is read.

use std::fmt;

use super::config_error::ConfigError;

/// A client certificate; the key is converted to PKCS#8 when the config is loaded.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    pub cert_pem: Vec<u8>,
    pub key_pkcs8_pem: Vec<u8>,
}

impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientIdentity { .. }")
    }
}

/// Converts a PKCS#8, PKCS#1 RSA or SEC1 EC PEM key to PKCS#8 PEM (what native-tls accepts).
pub(crate) fn to_pkcs8(key_pem: &[u8], what: &str) -> Result<Vec<u8>, ConfigError> {
    let invalid = |e: openssl::error::ErrorStack| {
        ConfigError::Invalid(format!(
            "{what} is not a PEM private key (PKCS#8, RSA or EC) ({e}); fix the key data"
        ))
    };
    let key = openssl::pkey::PKey::private_key_from_pem(key_pem).map_err(invalid)?;
    key.private_key_to_pem_pkcs8().map_err(invalid)
}
