use super::*;

#[test]
fn only_a_non_empty_bearer_token_is_taken() {
    assert_eq!(bearer_token("Bearer abc"), Some("abc"));
    assert_eq!(bearer_token("bearer  abc "), Some("abc"));
    assert_eq!(bearer_token("Basic abc"), None);
    assert_eq!(bearer_token("Bearer "), None);
    assert_eq!(bearer_token("Bearer"), None);
}

#[test]
fn outcomes_map_to_401_403_and_allow() {
    assert_eq!(decision(Outcome::Allowed), Decision::Allow);
    assert!(matches!(
        decision(Outcome::Unauthenticated),
        Decision::Deny(StatusCode::Unauthorized, _)
    ));
    let Decision::Deny(status, message) = decision(Outcome::Forbidden("bob".into())) else {
        panic!("forbidden must deny");
    };
    assert_eq!(status, StatusCode::Forbidden);
    assert!(message.contains("bob") && message.contains("skiff-metrics-reader"));
}

/// A stand-in API server that answers every TokenReview (authenticated only for the token
/// `reader`) and every SubjectAccessReview (allowed), counting the reviews: `(url, reviews)`.
fn review_server() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::Ordering;
    let reviews = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = reviews.clone();
    let url = crate::testing::responder::serve(move |request| {
        counted.fetch_add(1, Ordering::Relaxed);
        let status = if request.path.contains("tokenreviews") {
            let known = request.body["spec"]["token"] == "reader";
            serde_json::json!({"authenticated": known, "user": {"username": "reader"}})
        } else {
            serde_json::json!({"allowed": true})
        };
        (201, serde_json::json!({ "status": status }))
    });
    (url, reviews)
}

/// Checks against the review server at `url`, on a clock that stands still: the new-token
/// budget does not refill while a test runs, however long it takes.
fn auth_against(url: &str) -> Arc<MetricsAuth> {
    let url = url.parse().expect("url");
    let client = crate::kube::Client::new(crate::kube::Config::new(url)).expect("client");
    MetricsAuth::with_clock(client, crate::clock::ManualClock::new().clock())
}

#[test]
fn random_tokens_get_a_few_reviews_a_second_and_then_429() {
    use std::sync::atomic::Ordering;
    let (url, reviews) = review_server();
    let auth = auth_against(&url);
    let now = Instant::now();
    let answers: Vec<Decision> = (0..40)
        .map(|n| smol::block_on(auth.check_at(Some(&format!("Bearer random-{n}")), now)))
        .collect();
    let refused = |status| {
        answers
            .iter()
            .filter(|d| matches!(d, Decision::Deny(s, _) if *s == status))
            .count()
    };
    let reviewed = reviews.load(Ordering::Relaxed);
    assert!(
        reviewed <= NEW_TOKEN_REVIEW_BURST as usize,
        "{reviewed} reviews for 40 random tokens"
    );
    assert!(
        refused(StatusCode::TooManyRequests) >= 40 - reviewed,
        "{answers:?}"
    );
    assert!(
        refused(StatusCode::Unauthorized) >= 1,
        "reviewed ones are refused: {answers:?}"
    );
}

#[test]
fn a_known_reader_is_reviewed_again_while_strangers_spend_the_budget() {
    let (url, _) = review_server();
    let auth = auth_against(&url);
    let start = Instant::now();
    let reader = Some("Bearer reader");
    assert_eq!(
        smol::block_on(auth.check_at(reader, start)),
        Decision::Allow
    );
    for n in 0..20 {
        smol::block_on(auth.check_at(Some(&format!("Bearer stranger-{n}")), start));
    }
    let stranger = smol::block_on(auth.check_at(Some("Bearer one-more"), start));
    assert!(
        matches!(stranger, Decision::Deny(StatusCode::TooManyRequests, _)),
        "the budget is spent: {stranger:?}"
    );
    let expired =
        start + super::super::review_cache::ALLOWED_TTL + std::time::Duration::from_secs(1);
    assert_eq!(
        smol::block_on(auth.check_at(reader, expired)),
        Decision::Allow
    );
}
