//! Watcher tests, driven by a scripted in-memory source; in their own file so the watcher stays
//! short. The watcher's backoff and its watches' ages are on the source's manual clock, which
//! [`next`] moves from one wake to the next.

use super::*;
use crate::clock::ManualClock;
use crate::kube::api::{ConfigMap, ListMeta, ObjectMeta};
use crate::kube::client::DEFAULT_PAGE_SIZE;
use crate::runtime::Recovery;
use crate::testing::now_or_never;
use smol::block_on;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

type Page = Result<ObjectList<ConfigMap>, Error>;
type Events = Result<Vec<Result<WatchEvent<ConfigMap>, Error>>, Error>;

/// A scripted source: each LIST / WATCH takes the next scripted answer; calls are recorded.
#[derive(Default)]
struct Fake {
    script: Mutex<(VecDeque<Page>, VecDeque<Events>)>,
    calls: Mutex<(Vec<ListParams>, Vec<WatchParams>)>,
    time: ManualClock,
}

struct FakeStream(VecDeque<Result<WatchEvent<ConfigMap>, Error>>);

impl EventStream<ConfigMap> for FakeStream {
    async fn next(&mut self) -> Option<Result<WatchEvent<ConfigMap>, Error>> {
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

/// A watcher over a scripted source, on the source's manual clock, backing off 1 ms at first.
fn watcher(lists: Vec<Page>, watches: Vec<Events>) -> (Watcher<ConfigMap, Arc<Fake>>, Arc<Fake>) {
    let fake = Arc::new(Fake::default());
    *fake.script.lock().unwrap() = (lists.into(), watches.into());
    let config = WatcherConfig {
        backoff_initial: Duration::from_millis(1),
        backoff_max: Duration::from_secs(1),
        clock: fake.time.clock(),
        ..WatcherConfig::default().labels("app=x")
    };
    (Watcher::new(Arc::clone(&fake), config), fake)
}

/// The watcher's next event, its backoff waited out in virtual time.
fn next(w: &mut Watcher<ConfigMap, Arc<Fake>>) -> Result<Change<ConfigMap>, Error> {
    let time = w.source.time.clone();
    time.run(w.next())
}

/// The events of one relist, from `Relisting` to `Relisted`, each as the watcher reported it.
fn next_relist(w: &mut Watcher<ConfigMap, Arc<Fake>>) -> Vec<Change<ConfigMap>> {
    let mut events = vec![next(w).expect("a relist begins")];
    assert_eq!(events[0], Change::Relisting);
    while events.last() != Some(&Change::Relisted) {
        events.push(next(w).expect("the relist goes on"));
    }
    events
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
    let (mut w, fake) = watcher(pages, vec![Ok(vec![Ok(WatchEvent::Added(cm("c", "11")))])]);
    assert_eq!(
        next_relist(&mut w),
        Change::relist(vec![cm("a", "5"), cm("b", "9")])
    );
    assert_eq!(next(&mut w), Ok(Change::Applied(cm("c", "11"))));
    let (lists, watches) = fake.calls.lock().unwrap().clone();
    let tokens: Vec<_> = lists.iter().map(|p| p.continue_token.clone()).collect();
    assert_eq!(tokens, [None, Some("c1".to_owned())]);
    assert!(lists.iter().all(|p| p.limit == Some(DEFAULT_PAGE_SIZE)));
    assert_eq!(watches[0].resource_version.as_deref(), Some("10"));
    assert_eq!(watches[0].selectors.labels.as_deref(), Some("app=x"));
    assert!(watches[0].allow_bookmarks);
    assert!(
        matches!(watches[0].timeout_seconds, Some(45..=55)),
        "{watches:?}"
    );
}

#[test]
fn a_watch_that_ends_resumes_from_the_last_seen_version_without_relisting() {
    let first = vec![
        Ok(WatchEvent::Added(cm("a", "11"))),
        Ok(WatchEvent::Modified(cm("a", "12"))),
    ];
    let second = vec![Ok(WatchEvent::Deleted(cm("a", "13")))];
    let (mut w, fake) = watcher(vec![page(vec![], "10", None)], vec![Ok(first), Ok(second)]);
    next_relist(&mut w);
    let events: Vec<_> = (0..3).map(|_| next(&mut w)).collect();
    assert_eq!(events[2], Ok(Change::Deleted(cm("a", "13"))));
    assert_eq!(watched_versions(&fake), ["10", "12"]);
    assert_eq!(fake.calls.lock().unwrap().0.len(), 1);
}

#[test]
fn a_bookmark_advances_the_resume_version_silently() {
    let bookmark = WatchEvent::Bookmark {
        resource_version: "20".into(),
    };
    let watches = vec![
        Ok(vec![Ok(bookmark)]),
        Ok(vec![Ok(WatchEvent::Added(cm("x", "21")))]),
    ];
    let (mut w, fake) = watcher(vec![page(vec![], "10", None)], watches);
    next_relist(&mut w);
    assert_eq!(next(&mut w), Ok(Change::Applied(cm("x", "21"))));
    assert_eq!(watched_versions(&fake), ["10", "20"]);
}

#[test]
fn an_expired_watch_relists_and_restarts() {
    let pages = vec![
        page(vec![cm("a", "5")], "10", None),
        page(vec![cm("b", "25")], "30", None),
    ];
    let (mut w, fake) = watcher(pages, vec![Ok(vec![Err(Error::Expired("too old".into()))])]);
    next_relist(&mut w);
    assert_eq!(next_relist(&mut w), Change::relist(vec![cm("b", "25")]));
    assert_eq!(fake.calls.lock().unwrap().0.len(), 2);
}

#[test]
fn an_expired_continue_token_begins_the_relist_again() {
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
    assert_eq!(next(&mut w), Ok(Change::Relisting));
    assert_eq!(next(&mut w), Ok(Change::Listed(cm("a", "5"))));
    assert_eq!(
        next_relist(&mut w),
        Change::relist(vec![cm("b", "7")]),
        "the relist begins again, so a consumer drops what the abandoned one listed"
    );
    let lists = fake.calls.lock().unwrap().0.clone();
    let tokens: Vec<_> = lists.into_iter().map(|p| p.continue_token).collect();
    assert_eq!(tokens, [None, Some("c1".to_owned()), None]);
}

#[test]
fn errors_are_surfaced_backoff_grows_and_success_resets_it() {
    let mut pages: Vec<Page> = (0..3).map(|_| Err(server_error())).collect();
    pages.push(page(vec![], "1", None));
    let (mut w, fake) = watcher(pages, vec![Err(server_error())]);
    for failures in 1..=3 {
        assert_eq!(next(&mut w), Err(server_error()));
        assert_eq!(w.failures(), failures);
    }
    next_relist(&mut w);
    // Waited 1 + 2 + 4 ms of backoff, each jittered by up to as much again, before the list
    // that succeeded.
    let waited = fake.time.elapsed();
    let ms = Duration::from_millis;
    assert!(waited >= ms(7) && waited < ms(14), "{waited:?}");
    assert_eq!(w.failures(), 0);
    assert_eq!(next(&mut w), Err(server_error()));
    assert_eq!(w.failures(), 1, "the backoff starts over after a success");
}

#[test]
fn a_watch_closed_at_once_without_events_backs_off_instead_of_spinning() {
    let (mut w, _) = watcher(vec![page(vec![], "10", None)], vec![Ok(vec![])]);
    next_relist(&mut w);
    assert!(block_on(w.step()).is_none(), "opens the watch");
    assert!(block_on(w.step()).is_none(), "the watch ends");
    assert_eq!(w.failures(), 1);
    assert!(w.retry_at.is_some());
}

#[test]
fn a_watch_that_ends_empty_after_a_second_resumes_without_backing_off() {
    let (mut w, fake) = watcher(vec![page(vec![], "10", None)], vec![Ok(vec![])]);
    next_relist(&mut w);
    assert!(block_on(w.step()).is_none(), "opens the watch");
    fake.time.advance(SHORT_WATCH);
    assert!(block_on(w.step()).is_none(), "the watch ends");
    assert_eq!(w.failures(), 0);
    assert!(w.retry_at.is_none());
}

#[test]
fn a_relist_holds_one_page_and_reports_its_objects_as_they_arrive() {
    let pages = vec![
        page(vec![cm("a", "5"), cm("b", "6")], "", Some("c1")),
        page(vec![cm("c", "7")], "10", None),
    ];
    let (mut w, fake) = watcher(pages, vec![]);
    assert_eq!(w.page_remaining(), 0);
    assert_eq!(next(&mut w), Ok(Change::Relisting));
    assert_eq!(w.page_remaining(), 2);
    assert_eq!(next(&mut w), Ok(Change::Listed(cm("a", "5"))));
    assert_eq!(w.page_remaining(), 1);
    assert_eq!(next(&mut w), Ok(Change::Listed(cm("b", "6"))));
    assert_eq!(w.page_remaining(), 0, "the first page is all reported");
    assert_eq!(
        fake.calls.lock().unwrap().0.len(),
        1,
        "the second page is fetched once the first is reported"
    );
    assert_eq!(next(&mut w), Ok(Change::Listed(cm("c", "7"))));
    assert_eq!(w.page_remaining(), 0);
    assert_eq!(next(&mut w), Ok(Change::Relisted));
}

#[test]
fn a_failed_page_is_fetched_again_and_the_relist_goes_on() {
    let pages = vec![
        page(vec![cm("a", "5")], "", Some("c1")),
        Err(server_error()),
        page(vec![cm("b", "7")], "8", None),
    ];
    let (mut w, fake) = watcher(pages, vec![]);
    assert_eq!(next(&mut w), Ok(Change::Relisting));
    assert_eq!(next(&mut w), Ok(Change::Listed(cm("a", "5"))));
    assert_eq!(next(&mut w), Err(server_error()));
    assert_eq!(next(&mut w), Ok(Change::Listed(cm("b", "7"))));
    assert_eq!(next(&mut w), Ok(Change::Relisted));
    let lists = fake.calls.lock().unwrap().0.clone();
    let tokens: Vec<_> = lists.into_iter().map(|p| p.continue_token).collect();
    assert_eq!(tokens, [None, Some("c1".into()), Some("c1".into())]);
}

#[test]
fn a_relist_after_410_waits_a_random_part_of_its_spread_and_happens_once() {
    let pages = vec![
        page(vec![cm("a", "5")], "10", None),
        page(vec![cm("b", "25")], "30", None),
    ];
    let gone = Ok(vec![Err(Error::Expired(
        "the watch cache began anew".into(),
    ))]);
    let (mut w, fake) = watcher(pages, vec![gone]);
    w.config.relist_spread = Duration::from_secs(10);
    next_relist(&mut w);
    let listed = fake.time.elapsed();
    assert_eq!(next_relist(&mut w), Change::relist(vec![cm("b", "25")]));
    let waited = fake.time.elapsed() - listed;
    assert!(waited <= Duration::from_secs(10), "{waited:?}");
    assert_eq!(
        fake.calls.lock().unwrap().0.len(),
        2,
        "one relist for one 410"
    );
    // Spread over many watchers, the waits differ: they do not all relist at once.
    let waits: std::collections::BTreeSet<u128> = (0..8)
        .map(|_| {
            let gone = Ok(vec![Err(Error::Expired("gone".into()))]);
            let pages = vec![page(vec![], "1", None), page(vec![], "2", None)];
            let (mut w, fake) = watcher(pages, vec![gone]);
            w.config.relist_spread = Duration::from_secs(10);
            next_relist(&mut w);
            let listed = fake.time.elapsed();
            next_relist(&mut w);
            (fake.time.elapsed() - listed).as_millis()
        })
        .collect();
    assert!(waits.len() > 4, "{waits:?}");
}

/// A watcher whose every list fails (its script is empty), backing off 30 to 60 s, woken by
/// the recovery it returns within a spread of 2 s.
fn recovering_watcher() -> (Watcher<ConfigMap, Arc<Fake>>, Arc<Fake>, Recovery) {
    let (mut w, fake) = watcher(vec![], vec![]);
    w.backoff = Backoff::new(Duration::from_secs(30), Duration::from_secs(30));
    let recovery = Recovery::default();
    w.config.recovery = Some(recovery.clone());
    w.config.recovery_spread = Duration::from_secs(2);
    (w, fake, recovery)
}

#[test]
fn a_retry_waiting_out_its_backoff_comes_soon_once_the_server_answers_again() {
    let (mut w, fake, recovery) = recovering_watcher();
    let secs = Duration::from_secs;
    let lists = || fake.calls.lock().unwrap().0.len();
    recovery.unanswered();
    assert!(next(&mut w).is_err(), "the first list fails");
    assert_eq!(lists(), 1);
    let mut retry = std::pin::pin!(w.next());
    assert!(
        now_or_never(retry.as_mut()).is_none(),
        "waits out 30 to 60 s"
    );
    fake.time.advance(secs(5));
    assert!(now_or_never(retry.as_mut()).is_none(), "still backing off");
    assert_eq!(lists(), 1);
    recovery.answered();
    assert!(
        now_or_never(retry.as_mut()).is_none(),
        "a random part of the spread first"
    );
    fake.time.advance(secs(2));
    let retried = now_or_never(retry).expect("retried within the spread, not the backoff");
    assert!(retried.is_err(), "the script is still empty");
    assert_eq!(lists(), 2);
}

#[test]
fn a_retry_without_a_recovery_waits_out_its_backoff() {
    let (mut w, fake, recovery) = recovering_watcher();
    let secs = Duration::from_secs;
    assert!(next(&mut w).is_err());
    let mut retry = std::pin::pin!(w.next());
    // An answer with no failure before it is no recovery.
    recovery.answered();
    fake.time.advance(secs(29));
    assert!(
        now_or_never(retry.as_mut()).is_none(),
        "the backoff is at least 30 s"
    );
    fake.time.advance(secs(31));
    assert!(now_or_never(retry).is_some(), "the backoff is at most 60 s");
    assert_eq!(fake.calls.lock().unwrap().0.len(), 2);
}
