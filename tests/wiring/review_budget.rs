//! Wiring: the binary's secure `/metrics` reviews at most a few new tokens a second, however
//! many random ones arrive, and tells the rest to retry (429, or 503 while every review slot is
//! busy) without asking the API server.
//!
//! Why: every review is a request on the controllers' client. A caller sending random bearer
//! tokens as fast as it can must not turn skiff into a TokenReview pump that spends the
//! controllers' request budget. The fake API server counts the reviews it receives.

use std::time::{Duration, Instant};

use crate::support::cluster::Cluster;
use crate::support::scrape::{Trust, scrape_https};
use crate::support::skiff::{eventually, free_port};
use skiff::serve::{NEW_TOKEN_REVIEW_BURST, NEW_TOKEN_REVIEWS_PER_SECOND};

/// Random tokens sent at once, one scrape each.
const SCRAPES: usize = 40;

#[test]
fn random_tokens_cost_at_most_the_new_token_budget_in_reviews() {
    let mut cluster = Cluster::new("review-budget");
    let port = free_port();
    let metrics = format!("--metrics-bind-address=127.0.0.1:{port}");
    let skiff = cluster.start(&[metrics.as_str()]);
    let serving = eventually(Duration::from_secs(20), || {
        matches!(scrape_https(port, None, Trust::Any), Ok((401, _)))
    });
    assert!(serving, "no 401 without a token; log:\n{}", skiff.logs());

    let started = Instant::now();
    let scrapers: Vec<_> = (0..SCRAPES)
        .map(|n| {
            std::thread::spawn(move || {
                let token = format!("random-token-{n}-{}", std::process::id());
                scrape_https(port, Some(&token), Trust::Any).map_or(0, |(status, _)| status)
            })
        })
        .collect();
    let statuses: Vec<u16> = scrapers
        .into_iter()
        .map(|s| s.join().unwrap_or(0))
        .collect();
    let seconds = started.elapsed().as_secs_f64();
    let reviews = cluster
        .server
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/tokenreviews"))
        .count();
    let budget =
        f64::from(NEW_TOKEN_REVIEW_BURST) + seconds * f64::from(NEW_TOKEN_REVIEWS_PER_SECOND);
    assert!(
        reviews as f64 <= budget.ceil(),
        "{reviews} reviews for {SCRAPES} random tokens in {seconds:.1} s (budget {budget:.1}); log:\n{}",
        skiff.logs()
    );
    // 429: over the new-token budget; 503: every review slot busy. Both say "retry shortly".
    let told_to_retry = statuses.iter().filter(|s| matches!(s, 429 | 503)).count();
    assert!(told_to_retry >= SCRAPES - reviews, "statuses {statuses:?}");
    println!(
        "{SCRAPES} random tokens in {seconds:.1} s: {reviews} reviews, {told_to_retry} told to retry"
    );
}
