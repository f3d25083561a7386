//! Query parameters of LIST and WATCH requests, and the query strings they become.

use std::time::Duration;

/// The server-side timeout of a watch is at most this share of the client's idle timeout, so a
/// live server always ends the watch, cleanly, before the client would give it up as silent.
pub const WATCH_TIMEOUT_SHARE: f64 = 0.8;

/// What a LIST or a WATCH selects: a label selector and a field selector, each optional. A
/// watcher lists and watches with the same ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selectors {
    /// e.g. `team in (a,b)`.
    pub labels: Option<String>,
    /// e.g. `metadata.name=app-tls`: what RBAC `resourceNames` permits for list and watch.
    pub fields: Option<String>,
}

impl Selectors {
    pub fn labels(selector: &str) -> Selectors {
        Selectors {
            labels: Some(selector.to_owned()),
            fields: None,
        }
    }

    pub fn fields(selector: &str) -> Selectors {
        Selectors {
            labels: None,
            fields: Some(selector.to_owned()),
        }
    }

    fn push_into(&self, query: &mut Vec<(&'static str, String)>) {
        push(query, "labelSelector", &self.labels);
        push(query, "fieldSelector", &self.fields);
    }
}

/// Parameters of a LIST. `limit` + `continue_token` page through large collections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListParams {
    pub selectors: Selectors,
    pub limit: Option<u32>,
    pub continue_token: Option<String>,
    /// `Some("0")` lets the server answer from its cache.
    pub resource_version: Option<String>,
}

/// Parameters of a WATCH.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchParams {
    pub selectors: Selectors,
    /// Where to resume: events after this version are delivered.
    pub resource_version: Option<String>,
    /// Ask the server to end the watch after this long (it then closes the stream cleanly).
    pub timeout_seconds: Option<u32>,
    /// Ask for BOOKMARK events, which advance the resume point without an object change.
    pub allow_bookmarks: bool,
}

impl ListParams {
    /// The query of a LIST with these parameters.
    pub fn query(&self) -> Vec<(&'static str, String)> {
        let mut query = Vec::new();
        self.selectors.push_into(&mut query);
        push(&mut query, "limit", &self.limit.map(|l| l.to_string()));
        push(&mut query, "continue", &self.continue_token);
        push(&mut query, "resourceVersion", &self.resource_version);
        query
    }
}

impl WatchParams {
    /// These parameters with a server-side timeout that a client giving a silent watch up after
    /// `idle` leaves room for (whole seconds, at least 1).
    pub fn within(&self, idle: Duration) -> WatchParams {
        let most = (idle.as_secs_f64() * WATCH_TIMEOUT_SHARE) as u32;
        let asked = self.timeout_seconds.unwrap_or(u32::MAX);
        WatchParams {
            timeout_seconds: Some(asked.min(most).max(1)),
            ..self.clone()
        }
    }

    /// The query of a WATCH with these parameters.
    pub fn query(&self) -> Vec<(&'static str, String)> {
        let mut query = vec![("watch", "true".to_owned())];
        self.selectors.push_into(&mut query);
        push(&mut query, "resourceVersion", &self.resource_version);
        push(
            &mut query,
            "timeoutSeconds",
            &self.timeout_seconds.map(|t| t.to_string()),
        );
        if self.allow_bookmarks {
            query.push(("allowWatchBookmarks", "true".to_owned()));
        }
        query
    }
}

fn push(query: &mut Vec<(&'static str, String)>, key: &'static str, value: &Option<String>) {
    if let Some(value) = value.as_ref().filter(|v| !v.is_empty()) {
        query.push((key, value.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_asks_the_server_to_end_it_within_the_idle_timeout() {
        let asked = WatchParams {
            timeout_seconds: Some(50),
            ..WatchParams::default()
        };
        let within = |secs| asked.within(Duration::from_secs(secs)).timeout_seconds;
        assert_eq!(within(70), Some(50), "50 s fits in 80 % of 70 s");
        assert_eq!(within(10), Some(8));
        assert_eq!(within(2), Some(1));
        let unset = WatchParams::default().within(Duration::from_secs(70));
        assert_eq!(
            unset.timeout_seconds,
            Some(56),
            "a watch without a timeout gets one"
        );
    }

    #[test]
    fn empty_values_are_left_out_of_the_query() {
        let params = ListParams {
            selectors: Selectors::labels(""),
            limit: Some(500),
            ..ListParams::default()
        };
        assert_eq!(params.query(), [("limit", "500".to_owned())]);
        let watch = WatchParams {
            resource_version: Some("7".into()),
            allow_bookmarks: true,
            ..WatchParams::default()
        };
        assert_eq!(
            watch.query(),
            [
                ("watch", "true".to_owned()),
                ("resourceVersion", "7".to_owned()),
                ("allowWatchBookmarks", "true".to_owned())
            ]
        );
    }
}
