//! What a request presents to the API server: a bearer token, a client certificate, or both,
//! and, from a plugin, which run produced it and until when it may be used.
//!
//! Every source of credentials (a kubeconfig's token, a token file, an exec plugin) hands a
//! request one of these; only a plugin's expire, and only a plugin's are retired after a 401.

use crate::kube::client_identity::ClientIdentity;
use std::fmt;
use std::time::{Duration, SystemTime};

/// A credential is renewed this long before its `expirationTimestamp`, so a request never
/// reaches the server with a token that expires on the way.
pub const EXPIRY_MARGIN: Duration = Duration::from_secs(10);

/// What to present to the API server on the next request.
#[derive(Clone, Default)]
pub struct Credential {
    pub token: Option<String>,
    /// A client certificate from a plugin (a kubeconfig's own certificate is in `TlsOptions`).
    pub identity: Option<ClientIdentity>,
    /// Which plugin run produced it (0: not from a plugin); a 401 retires only this one.
    pub generation: u64,
    pub(super) expires: Option<SystemTime>,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("identity", &self.identity)
            .field("generation", &self.generation)
            .field("expires", &self.expires)
            .finish()
    }
}

impl Credential {
    pub fn token(token: String) -> Credential {
        Credential {
            token: Some(token),
            ..Credential::default()
        }
    }

    pub(super) fn is_fresh_at(&self, now: SystemTime) -> bool {
        self.expires
            .is_none_or(|expires| now + EXPIRY_MARGIN < expires)
    }
}
