//! Why a config could not be loaded: the one error of every loader (kubeconfig, in-cluster,
//! token file, credential plugin output), each message naming the problem and the fix. It sits
//! below the loaders, so none of them needs another to report a failure.

use std::fmt;
use std::path::PathBuf;

/// Why a config could not be loaded; each message names the problem and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A kubeconfig that a flag or env var pointed to does not exist.
    MissingFile {
        path: PathBuf,
        source: String,
    },
    Unreadable {
        what: String,
        path: PathBuf,
        error: String,
    },
    Yaml {
        path: PathBuf,
        error: String,
    },
    UnknownContext {
        name: String,
        known: Vec<String>,
    },
    NoContext {
        sources: String,
    },
    MissingCluster {
        /// The file and line of the context.
        place: String,
        context: String,
        cluster: String,
    },
    MissingUser {
        /// The file and line of the context.
        place: String,
        context: String,
        user: String,
    },
    UnsupportedAuth {
        user: String,
        /// What it is and why skiff refuses it.
        kind: String,
        /// The tool or setting to use instead.
        fix: String,
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

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::MissingFile { path, source } => write!(
                f,
                "kubeconfig {} (from {source}) does not exist; fix the path given by {source}",
                path.display()
            ),
            ConfigError::Unreadable { what, path, error } => {
                write!(f, "cannot read {what} {}: {error}", path.display())
            }
            ConfigError::Yaml { path, error } => {
                write!(f, "kubeconfig {}, {error}", path.display())
            }
            ConfigError::UnknownContext { name, known } => write!(
                f,
                "context {name:?} is not in the kubeconfig; it has: {}; pick one with --context",
                if known.is_empty() {
                    "no contexts".to_owned()
                } else {
                    known.join(", ")
                }
            ),
            ConfigError::NoContext { sources } => write!(
                f,
                "no current-context in {sources}; pass --context or run `kubectl config use-context`"
            ),
            ConfigError::MissingCluster {
                place,
                context,
                cluster,
            } => write!(
                f,
                "{place}: context {context:?} names cluster {cluster:?}, which the kubeconfig does not define; add it or fix the context"
            ),
            ConfigError::MissingUser {
                place,
                context,
                user,
            } => write!(
                f,
                "{place}: context {context:?} names user {user:?}, which the kubeconfig does not define (kubectl would connect without credentials); add the user or fix the context"
            ),
            ConfigError::UnsupportedAuth { user, kind, fix } => {
                write!(f, "user {user:?} authenticates with {kind}; {fix}")
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
