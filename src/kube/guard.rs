//! The hook a client asks before every mutating request (POST, PUT, PATCH, DELETE).
//!
//! The leader-election fence implements it for the main client, so that no controller write
//! can reach the server once this replica may no longer be the leader.

use super::Error;

pub trait WriteGuard: Send + Sync {
    /// `Ok` lets the request go; an error is returned to the caller and nothing is sent.
    fn check(&self, method: &str, path: &str) -> Result<(), Error>;
}
