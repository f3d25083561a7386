use super::*;
use crate::property::{self, Pieces};
use std::time::Duration;

/// What the kubelet sends for an HTTP probe (Go's client with keep-alives off).
const PROBE: &str = include_str!("../../../fuzz/seeds/request_head/kubelet-probe.http");
/// What Prometheus sends to scrape an HTTPS target with a ServiceAccount token.
const SCRAPE: &str = include_str!("../../../fuzz/seeds/request_head/prometheus-scrape.http");

fn complete(text: &str) -> RequestHead {
    match parse(text.as_bytes()) {
        Parsed::Complete(head, used) => {
            assert_eq!(used, text.len());
            head
        }
        other => panic!("{other:?}"),
    }
}

fn rejected(bytes: &[u8]) -> Rejection {
    match parse(bytes) {
        Parsed::Rejected(rejection) => rejection,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_probe_and_a_scrape_parse() {
    let probe = complete(PROBE);
    assert_eq!(probe.method, Method::Get);
    assert_eq!(probe.path, "/healthz");
    assert!(!probe.keep_alive, "the kubelet asked to close");
    let scrape = complete(SCRAPE);
    assert_eq!(scrape.path, "/metrics");
    assert!(scrape.keep_alive);
    assert!(
        scrape
            .authorization
            .is_some_and(|a| a.starts_with("Bearer eyJ"))
    );
    let old = complete("HEAD /readyz?verbose=1 HTTP/1.0\r\n\r\n");
    assert_eq!((old.method, old.path.as_str()), (Method::Head, "/readyz"));
    assert!(!old.keep_alive, "HTTP/1.0 closes");
}

#[test]
fn a_partial_head_waits_for_more() {
    for cut in [0, 1, 15, PROBE.len() - 1] {
        assert_eq!(
            parse(&PROBE.as_bytes()[..cut]),
            Parsed::Partial,
            "cut at {cut}"
        );
    }
}

#[test]
fn oversized_lines_heads_and_header_counts_are_refused_naming_the_limit() {
    let long_line = format!(
        "GET /{} HTTP/1.1\r\n\r\n",
        "a".repeat(MAX_REQUEST_LINE_BYTES)
    );
    let line = rejected(long_line.as_bytes());
    assert_eq!(line.status, StatusCode::UriTooLong);
    assert!(
        line.why.contains(&MAX_REQUEST_LINE_BYTES.to_string()),
        "{}",
        line.why
    );
    let endless_line = vec![b'a'; MAX_REQUEST_LINE_BYTES + 1];
    assert_eq!(rejected(&endless_line).status, StatusCode::UriTooLong);

    let big_header = format!(
        "GET / HTTP/1.1\r\nX-Big: {}\r\n",
        "b".repeat(MAX_HEAD_BYTES)
    );
    let head = rejected(&big_header.as_bytes()[..MAX_HEAD_BYTES]);
    assert_eq!(head.status, StatusCode::RequestHeaderFieldsTooLarge);
    assert!(
        head.why.contains(&MAX_HEAD_BYTES.to_string()),
        "{}",
        head.why
    );

    let many: String = (0..=MAX_HEADERS).map(|n| format!("X-{n}: v\r\n")).collect();
    let count = rejected(format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes());
    assert_eq!(count.status, StatusCode::RequestHeaderFieldsTooLarge);
    assert!(
        count.why.contains(&MAX_HEADERS.to_string()),
        "{}",
        count.why
    );
}

#[test]
fn bodies_foreign_targets_and_garbage_are_refused() {
    let with_body = "POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
    assert_eq!(
        rejected(with_body.as_bytes()).status,
        StatusCode::PayloadTooLarge
    );
    let chunked = "GET /healthz HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(
        rejected(chunked.as_bytes()).status,
        StatusCode::PayloadTooLarge
    );
    let empty_body = complete("GET /healthz HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(empty_body.path, "/healthz");
    let proxy_form = "GET http://example.com/ HTTP/1.1\r\n\r\n";
    assert_eq!(
        rejected(proxy_form.as_bytes()).status,
        StatusCode::BadRequest
    );
    assert_eq!(
        rejected(b"\x16\x03\x01\x02\x00\x01").status,
        StatusCode::BadRequest
    );
    assert_eq!(complete("DELETE / HTTP/1.1\r\n\r\n").method, Method::Other);
}

fn read_all(pieces: Pieces, deadlines: Deadlines) -> (HeadRead, Vec<u8>) {
    let mut stream = pieces;
    let mut buf = Vec::new();
    let read = smol::block_on(read(&mut stream, &mut buf, deadlines));
    (read, buf)
}

fn soon(seconds: u64) -> Deadlines {
    Deadlines {
        idle_until: Instant::now() + Duration::from_secs(seconds),
        head_by: None,
    }
}

#[test]
fn an_endless_header_costs_no_more_than_the_head_limit() {
    let mut endless = b"GET / HTTP/1.1\r\nX-Flood: ".to_vec();
    endless.extend(std::iter::repeat_n(b'x', 10 * 1024 * 1024));
    let (read, buf) = read_all(Pieces::of(&endless, 64 * 1024), soon(5));
    let HeadRead::Rejected(rejection) = read else {
        panic!("{read:?}");
    };
    assert_eq!(rejection.status, StatusCode::RequestHeaderFieldsTooLarge);
    assert!(
        buf.capacity() <= MAX_HEAD_BYTES,
        "held {} bytes",
        buf.capacity()
    );
}

#[test]
fn a_silent_or_slow_client_runs_out_of_time() {
    let silent = Pieces::stalled(Vec::new());
    let (read, _) = read_all(silent, soon(0));
    assert_eq!(read, HeadRead::TimedOut);
    let slow = Pieces::stalled(b"GET /healthz HT".to_vec());
    let started = Instant::now();
    let head_by = Some(started + Duration::from_millis(50));
    let (read, _) = read_all(
        slow,
        Deadlines {
            idle_until: started,
            head_by,
        },
    );
    assert_eq!(read, HeadRead::TimedOut);
}

#[test]
fn pipelined_requests_are_read_one_after_the_other() {
    let two = format!("{PROBE}{SCRAPE}");
    let mut stream = Pieces::of(two.as_bytes(), 4096);
    let mut buf = Vec::new();
    smol::block_on(async {
        let first = read(&mut stream, &mut buf, soon(5)).await;
        let second = read(&mut stream, &mut buf, soon(5)).await;
        assert!(matches!(first, HeadRead::Head(h) if h.path == "/healthz"));
        assert!(matches!(second, HeadRead::Head(h) if h.path == "/metrics"));
        assert_eq!(read(&mut stream, &mut buf, soon(5)).await, HeadRead::Closed);
    });
}

/// However the bytes are split, the same head comes out.
#[test]
fn property_splitting_a_request_anywhere_reads_the_same_head() {
    property::check("serve head splits", |random| {
        let text = [PROBE, SCRAPE][random.below(2)];
        let expected = complete(text);
        let pieces = Pieces::random_split(text.as_bytes(), random);
        let (read, _) = read_all(pieces, soon(5));
        assert_eq!(read, HeadRead::Head(expected), "split of {text:?}");
    });
}

/// Mutated real requests never panic the parser and never make it hold more than the limit.
#[test]
fn property_mutated_requests_parse_within_the_limits() {
    property::check("serve head mutations", |random| {
        let seed = [PROBE, SCRAPE][random.below(2)].as_bytes();
        let input = property::mutate(seed, random);
        match parse(&input) {
            Parsed::Partial => assert!(input.len() < MAX_HEAD_BYTES, "{} bytes", input.len()),
            Parsed::Complete(_, used) => assert!(used <= MAX_HEAD_BYTES),
            Parsed::Rejected(rejection) => assert!(!rejection.why.is_empty()),
        }
    });
}
