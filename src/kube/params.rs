//! Query parameters of LIST and WATCH requests.

/// Parameters of a LIST. `limit` + `continue_token` page through large collections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListParams {
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub limit: Option<u32>,
    pub continue_token: Option<String>,
    /// `Some("0")` lets the server answer from its cache.
    pub resource_version: Option<String>,
}

/// Parameters of a WATCH.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchParams {
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    /// Where to resume: events after this version are delivered.
    pub resource_version: Option<String>,
    /// Ask the server to end the watch after this long (it then closes the stream cleanly).
    pub timeout_seconds: Option<u32>,
    /// Ask for BOOKMARK events, which advance the resume point without an object change.
    pub allow_bookmarks: bool,
}
