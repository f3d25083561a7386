//! Watcher: keeps a local view of a collection up to date with LIST then WATCH, as an explicit
//! state machine (`Empty → Listing → Watching{rv}`; 410 Gone → `Empty`) advanced by one `step`.
//!
//! A relist is reported object by object as its pages arrive (`Relisting`, `Listed`…,
//! `Relisted`), so the watcher never holds more than one page of decoded objects, however large
//! the collection: a consumer projects each object and drops it. Only `Relisted` says that the
//! list is complete, so only then may a consumer treat what was not listed as gone.
//!
//! The watcher knows nothing of HTTP: it drives any [`ListWatch`] source, so it is tested with
//! a scripted fake and the client implements the trait with a few lines of glue.

use std::time::{Duration, Instant};

use super::backoff::Backoff;
use super::change::Change;
use super::hearing::Hearing;
use super::list_watch::{EventStream, ListWatch};
pub use super::watcher_config::WatcherConfig;
use crate::kube::api::{ObjectList, Resource};
use crate::kube::{Error, ListParams, WatchEvent, WatchParams};
use crate::random::{self, Rng};
use smol::future::FutureExt as _;

/// The watch timeout's jitter factor, as client-go's reflector spreads its own.
pub const WATCH_TIMEOUT_JITTER: f64 = 0.2;
/// A watch that ends sooner than this without one event is treated as a failure, so a server
/// closing watches at once cannot spin the watcher (client-go's "very short watch", 1 s).
pub const SHORT_WATCH: Duration = Duration::from_secs(1);

enum State<K, S> {
    /// Nothing known: the next step lists from the start.
    Empty,
    /// A relist in progress: `page` is what is left to report of the page last fetched, and
    /// `continue_token` fetches the next one (`None`: that page was the last).
    Listing {
        page: std::vec::IntoIter<K>,
        continue_token: Option<String>,
        resource_version: String,
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
    /// When the stream last delivered an event (or opened).
    last_event: Instant,
}

/// Lists then watches one collection, forever; see the module docs.
pub struct Watcher<K: Resource, S: ListWatch<K>> {
    source: S,
    config: WatcherConfig,
    state: State<K, S::Stream>,
    retry_at: Option<Instant>,
    /// The recoveries of the server known when `retry_at` was set.
    recoveries_seen: u64,
    backoff: Backoff,
    jitter: Rng,
    hearing: Hearing,
}

impl<K: Resource, S: ListWatch<K>> Watcher<K, S> {
    pub fn new(source: S, config: WatcherConfig) -> Self {
        let backoff = Backoff::new(config.backoff_initial, config.backoff_max);
        let hearing = Hearing::new(source.register_health(&describe::<K>(&config)));
        Watcher {
            hearing,
            source,
            config,
            state: State::Empty,
            retry_at: None,
            recoveries_seen: 0,
            backoff,
            jitter: random::rng(),
        }
    }

    /// The next event. Errors are returned once each; the following call first waits out
    /// the backoff. Cancelling this future loses nothing but the wait already done.
    pub async fn next(&mut self) -> Result<Change<K>, Error> {
        loop {
            if let Some(at) = self.retry_at {
                if !self.wait_out(at).await {
                    continue;
                }
                self.retry_at = None;
            }
            if let Some(result) = self.step().await {
                return result;
            }
        }
    }

    /// Waits until `at`; true once it came. False when the server answered again first (its
    /// [`Recovery`](super::recovery::Recovery)): the retry then comes after a random part of the
    /// recovery spread, if sooner.
    async fn wait_out(&mut self, at: Instant) -> bool {
        let clock = self.config.clock.clone();
        let Some(recovery) = self.config.recovery.clone() else {
            clock.sleep_until(at).await;
            return true;
        };
        let seen = self.recoveries_seen;
        let backoff = async {
            clock.sleep_until(at).await;
            true
        };
        let answered = async {
            recovery.after(seen).await;
            false
        };
        if backoff.or(answered).await {
            return true;
        }
        self.recoveries_seen = recovery.count();
        let soon = clock.now() + self.config.recovery_spread.mul_f64(self.jitter.f64());
        self.retry_at = Some(at.min(soon));
        false
    }

    /// Consecutive failures since the last success (drives the backoff).
    pub fn failures(&self) -> u32 {
        self.backoff.failures()
    }

    /// Objects of the list page being reported that are still to come: 0 outside a relist and
    /// once a page's last object has been reported.
    pub fn page_remaining(&self) -> usize {
        match &self.state {
            State::Listing { page, .. } => page.len(),
            _ => 0,
        }
    }

    /// Advances the state machine by one request or one watch event.
    pub async fn step(&mut self) -> Option<Result<Change<K>, Error>> {
        match &mut self.state {
            State::Empty => self.step_first_page().await,
            State::Listing { .. } => self.step_listing().await,
            State::Watching { stream: None, .. } => self.step_open_watch().await,
            State::Watching {
                stream: Some(open), ..
            } => {
                let received = open.stream.next().await;
                self.step_watch_event(received)
            }
        }
    }

    fn list_params(&self, continue_token: Option<String>) -> ListParams {
        ListParams {
            selectors: self.config.selectors.clone(),
            limit: Some(self.config.page_size),
            continue_token,
            ..ListParams::default()
        }
    }

    /// Fetches the first page of a relist, which then begins.
    async fn step_first_page(&mut self) -> Option<Result<Change<K>, Error>> {
        let page = self.source.list(&self.list_params(None)).await;
        self.hearing.listed(&page);
        let page = match page {
            Ok(page) => page,
            Err(e) => return self.failed(e),
        };
        self.state = listing(page);
        Some(Ok(Change::Relisting))
    }

    /// Reports the next listed object, fetches the next page, or ends the relist.
    async fn step_listing(&mut self) -> Option<Result<Change<K>, Error>> {
        let State::Listing {
            page,
            continue_token,
            resource_version,
        } = &mut self.state
        else {
            return None;
        };
        if let Some(object) = page.next() {
            return Some(Ok(Change::Listed(object)));
        }
        let Some(token) = continue_token.clone() else {
            self.state = State::Watching {
                resource_version: std::mem::take(resource_version),
                stream: None,
            };
            self.backoff.reset();
            return Some(Ok(Change::Relisted));
        };
        let next = self.source.list(&self.list_params(Some(token))).await;
        self.hearing.listed(&next);
        match next {
            Ok(next) => {
                self.state = listing(next);
                None
            }
            Err(e) => self.failed(e),
        }
    }

    async fn step_open_watch(&mut self) -> Option<Result<Change<K>, Error>> {
        let State::Watching {
            resource_version, ..
        } = &self.state
        else {
            return None;
        };
        let params = WatchParams {
            selectors: self.config.selectors.clone(),
            resource_version: Some(resource_version.clone()),
            timeout_seconds: Some(self.jittered_timeout()),
            allow_bookmarks: true,
        };
        match self.source.watch(&params).await {
            Ok(stream) => {
                if let State::Watching { stream: slot, .. } = &mut self.state {
                    let now = self.config.clock.now();
                    *slot = Some(OpenWatch {
                        stream,
                        opened: now,
                        events: 0,
                        last_event: now,
                    });
                }
                None
            }
            Err(e) => {
                self.hearing.dial_failed(&e, self.config.clock.now());
                self.failed(e)
            }
        }
    }

    fn step_watch_event(
        &mut self,
        received: Option<Result<WatchEvent<K>, Error>>,
    ) -> Option<Result<Change<K>, Error>> {
        let State::Watching {
            resource_version,
            stream,
        } = &mut self.state
        else {
            return None;
        };
        let now = self.config.clock.now();
        let quiet_since = stream.as_ref().map_or(now, |w| w.last_event);
        self.hearing.streamed(&received, quiet_since);
        let event = match received {
            Some(Ok(event)) => event,
            Some(Err(e)) => {
                *stream = None;
                return self.failed(e);
            }
            None => {
                let short_and_empty = stream.take().is_some_and(|w| {
                    w.events == 0 && now.saturating_duration_since(w.opened) < SHORT_WATCH
                });
                if short_and_empty {
                    self.schedule_retry();
                }
                return None;
            }
        };
        if let Some(open) = stream {
            open.events += 1;
            open.last_event = now;
        }
        self.backoff.reset();
        let (new_version, output) = match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                (version_of(&o), Some(Change::Applied(o)))
            }
            WatchEvent::Deleted(o) => (version_of(&o), Some(Change::Deleted(o))),
            WatchEvent::Bookmark { resource_version } => (Some(resource_version), None),
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
    fn failed(&mut self, error: Error) -> Option<Result<Change<K>, Error>> {
        if self.resumed_quietly(&error) {
            return None;
        }
        self.schedule_retry();
        if error.code() == Some(410) {
            log::info!("{} list/watch expired, relisting: {error}", K::KIND);
            self.spread_relist();
            self.state = State::Empty;
            return None;
        }
        Some(Err(error))
    }

    /// A watch given up for silence or suspicion resumes from its resourceVersion on a new
    /// connection (no relist), quietly; silence also makes the client's other connections
    /// suspect. Whether `error` was one of those.
    fn resumed_quietly(&mut self, error: &Error) -> bool {
        let what = describe::<K>(&self.config);
        let from = match &self.state {
            State::Watching {
                resource_version, ..
            } => resource_version.clone(),
            _ => String::new(),
        };
        match error {
            Error::Silent(why) => {
                log::warn!(
                    "watch of {what}: {why}; resuming from resourceVersion {from} on a new connection"
                );
                self.hearing
                    .suspect(&format!("the watch of {what} heard nothing"));
                self.schedule_retry();
            }
            Error::Suspect(_) => {
                log::info!(
                    "watch of {what} resumes from resourceVersion {from} on a new connection"
                );
                self.retry_at = None;
            }
            _ => return false,
        }
        true
    }

    fn schedule_retry(&mut self) {
        self.recoveries_seen = (self.config.recovery.as_ref()).map_or(0, |r| r.count());
        self.retry_at = Some(self.config.clock.now() + self.backoff.next_delay());
    }

    /// With a relist spread, the relist after a 410 waits a uniform random part of it.
    fn spread_relist(&mut self) {
        let spread = self.config.relist_spread;
        if spread.is_zero() {
            return;
        }
        let delay = spread.mul_f64(self.jitter.f64());
        self.retry_at = Some(self.config.clock.now() + delay);
    }

    /// The watch timeout + up to 20 %, so watches of many replicas do not all end together.
    fn jittered_timeout(&mut self) -> u32 {
        let timeout = random::jitter(
            self.config.watch_timeout,
            WATCH_TIMEOUT_JITTER,
            &mut self.jitter,
        );
        timeout.as_secs().max(1) as u32
    }
}

/// The watch's name in logs and deafness reports: the kind and its selectors.
fn describe<K: Resource>(config: &WatcherConfig) -> String {
    let selectors: Vec<&str> = [&config.selectors.labels, &config.selectors.fields]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    match selectors.as_slice() {
        [] => K::KIND.to_owned(),
        some => format!("{} ({})", K::KIND, some.join(", ")),
    }
}

/// The state of a relist that has just fetched `page`.
fn listing<K, S>(page: ObjectList<K>) -> State<K, S> {
    State::Listing {
        page: page.items.into_iter(),
        continue_token: page.metadata.continue_token.filter(|t| !t.is_empty()),
        resource_version: page.metadata.resource_version.unwrap_or_default(),
    }
}

fn version_of<K: Resource>(object: &K) -> Option<String> {
    object.metadata().resource_version.clone()
}

#[cfg(test)]
mod tests;
