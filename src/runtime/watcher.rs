//! Watcher: keeps a local view of a collection up to date with LIST then WATCH, as an explicit
//! state machine (`Empty → Listing → Watching{rv}`; 410 Gone → `Empty`) advanced by one `step`.
//!
//! The watcher knows nothing of HTTP: it drives any [`ListWatch`] source, so it is tested with
//! a scripted fake and the client implements the trait with a few lines of glue.

use std::future::Future;
use std::time::{Duration, Instant};

use smol::Timer;

use super::backoff::{Backoff, Jitter};
use crate::kube::api::{ObjectList, Resource};
use crate::kube::{Error, Event, ListParams, WatchParams};

/// Items per LIST page: 500, client-go's pager default.
pub const PAGE_SIZE: u32 = 500;
/// Server-side watch timeout before jitter: 290 s, kube-runtime's default. Watches end and
/// resume regularly, so a connection that died silently is replaced within minutes.
pub const WATCH_TIMEOUT: Duration = Duration::from_secs(290);
/// A watch that ends sooner than this without one event is treated as a failure, so a server
/// closing watches at once cannot spin the watcher (client-go's "very short watch", 1 s).
pub const SHORT_WATCH: Duration = Duration::from_secs(1);

/// Where a watcher reads from: a collection, already scoped (namespace, kind) by the source.
pub trait ListWatch<K: Resource>: Send + Sync {
    type Stream: EventStream<K>;
    fn list(
        &self,
        params: &ListParams,
    ) -> impl Future<Output = Result<ObjectList<K>, Error>> + Send;
    fn watch(
        &self,
        params: &WatchParams,
    ) -> impl Future<Output = Result<Self::Stream, Error>> + Send;
}

/// An open watch: events until the server ends it (`None`). 410 Gone arrives as
/// `Err(Error::Expired)`.
pub trait EventStream<K>: Send {
    fn next(&mut self) -> impl Future<Output = Option<Result<Event<K>, Error>>> + Send;
}

/// What the watcher reports.
#[derive(Debug, Clone, PartialEq)]
pub enum WatcherEvent<K> {
    /// A full list: the complete current state, replacing anything known before.
    Restarted(Vec<K>),
    /// An object was created or changed.
    Applied(K),
    /// An object was deleted (its last known state).
    Deleted(K),
}

/// What to watch and how patiently.
#[derive(Debug, Clone)]
pub struct WatcherConfig {
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub page_size: u32,
    pub watch_timeout: Duration,
    pub backoff: Backoff,
}

impl Default for WatcherConfig {
    fn default() -> Self {
        WatcherConfig {
            label_selector: None,
            field_selector: None,
            page_size: PAGE_SIZE,
            watch_timeout: WATCH_TIMEOUT,
            backoff: Backoff::default(),
        }
    }
}

impl WatcherConfig {
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_owned());
        self
    }

    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_owned());
        self
    }
}

enum State<K, S> {
    /// Nothing known: the next step lists from the start.
    Empty,
    /// Part of a paginated list has arrived; `continue_token` fetches the next page.
    Listing {
        continue_token: String,
        items: Vec<K>,
    },
    /// Up to date as of `resource_version`; `stream` is `None` between watches.
    Watching {
        resource_version: String,
        stream: Option<OpenWatch<S>>,
    },
}

struct OpenWatch<S> {
    stream: S,
    opened: Instant,
    events: u64,
}

/// Lists then watches one collection, forever; see the module docs.
pub struct Watcher<K: Resource, S: ListWatch<K>> {
    source: S,
    config: WatcherConfig,
    state: State<K, S::Stream>,
    retry_at: Option<Instant>,
    jitter: Jitter,
}

impl<K: Resource, S: ListWatch<K>> Watcher<K, S> {
    pub fn new(source: S, config: WatcherConfig) -> Self {
        Watcher {
            source,
            config,
            state: State::Empty,
            retry_at: None,
            jitter: Jitter::from_clock(),
        }
    }

    /// The next event. Errors are returned once each; the following call first waits out
    /// the backoff. Cancelling this future loses nothing but the wait already done.
    pub async fn next(&mut self) -> Result<WatcherEvent<K>, Error> {
        loop {
            if let Some(at) = self.retry_at {
                Timer::at(at).await;
                self.retry_at = None;
            }
            if let Some(result) = self.step().await {
                return result;
            }
        }
    }

    /// Consecutive failures since the last success (drives the backoff).
    pub fn failures(&self) -> u32 {
        self.config.backoff.failures()
    }

    /// Advances the state machine by one request or one watch event.
    pub async fn step(&mut self) -> Option<Result<WatcherEvent<K>, Error>> {
        match &mut self.state {
            State::Empty | State::Listing { .. } => self.step_list().await,
            State::Watching { stream: None, .. } => self.step_open_watch().await,
            State::Watching {
                stream: Some(open), ..
            } => {
                let received = open.stream.next().await;
                self.step_watch_event(received)
            }
        }
    }

    fn step_list_params(&self) -> ListParams {
        let continue_token = match &self.state {
            State::Listing { continue_token, .. } => Some(continue_token.clone()),
            _ => None,
        };
        ListParams {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            limit: Some(self.config.page_size),
            continue_token,
            resource_version: None,
        }
    }

    async fn step_list(&mut self) -> Option<Result<WatcherEvent<K>, Error>> {
        let params = self.step_list_params();
        let page = match self.source.list(&params).await {
            Ok(page) => page,
            Err(e) => return self.failed(e),
        };
        let mut items = match std::mem::replace(&mut self.state, State::Empty) {
            State::Listing { items, .. } => items,
            _ => Vec::new(),
        };
        items.extend(page.items);
        let meta = page.metadata;
        match meta.continue_token.filter(|t| !t.is_empty()) {
            Some(continue_token) => {
                self.state = State::Listing {
                    continue_token,
                    items,
                };
                None
            }
            None => {
                self.state = State::Watching {
                    resource_version: meta.resource_version.unwrap_or_default(),
                    stream: None,
                };
                self.config.backoff.reset();
                Some(Ok(WatcherEvent::Restarted(items)))
            }
        }
    }

    async fn step_open_watch(&mut self) -> Option<Result<WatcherEvent<K>, Error>> {
        let State::Watching {
            resource_version, ..
        } = &self.state
        else {
            return None;
        };
        let params = WatchParams {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            resource_version: Some(resource_version.clone()),
            timeout_seconds: Some(self.jittered_timeout()),
            allow_bookmarks: true,
        };
        match self.source.watch(&params).await {
            Ok(stream) => {
                if let State::Watching { stream: slot, .. } = &mut self.state {
                    *slot = Some(OpenWatch {
                        stream,
                        opened: Instant::now(),
                        events: 0,
                    });
                }
                None
            }
            Err(e) => self.failed(e),
        }
    }

    fn step_watch_event(
        &mut self,
        received: Option<Result<Event<K>, Error>>,
    ) -> Option<Result<WatcherEvent<K>, Error>> {
        let State::Watching {
            resource_version,
            stream,
        } = &mut self.state
        else {
            return None;
        };
        let event = match received {
            Some(Ok(event)) => event,
            Some(Err(e)) => {
                *stream = None;
                return self.failed(e);
            }
            None => {
                let short_and_empty = stream
                    .take()
                    .is_some_and(|w| w.events == 0 && w.opened.elapsed() < SHORT_WATCH);
                if short_and_empty {
                    self.schedule_retry();
                }
                return None;
            }
        };
        if let Some(open) = stream {
            open.events += 1;
        }
        self.config.backoff.reset();
        let (new_version, output) = match event {
            Event::Added(o) | Event::Modified(o) => {
                (version_of(&o), Some(WatcherEvent::Applied(o)))
            }
            Event::Deleted(o) => (version_of(&o), Some(WatcherEvent::Deleted(o))),
            Event::Bookmark { resource_version } => (Some(resource_version), None),
        };
        if let Some(v) = new_version {
            *resource_version = v;
        }
        output.map(Ok)
    }

    /// A request failed; the next one waits out the backoff. 410 Gone means the version we
    /// hold (or the list's continue token) is gone: relist, quietly, as it is routine.
    /// Anything else is reported, and the same request is retried (a watch resumes from the
    /// same version, a list from the same page).
    fn failed(&mut self, error: Error) -> Option<Result<WatcherEvent<K>, Error>> {
        self.schedule_retry();
        if error.code() == Some(410) {
            log::info!("{} list/watch expired, relisting: {error}", K::KIND);
            self.state = State::Empty;
            return None;
        }
        Some(Err(error))
    }

    fn schedule_retry(&mut self) {
        self.retry_at = Some(Instant::now() + self.config.backoff.next_delay());
    }

    /// The watch timeout ± 10 %, so watches of many replicas do not all end together.
    fn jittered_timeout(&mut self) -> u32 {
        let spread = 0.9 + 0.2 * self.jitter.next_unit();
        self.config.watch_timeout.mul_f64(spread).as_secs().max(1) as u32
    }
}

fn version_of<K: Resource>(object: &K) -> Option<String> {
    object.metadata().resource_version.clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::{ConfigMap, ListMeta, ObjectMeta};
    use smol::block_on;
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    type Page = Result<ObjectList<ConfigMap>, Error>;
    type Events = Result<Vec<Result<Event<ConfigMap>, Error>>, Error>;

    /// A scripted source: each LIST / WATCH takes the next scripted answer; calls are recorded.
    #[derive(Default)]
    struct Fake {
        script: Mutex<(VecDeque<Page>, VecDeque<Events>)>,
        calls: Mutex<(Vec<ListParams>, Vec<WatchParams>)>,
    }

    struct FakeStream(VecDeque<Result<Event<ConfigMap>, Error>>);

    impl EventStream<ConfigMap> for FakeStream {
        async fn next(&mut self) -> Option<Result<Event<ConfigMap>, Error>> {
            self.0.pop_front()
        }
    }

    fn ended() -> Error {
        Error::Transport("script ended".into())
    }

    impl ListWatch<ConfigMap> for Arc<Fake> {
        type Stream = FakeStream;
        async fn list(&self, params: &ListParams) -> Page {
            self.calls.lock().unwrap().0.push(params.clone());
            let next = self.script.lock().unwrap().0.pop_front();
            next.unwrap_or_else(|| Err(ended()))
        }
        async fn watch(&self, params: &WatchParams) -> Result<FakeStream, Error> {
            self.calls.lock().unwrap().1.push(params.clone());
            let next = self.script.lock().unwrap().1.pop_front();
            Ok(FakeStream(next.unwrap_or_else(|| Err(ended()))?.into()))
        }
    }

    fn cm(name: &str, rv: &str) -> ConfigMap {
        let mut metadata = ObjectMeta::named(Some("ns"), name);
        metadata.resource_version = Some(rv.into());
        ConfigMap {
            metadata,
            ..ConfigMap::default()
        }
    }

    fn page(items: Vec<ConfigMap>, rv: &str, next: Option<&str>) -> Page {
        let continue_token = next.map(Into::into);
        let metadata = ListMeta {
            resource_version: Some(rv.into()),
            continue_token,
        };
        Ok(ObjectList { metadata, items })
    }

    fn server_error() -> Error {
        Error::Timeout("slow".into())
    }

    /// A watcher over a scripted source, with a 1 ms backoff so tests barely sleep.
    fn watcher(
        lists: Vec<Page>,
        watches: Vec<Events>,
    ) -> (Watcher<ConfigMap, Arc<Fake>>, Arc<Fake>) {
        let fake = Arc::new(Fake::default());
        *fake.script.lock().unwrap() = (lists.into(), watches.into());
        let backoff = Backoff::new(Duration::from_millis(1), Duration::from_secs(1));
        let config = WatcherConfig {
            backoff,
            ..WatcherConfig::default().labels("app=x")
        };
        (Watcher::new(Arc::clone(&fake), config), fake)
    }

    fn watched_versions(fake: &Fake) -> Vec<String> {
        let calls = fake.calls.lock().unwrap();
        calls
            .1
            .iter()
            .filter_map(|p| p.resource_version.clone())
            .collect()
    }

    #[test]
    fn lists_every_page_then_watches_from_the_lists_version() {
        let pages = vec![
            page(vec![cm("a", "5")], "", Some("c1")),
            page(vec![cm("b", "9")], "10", None),
        ];
        let (mut w, fake) = watcher(pages, vec![Ok(vec![Ok(Event::Added(cm("c", "11")))])]);
        let listed = WatcherEvent::Restarted(vec![cm("a", "5"), cm("b", "9")]);
        assert_eq!(block_on(w.next()), Ok(listed));
        assert_eq!(block_on(w.next()), Ok(WatcherEvent::Applied(cm("c", "11"))));
        let (lists, watches) = fake.calls.lock().unwrap().clone();
        let tokens: Vec<_> = lists.iter().map(|p| p.continue_token.clone()).collect();
        assert_eq!(tokens, [None, Some("c1".to_owned())]);
        assert!(lists.iter().all(|p| p.limit == Some(PAGE_SIZE)));
        assert_eq!(watches[0].resource_version.as_deref(), Some("10"));
        assert_eq!(watches[0].label_selector.as_deref(), Some("app=x"));
        assert!(watches[0].allow_bookmarks);
        assert!(
            matches!(watches[0].timeout_seconds, Some(261..=319)),
            "{watches:?}"
        );
    }

    #[test]
    fn a_watch_that_ends_resumes_from_the_last_seen_version_without_relisting() {
        let first = vec![
            Ok(Event::Added(cm("a", "11"))),
            Ok(Event::Modified(cm("a", "12"))),
        ];
        let second = vec![Ok(Event::Deleted(cm("a", "13")))];
        let (mut w, fake) = watcher(vec![page(vec![], "10", None)], vec![Ok(first), Ok(second)]);
        let events: Vec<_> = (0..4).map(|_| block_on(w.next())).collect();
        assert_eq!(events[3], Ok(WatcherEvent::Deleted(cm("a", "13"))));
        assert_eq!(watched_versions(&fake), ["10", "12"]);
        assert_eq!(fake.calls.lock().unwrap().0.len(), 1);
    }

    #[test]
    fn a_bookmark_advances_the_resume_version_silently() {
        let bookmark = Event::Bookmark {
            resource_version: "20".into(),
        };
        let watches = vec![
            Ok(vec![Ok(bookmark)]),
            Ok(vec![Ok(Event::Added(cm("x", "21")))]),
        ];
        let (mut w, fake) = watcher(vec![page(vec![], "10", None)], watches);
        block_on(w.next()).unwrap();
        assert_eq!(block_on(w.next()), Ok(WatcherEvent::Applied(cm("x", "21"))));
        assert_eq!(watched_versions(&fake), ["10", "20"]);
    }

    #[test]
    fn an_expired_watch_relists_and_restarts() {
        let pages = vec![
            page(vec![cm("a", "5")], "10", None),
            page(vec![cm("b", "25")], "30", None),
        ];
        let (mut w, fake) = watcher(pages, vec![Ok(vec![Err(Error::Expired("too old".into()))])]);
        block_on(w.next()).unwrap();
        assert_eq!(
            block_on(w.next()),
            Ok(WatcherEvent::Restarted(vec![cm("b", "25")]))
        );
        assert_eq!(fake.calls.lock().unwrap().0.len(), 2);
    }

    #[test]
    fn an_expired_continue_token_relists_from_the_start_dropping_partial_pages() {
        let gone = Error::Api {
            code: 410,
            reason: "Expired".into(),
            message: String::new(),
            retry_after: None,
        };
        let pages = vec![
            page(vec![cm("a", "5")], "", Some("c1")),
            Err(gone),
            page(vec![cm("b", "7")], "8", None),
        ];
        let (mut w, fake) = watcher(pages, vec![]);
        assert_eq!(
            block_on(w.next()),
            Ok(WatcherEvent::Restarted(vec![cm("b", "7")]))
        );
        let lists = fake.calls.lock().unwrap().0.clone();
        let tokens: Vec<_> = lists.into_iter().map(|p| p.continue_token).collect();
        assert_eq!(tokens, [None, Some("c1".to_owned()), None]);
    }

    #[test]
    fn errors_are_surfaced_backoff_grows_and_success_resets_it() {
        let mut pages: Vec<Page> = (0..3).map(|_| Err(server_error())).collect();
        pages.push(page(vec![], "1", None));
        let (mut w, _) = watcher(pages, vec![Err(server_error())]);
        let start = Instant::now();
        for failures in 1..=3 {
            assert_eq!(block_on(w.next()), Err(server_error()));
            assert_eq!(w.failures(), failures);
        }
        assert!(block_on(w.next()).is_ok());
        // Waited at least 1 + 2 + 4 ms of backoff before the list that succeeded.
        assert!(start.elapsed() >= Duration::from_millis(7));
        assert_eq!(w.failures(), 0);
        assert_eq!(block_on(w.next()), Err(server_error()));
        assert_eq!(w.failures(), 1, "the backoff starts over after a success");
    }

    #[test]
    fn a_watch_closed_at_once_without_events_backs_off_instead_of_spinning() {
        let (mut w, _) = watcher(vec![page(vec![], "10", None)], vec![Ok(vec![])]);
        block_on(w.next()).unwrap();
        assert!(block_on(w.step()).is_none(), "opens the watch");
        assert!(block_on(w.step()).is_none(), "the watch ends");
        assert_eq!(w.failures(), 1);
        assert!(w.retry_at.is_some());
    }
}
