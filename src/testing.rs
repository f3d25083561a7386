//! What the unit tests share, so each test module reads the same way.

pub mod pem;
pub mod responder;

use std::time::Duration;

/// Fails unless `text` contains each of `parts`: error and condition messages must name what
/// the reader needs to act on.
#[track_caller]
pub fn assert_mentions(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part:?} is not mentioned in: {text}");
    }
}

/// `n` milliseconds: timings in tests read as `ms(250)`.
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `n` seconds, as [`ms`] for longer timings.
pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// `future`'s output if it is ready at once, else `None` (the future is dropped).
pub fn now_or_never<T>(future: impl std::future::Future<Output = T>) -> Option<T> {
    use smol::future::FutureExt as _;
    smol::block_on(async { Some(future.await) }.or(async { None }))
}
