//! TokenFile: a bearer token read from a file and re-read at most once a minute.
//!
//! Bound service-account tokens are rotated by the kubelet; client-go re-reads the file every
//! minute, and so does skiff. A failed re-read keeps the last good token.

use super::config_error::ConfigError;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a token file is re-read, as client-go does for bound service-account tokens.
pub const TOKEN_FILE_REFRESH: Duration = Duration::from_secs(60);

/// A token read from a file, re-read at most once per [`TOKEN_FILE_REFRESH`] so a rotated
/// (bound service-account) token is picked up. A failed re-read keeps the last good token.
pub struct TokenFile {
    path: PathBuf,
    cache: Mutex<CachedToken>,
}

#[derive(Clone)]
struct CachedToken {
    token: String,
    read_at: Instant,
}

impl TokenFile {
    /// Reads the token now; a missing or empty file is an error.
    pub fn load(path: &Path) -> Result<TokenFile, ConfigError> {
        TokenFile::load_at(path, Instant::now())
    }

    pub fn load_at(path: &Path, now: Instant) -> Result<TokenFile, ConfigError> {
        let token = read_token(path)?;
        Ok(TokenFile {
            path: path.to_owned(),
            cache: Mutex::new(CachedToken {
                token,
                read_at: now,
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The token at `now`: the cached one unless it was read a minute or more ago.
    pub fn token_at(&self, now: Instant) -> String {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if now.saturating_duration_since(cache.read_at) >= TOKEN_FILE_REFRESH {
            match read_token(&self.path) {
                Ok(token) => cache.token = token,
                Err(e) => log::warn!("keeping the previous token: {e}"),
            }
            cache.read_at = now;
        }
        cache.token.clone()
    }
}

impl Clone for TokenFile {
    /// A copy with its own cache, so configs derived from each other share no state.
    fn clone(&self) -> TokenFile {
        let cached = self.cache.lock().unwrap_or_else(|e| e.into_inner()).clone();
        TokenFile {
            path: self.path.clone(),
            cache: Mutex::new(cached),
        }
    }
}

fn read_token(path: &Path) -> Result<String, ConfigError> {
    let raw = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::unreadable("token file", path, &e))?;
    let token = raw.trim();
    if token.is_empty() {
        return Err(ConfigError::Invalid(format!(
            "the token file {} is empty; point tokenFile at a file holding a bearer token",
            path.display()
        )));
    }
    Ok(token.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::test_dir::temp_dir;

    #[test]
    fn token_file_is_reread_after_a_minute_not_before() {
        let dir = temp_dir("tokenfile");
        let path = dir.join("token");
        std::fs::write(&path, "first\n").unwrap();
        let t0 = Instant::now();
        let file = TokenFile::load_at(&path, t0).unwrap();
        std::fs::write(&path, "second").unwrap();
        assert_eq!(file.token_at(t0 + Duration::from_secs(59)), "first");
        assert_eq!(file.token_at(t0 + Duration::from_secs(60)), "second");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(file.token_at(t0 + Duration::from_secs(200)), "second");
    }
}
