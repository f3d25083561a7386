//! Why a config could not be loaded: the one error of every loader (kubeconfig, in-cluster,
//! token file, credential plugin output), each message naming the problem and the fix. It sits
//! below the loaders, so none of them needs another to report a failure.

use std::fmt;
use std::path::{Path, PathBuf};

/// Why a config could not be loaded; each message names the problem and the fix. The
/// variants are the failures a caller tells apart (which loader gave up, and how); every other
/// bad value is [`ConfigError::Invalid`], its message written where it is found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A kubeconfig that a flag or env var pointed to does not exist.
    MissingFile {
        path: PathBuf,
        source: String,
    },
    Yaml {
        path: PathBuf,
        error: String,
    },
    NotInCluster {
        missing: String,
    },
    NothingFound {
        tried: Vec<String>,
    },
    /// Any other bad value; the message says which and what to do.
    Invalid(String),
}

impl ConfigError {
    /// `what` (a kubeconfig, a token file, a CA) at `path` could not be read.
    pub(super) fn unreadable(what: &str, path: &Path, error: &std::io::Error) -> ConfigError {
        ConfigError::Invalid(format!("cannot read {what} {}: {error}", path.display()))
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::MissingFile { path, source } => write!(
                f,
                "kubeconfig {} (from {source}) does not exist; fix the path given by {source}",
                path.display()
            ),
            ConfigError::Yaml { path, error } => {
                write!(f, "kubeconfig {}, {error}", path.display())
            }
            ConfigError::NotInCluster { missing } => write!(
                f,
                "not running in a cluster: {missing}; pass --kubeconfig outside a pod"
            ),
            ConfigError::NothingFound { tried } => write!(
                f,
                "no Kubernetes config found; tried {}; pass --kubeconfig or set $KUBECONFIG",
                tried.join(", ")
            ),
            ConfigError::Invalid(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ConfigError {}
