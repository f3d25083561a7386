use super::*;
use crate::kube::reply_head::MAX_REPLY_HEAD_BYTES;
use crate::property::{self, Pieces};

/// Replies a real kube-apiserver sent (`fuzz/seeds/reply/`; `fuzz/README.md` says how they
/// were captured): a GET, a LIST page, a 404 `Status` and a TokenReview answered with
/// Content-Length, and a LIST of a 24 KiB ConfigMap answered chunked.
const GET: &[u8] = include_bytes!("../../../fuzz/seeds/reply/get-namespace.http");
const LIST: &[u8] = include_bytes!("../../../fuzz/seeds/reply/list-namespaces.http");
const NOT_FOUND: &[u8] = include_bytes!("../../../fuzz/seeds/reply/not-found.http");
const REVIEW: &[u8] = include_bytes!("../../../fuzz/seeds/reply/tokenreview.http");
const CHUNKED: &[u8] = include_bytes!("../../../fuzz/seeds/reply/list-configmaps.http");
const SEEDS: [(&[u8], BodyLimit); 5] = [
    (GET, BodyLimit::Object),
    (LIST, BodyLimit::List(2)),
    (NOT_FOUND, BodyLimit::Object),
    (REVIEW, BodyLimit::Object),
    (CHUNKED, BodyLimit::List(500)),
];

fn decode(pieces: Pieces, limit: BodyLimit) -> Result<(u16, Vec<u8>), Error> {
    smol::block_on(decode_reply(pieces, limit))
}

fn transport_error(result: Result<(u16, Vec<u8>), Error>) -> String {
    match result {
        Err(Error::Transport(message)) => message,
        other => panic!("expected a transport error, got {other:?}"),
    }
}

#[test]
fn real_replies_decode_whole() {
    for (seed, limit) in SEEDS {
        let (code, body) = decode(Pieces::of(seed, 1500), limit).expect("decodes");
        assert!(matches!(code, 200 | 201 | 404), "{code}");
        let json: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert!(json["kind"].is_string(), "{json}");
    }
}

#[test]
fn a_status_line_that_never_ends_is_cut_at_the_head_limit() {
    let mut endless = b"HTTP/1.1 200 ".to_vec();
    endless.extend(std::iter::repeat_n(b'O', 10 * 1024 * 1024));
    let message = transport_error(decode(Pieces::of(&endless, 64 * 1024), BodyLimit::Object));
    assert!(
        message.contains(&MAX_REPLY_HEAD_BYTES.to_string()),
        "{message}"
    );
}

#[test]
fn a_head_too_large_or_with_too_many_headers_is_refused_by_async_h1() {
    let mut big = b"HTTP/1.1 200 OK\r\n".to_vec();
    for n in 0..100 {
        let text = "x".repeat(100);
        big.extend(format!("Warning: 299 - \"deprecated field {n}: {text}\"\r\n").bytes());
    }
    big.extend(b"Content-Length: 0\r\n\r\n");
    let message = transport_error(decode(Pieces::of(&big, 1024), BodyLimit::Object));
    assert!(message.contains("8kb"), "{message}");
    let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
    for n in 0..129 {
        many.extend(format!("X-{n}: v\r\n").bytes());
    }
    many.extend(b"\r\n");
    let message = transport_error(decode(Pieces::of(&many, 1024), BodyLimit::Object));
    assert!(message.contains("too many headers"), "{message}");
}

#[test]
fn an_absurd_chunk_or_an_endless_body_stops_at_the_object_limit() {
    let mut absurd =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8000000000000000\r\n".to_vec();
    absurd.extend(std::iter::repeat_n(b'x', MAX_OBJECT_BYTES + 64 * 1024));
    let message = transport_error(decode(Pieces::of(&absurd, 64 * 1024), BodyLimit::Object));
    assert!(message.contains(&MAX_OBJECT_BYTES.to_string()), "{message}");
    let overflow = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1ffffffffffffffff\r\n";
    assert!(decode(Pieces::of(overflow, 64), BodyLimit::Object).is_err());
    let announced = b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n{}";
    let message = transport_error(decode(Pieces::of(announced, 64), BodyLimit::Object));
    assert!(message.contains("Content-Length"), "{message}");
}

#[test]
fn an_endless_list_stops_at_its_page_size_but_a_page_of_large_objects_decodes() {
    let mut endless = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    let mut body = br#"{"kind":"NamespaceList","items":["#.to_vec();
    body.extend(br#"{"metadata":{"name":"n"}},"#.repeat(1000));
    endless.extend(format!("{:x}\r\n", body.len()).bytes());
    endless.extend(&body);
    let message = transport_error(decode(Pieces::of(&endless, 4096), BodyLimit::List(500)));
    assert!(message.contains("500 items"), "{message}");

    let data = "x".repeat(1536 * 1024);
    let item = format!(r#"{{"metadata":{{"name":"big"}},"data":{{"k":"{data}"}}}}"#);
    let page = format!(r#"{{"kind":"ConfigMapList","items":[{item},{item},{item}]}}"#);
    let mut reply = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    reply.extend(format!("{:x}\r\n", page.len()).bytes());
    reply.extend(page.bytes());
    reply.extend(b"\r\n0\r\n\r\n");
    let (_, body) = decode(Pieces::of(&reply, 64 * 1024), BodyLimit::List(500)).expect("decodes");
    assert_eq!(body.len(), page.len(), "three 1.5 MiB objects in one page");
}

/// Found by the property test: a chunked reply whose trailer section is cut short stalled
/// async-h1's decoder without a wake-up, until a timeout. It must end at once, in an error:
/// polled for as long as it wakes itself, never waiting for a wake-up nothing would send.
#[test]
fn a_trailer_cut_short_ends_the_reply_at_once() {
    let cut = include_bytes!("../../../fuzz/regressions/reply/trailer-cut-short.http");
    let decoded = poll_while_woken(decode_reply(Pieces::of(cut, cut.len()), BodyLimit::Object));
    assert!(
        matches!(decoded, Some(Err(Error::Transport(_)))),
        "{decoded:?} (None: stalled without a wake-up)"
    );
}

/// Polls `future` for as long as it wakes itself: its output, or `None` once it returns
/// `Pending` with no wake-up arranged. Nothing else could wake it here: the reply is in memory.
fn poll_while_woken<T>(future: impl std::future::Future<Output = T>) -> Option<T> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::task::{Context, Poll, Wake, Waker};
    struct Woken(AtomicBool);
    impl Wake for Woken {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let woken = Arc::new(Woken(AtomicBool::new(false)));
    let waker = Waker::from(Arc::clone(&woken));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        woken.0.store(false, Ordering::SeqCst);
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return Some(output);
        }
        if !woken.0.load(Ordering::SeqCst) {
            return None;
        }
    }
}

/// Found by the fuzzer: a header value that is UTF-8 but not ASCII made http-types panic
/// while async-h1 decoded the head. It must be an error naming the problem.
#[test]
fn a_head_that_is_not_ascii_is_an_error_not_a_panic() {
    let found = include_bytes!("../../../fuzz/regressions/reply/non-ascii-header-value.http");
    let message = transport_error(decode(Pieces::of(found, found.len()), BodyLimit::Object));
    assert!(message.contains("not ASCII (0xd3)"), "{message}");
    let reply = "HTTP/1.1 200 OK\r\nWarning: 299 - \"é\"\r\nContent-Length: 2\r\n\r\n{}";
    let message = transport_error(decode(Pieces::of(reply.as_bytes(), 7), BodyLimit::Object));
    assert!(message.contains("not ASCII"), "{message}");
}

#[test]
fn the_limit_follows_the_request() {
    use crate::kube::request::RequestSpec;
    use http_types::Method;
    let mut list = RequestSpec::new(Method::Get, "/api/v1/namespaces".into(), "list");
    assert_eq!(list.body_limit(), BodyLimit::List(MAX_UNPAGED_LIST_ITEMS));
    list.query.push(("limit", "500".into()));
    assert_eq!(list.body_limit(), BodyLimit::List(500));
    let get = RequestSpec::new(Method::Get, "/api/v1/namespaces/a".into(), "get");
    assert_eq!(get.body_limit(), BodyLimit::Object);
}

/// However a real reply is split into reads, the same body comes out.
#[test]
fn property_real_replies_split_anywhere_decode_the_same() {
    property::check("reply splits", |random| {
        let (seed, limit) = SEEDS[random.below(SEEDS.len())];
        let whole = decode(Pieces::of(seed, seed.len()), limit).expect("decodes");
        let split = decode(Pieces::random_split(seed, random), limit).expect("decodes");
        assert_eq!(split, whole);
    });
}

/// Mangled replies end in a body within the limits or an error; never a panic.
#[test]
fn property_mutated_replies_stay_within_the_limits() {
    property::check("reply mutations", |random| {
        let (seed, limit) = SEEDS[random.below(SEEDS.len())];
        let input = property::mutate(seed, random);
        if let Ok((_, body)) = decode(Pieces::random_split(&input, random), limit) {
            match limit {
                BodyLimit::Object => assert!(body.len() <= MAX_OBJECT_BYTES),
                BodyLimit::List(_) => {
                    let mut meter = ListMeter::new(MAX_UNPAGED_LIST_ITEMS);
                    meter
                        .feed(&body)
                        .expect("a body that passed measures again");
                }
            }
        }
    });
}

mod watch_lines {
    use super::*;
    use crate::kube::api::Namespace;
    use crate::kube::{WatchEvent, WatchStream};

    /// A watch body a real kube-apiserver sent (the event lines, de-chunked).
    const WATCH: &[u8] = include_bytes!("../../../fuzz/seeds/watch/namespaces.jsonl");

    fn events(pieces: Pieces) -> (Vec<Result<WatchEvent<Namespace>, Error>>, usize) {
        let mut stream = WatchStream::<Namespace>::from_reader(pieces);
        smol::block_on(async {
            let mut out = Vec::new();
            let mut capacity = 0;
            while let Some(event) = stream.next().await {
                capacity = capacity.max(stream.buffer_capacity());
                out.push(event);
            }
            (out, capacity.max(stream.buffer_capacity()))
        })
    }

    #[test]
    fn a_line_that_never_ends_is_cut_at_the_limit_holding_no_more() {
        let endless = vec![b'x'; MAX_WATCH_LINE_BYTES + 1024 * 1024];
        let (events, capacity) = events(Pieces::of(&endless, 64 * 1024));
        let [Err(Error::Transport(message))] = &events[..] else {
            panic!("{events:?}");
        };
        assert!(
            message.contains(&MAX_WATCH_LINE_BYTES.to_string()),
            "{message}"
        );
        assert!(
            capacity <= MAX_WATCH_LINE_BYTES + 1,
            "held {capacity} bytes"
        );
    }

    #[test]
    fn an_event_as_large_as_etcd_stores_decodes() {
        let data = "x".repeat(1536 * 1024);
        let event = format!(
            r#"{{"type":"ADDED","object":{{"metadata":{{"name":"big","resourceVersion":"9"}},"status":{{"phase":"{data}"}}}}}}"#
        );
        let (events, _) = events(Pieces::of(format!("{event}\n").as_bytes(), 16 * 1024));
        assert!(
            matches!(&events[..], [Ok(WatchEvent::Added(_))]),
            "{:?}",
            events.len()
        );
    }

    #[test]
    fn property_a_real_watch_split_anywhere_yields_the_same_events() {
        let (whole, _) = events(Pieces::of(WATCH, WATCH.len()));
        assert_eq!(
            whole.len(),
            WATCH
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .count()
        );
        assert!(whole.iter().all(Result::is_ok), "{whole:?}");
        property::check("watch splits", |random| {
            let (split, _) = events(Pieces::random_split(WATCH, random));
            assert_eq!(split, whole);
        });
    }

    #[test]
    fn property_mutated_watches_end_in_events_or_one_error() {
        property::check("watch mutations", |random| {
            let input = property::mutate(WATCH, random);
            let (events, capacity) = events(Pieces::random_split(&input, random));
            let errors = events.iter().filter(|e| e.is_err()).count();
            assert!(
                errors <= 1,
                "the stream ends at its first error: {events:?}"
            );
            assert!(
                events
                    .last()
                    .is_none_or(|_| errors == 0 || events.last().is_some_and(Result::is_err))
            );
            assert!(
                capacity <= MAX_WATCH_LINE_BYTES + 1,
                "held {capacity} bytes"
            );
        });
    }
}
