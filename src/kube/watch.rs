//! Watch events as the rest of skiff sees them.

/// One decoded watch event. An `ERROR` event never appears here: the stream turns it into an
/// [`Error`](super::Error) (`Expired` for 410 Gone).
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent<K> {
    Added(K),
    Modified(K),
    Deleted(K),
    /// The server's promise that everything up to `resource_version` has been sent.
    Bookmark {
        resource_version: String,
    },
}
