//! A client's TLS settings, made into one OpenSSL context that every dial shares.
//!
//! The context holds the trust store (the cluster CA alone when one is given: the system roots
//! must not also vouch for the API server), the client certificate if any, and the modes
//! every connection inherits: TLS 1.2 at least, as the API server requires, and
//! `RELEASE_BUFFERS`, so the 16 KiB read and write buffers of an idle connection (a watch
//! waiting for its next event, most of the time) go back to the heap. A credential plugin's
//! certificate gets a context of its own, made again only when the plugin hands out a new one.

use super::Error;
use super::config::{ClientIdentity, TlsOptions};
use openssl::error::ErrorStack;
use openssl::pkey::PKey;
use openssl::ssl::{
    Ssl, SslConnector, SslContextBuilder, SslMethod, SslMode, SslVerifyMode, SslVersion,
};
use openssl::x509::X509;
use openssl::x509::store::X509StoreBuilder;
use std::sync::Mutex;

pub struct TlsSetup {
    /// With the config's client certificate, if any.
    context: SslConnector,
    /// The last certificate a credential plugin gave, and the context made for it.
    plugin: Mutex<Option<(ClientIdentity, SslConnector)>>,
    /// When set, the only trust anchors.
    roots: Vec<X509>,
    insecure_skip_verify: bool,
    /// SNI and the name the certificate must carry.
    pub server_name: String,
}

impl TlsSetup {
    /// Parses the CA and the client certificate and builds the context; bad input is refused
    /// here, at start, naming what is wrong.
    pub fn new(options: &TlsOptions, host: &str) -> Result<TlsSetup, Error> {
        let roots = options.ca_pem.as_deref().map(parse_roots).transpose()?;
        let roots = roots.unwrap_or_default();
        let context = build(
            &roots,
            options.identity.as_ref(),
            options.insecure_skip_verify,
        )?;
        Ok(TlsSetup {
            context,
            plugin: Mutex::new(None),
            roots,
            insecure_skip_verify: options.insecure_skip_verify,
            server_name: options
                .server_name
                .clone()
                .unwrap_or_else(|| host.to_owned()),
        })
    }

    /// The state of one new connection, presenting a plugin's `identity` when given instead of
    /// the config's client certificate.
    pub fn ssl(&self, identity: Option<&ClientIdentity>) -> Result<Ssl, Error> {
        let context = match identity {
            None => self.context.clone(),
            Some(identity) => self.plugin_context(identity)?,
        };
        let setup = |e: ErrorStack| Error::Transport(format!("cannot start TLS: {e}"));
        let mut config = context.configure().map_err(setup)?;
        config.set_verify_hostname(!self.insecure_skip_verify);
        config.into_ssl(&self.server_name).map_err(setup)
    }

    fn plugin_context(&self, identity: &ClientIdentity) -> Result<SslConnector, Error> {
        let mut plugin = self.plugin.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((cached, context)) = plugin.as_ref()
            && cached == identity
        {
            return Ok(context.clone());
        }
        let context = build(&self.roots, Some(identity), self.insecure_skip_verify)?;
        *plugin = Some((identity.clone(), context.clone()));
        Ok(context)
    }
}

fn build(
    roots: &[X509],
    identity: Option<&ClientIdentity>,
    insecure_skip_verify: bool,
) -> Result<SslConnector, Error> {
    let refused = |e: ErrorStack| Error::Refused(format!("cannot set up TLS: {e}"));
    let mut builder = SslConnector::builder(SslMethod::tls_client()).map_err(refused)?;
    builder
        .set_min_proto_version(Some(SslVersion::TLS1_2))
        .map_err(refused)?;
    builder.set_mode(SslMode::RELEASE_BUFFERS);
    if !roots.is_empty() {
        let mut store = X509StoreBuilder::new().map_err(refused)?;
        for cert in roots {
            store.add_cert(cert.clone()).map_err(refused)?;
        }
        builder.set_cert_store(store.build());
    }
    if let Some(identity) = identity {
        present(&mut builder, &identity.cert_pem, &identity.key_pkcs8_pem).map_err(|e| {
            Error::Refused(format!(
                "the client certificate and key do not form a usable identity: {e}"
            ))
        })?;
    }
    if insecure_skip_verify {
        builder.set_verify(SslVerifyMode::NONE);
    }
    Ok(builder.build())
}

/// A certificate (its chain after it, if any) and the key that must match it, presented by
/// every connection of `builder`'s context: a client's, or the metrics server's.
pub(crate) fn present(
    builder: &mut SslContextBuilder,
    cert_pem: &[u8],
    key_pem: &[u8],
) -> Result<(), String> {
    let mut chain = X509::stack_from_pem(cert_pem)
        .map_err(|e| e.to_string())?
        .into_iter();
    let leaf = chain
        .next()
        .ok_or("the certificate PEM holds no certificate")?;
    let key = PKey::private_key_from_pem(key_pem).map_err(|e| e.to_string())?;
    builder.set_certificate(&leaf).map_err(|e| e.to_string())?;
    for cert in chain {
        builder
            .add_extra_chain_cert(cert)
            .map_err(|e| e.to_string())?;
    }
    let mismatch = |e: ErrorStack| format!("the key does not belong to the certificate ({e})");
    builder.set_private_key(&key).map_err(mismatch)?;
    builder.check_private_key().map_err(mismatch)
}

/// Every certificate of a PEM bundle.
fn parse_roots(ca_pem: &[u8]) -> Result<Vec<X509>, Error> {
    let certs = X509::stack_from_pem(ca_pem)
        .map_err(|e| Error::Refused(format!("the cluster CA is not valid PEM: {e}")))?;
    if certs.is_empty() {
        return Err(Error::Refused("the cluster CA holds no certificate".into()));
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::test_cert::self_signed;

    fn identity() -> ClientIdentity {
        let key = PKey::from_rsa(openssl::rsa::Rsa::generate(2048).unwrap()).unwrap();
        ClientIdentity {
            cert_pem: self_signed(&key),
            key_pkcs8_pem: key.private_key_to_pem_pkcs8().unwrap(),
        }
    }

    #[test]
    fn every_dial_without_a_plugin_shares_the_clients_context() {
        let setup = TlsSetup::new(&TlsOptions::default(), "example").unwrap();
        let first = setup.ssl(None).unwrap();
        let second = setup.ssl(None).unwrap();
        assert!(
            std::ptr::eq(first.ssl_context(), second.ssl_context()),
            "a dial built its own OpenSSL context"
        );
    }

    #[test]
    fn a_plugin_certificate_gets_one_context_until_it_changes() {
        let setup = TlsSetup::new(&TlsOptions::default(), "example").unwrap();
        let first = identity();
        let a = setup.plugin_context(&first).unwrap();
        let again = setup.plugin_context(&first).unwrap();
        let other = setup.plugin_context(&identity()).unwrap();
        assert!(
            std::ptr::eq(a.context(), again.context()),
            "same certificate, same context"
        );
        assert!(
            !std::ptr::eq(a.context(), other.context()),
            "a new certificate, a new context"
        );
        assert!(setup.ssl(Some(&first)).is_ok());
    }

    #[test]
    fn a_key_that_is_not_the_certificates_is_refused_naming_it() {
        let mut mismatched = identity();
        mismatched.key_pkcs8_pem = identity().key_pkcs8_pem;
        let options = TlsOptions {
            identity: Some(mismatched),
            ..TlsOptions::default()
        };
        let err = TlsSetup::new(&options, "example")
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("the key does not belong to the certificate")),
            "{err:?}"
        );
    }

    #[test]
    fn a_ca_without_certificates_is_refused() {
        let options = TlsOptions {
            ca_pem: Some(b"not a certificate".to_vec()),
            ..TlsOptions::default()
        };
        assert!(matches!(
            TlsSetup::new(&options, "example"),
            Err(Error::Refused(_))
        ));
    }
}
