//! Deadlines on futures: every timeout in skiff is one of these.
//!
//! A request, a lease attempt or a plugin run that outlives its deadline is dropped, with the
//! connection or process it held, and fails with a [`Timeout`], which the work's own error type
//! converts from (the API client's becomes `kube::Error::Timeout`); nothing waits on it. This
//! file depends on nothing of skiff's, so every layer can use it.

use std::future::Future;
use std::time::Instant;

use smol::Timer;

/// Work that did not finish in time; the text says what it was.
#[derive(Debug)]
pub struct Timeout(pub String);

/// `work`, failing with `Timeout(describe())` if `timer` fires first (the work is then
/// dropped, with whatever connection it held). A plain function, not `async`, so the work's
/// future is stored once, not again in a wrapper's state.
pub fn or_timeout<T, E: From<Timeout>>(
    work: impl Future<Output = Result<T, E>>,
    timer: Timer,
    describe: impl FnOnce() -> String,
) -> impl Future<Output = Result<T, E>> {
    let expired = async move {
        timer.await;
        Err(Timeout(describe()).into())
    };
    smol::future::or(work, expired)
}

/// `work` if it finishes by `deadline`, else a `Timeout` naming `what`.
pub fn before<T, E: From<Timeout>>(
    deadline: Instant,
    what: &str,
    work: impl Future<Output = Result<T, E>>,
) -> impl Future<Output = Result<T, E>> {
    let what = what.to_owned();
    or_timeout(work, Timer::at(deadline), move || {
        format!("{what} did not finish before its deadline")
    })
}

/// `future`'s output, or `None` if it takes longer than `limit`: for tests, which must fail
/// rather than hang.
#[cfg(test)]
pub async fn within<T>(limit: std::time::Duration, future: impl Future<Output = T>) -> Option<T> {
    smol::future::or(async { Some(future.await) }, async {
        Timer::after(limit).await;
        None
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::Error;
    use std::time::Duration;

    #[test]
    fn work_past_its_deadline_is_a_timeout_naming_it() {
        let slow = async {
            Timer::after(Duration::from_secs(5)).await;
            Ok(())
        };
        let deadline = Instant::now() + Duration::from_millis(20);
        let result = smol::block_on(before(deadline, "lease update", slow));
        assert_eq!(
            result,
            Err(Error::Timeout(
                "lease update did not finish before its deadline".into()
            ))
        );
        let quick = smol::block_on(before(deadline, "x", async { Ok::<_, Error>(7) }));
        assert_eq!(quick, Ok(7));
    }

    #[test]
    fn within_gives_up_on_a_future_that_never_ends() {
        let never = smol::future::pending::<()>();
        assert_eq!(
            smol::block_on(within(Duration::from_millis(10), never)),
            None
        );
        assert_eq!(
            smol::block_on(within(Duration::from_secs(1), async { 3 })),
            Some(3)
        );
    }
}
