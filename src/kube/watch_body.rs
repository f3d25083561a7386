//! A watch body with a deadline on silence: it ends with an error when nothing arrives for the
//! idle timeout, or when its connection becomes suspect.
//!
//! Why: a live API server always says something within a watch's idle timeout: events, a
//! bookmark (kube-apiserver's watch cache sends one about every minute while the resource
//! version moves, and one 2 s before the watch's `timeoutSeconds`), and at the latest the
//! clean end at `timeoutSeconds`, which the client asks to come first (see
//! `Client::watch`). A watch that hears nothing for longer is on a connection nobody is at
//! the other end of. TCP cannot tell when the far end is a proxy that keeps the socket open,
//! so without this deadline such a watch would wait forever, and a leader would keep
//! renewing its Lease while it heard nothing. The silence is timed on the liveness's clock.

use super::Error;
use super::liveness::Liveness;
use crate::clock::Sleep;
use crate::hooked::{Hooked, ReadHook};
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

type Suspicion = Pin<Box<dyn Future<Output = ()> + Send + Sync>>;

/// Why a watch body was given up; carried inside the `io::Error` it ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Abandoned {
    Silent(Duration),
    Suspect,
}

impl fmt::Display for Abandoned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Abandoned::Silent(idle) => write!(
                f,
                "nothing arrived for {:.0}s (no event, no bookmark, and the server did not end \
                 the watch at its timeout)",
                idle.as_secs_f64()
            ),
            Abandoned::Suspect => f.write_str(
                "another connection to the API server got no reply in time, so this one may be \
                 dead too",
            ),
        }
    }
}

impl std::error::Error for Abandoned {}

/// A watch body with its deadlines: see [`Deadlines`].
pub type GuardedBody<R> = Hooked<R, Deadlines>;

/// What ends a [`GuardedBody`]: silence for `idle`, or a suspicion that `liveness` raises after
/// `epoch` (the epoch the watch was dialed at).
pub struct Deadlines {
    idle: Duration,
    deadline: Sleep,
    suspicion: Suspicion,
}

impl Deadlines {
    pub fn new(idle: Duration, liveness: &Liveness, epoch: u64) -> Deadlines {
        let liveness = liveness.clone();
        Deadlines {
            idle,
            deadline: liveness.clock().deadline(liveness.clock().now() + idle),
            suspicion: Box::pin(async move { liveness.suspected_after(epoch).await }),
        }
    }
}

impl ReadHook for Deadlines {
    fn after_read(&mut self, _: &mut Context<'_>, read: &[u8]) -> io::Result<()> {
        if !read.is_empty() {
            self.deadline.set_after(self.idle);
        }
        Ok(())
    }

    fn while_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        if self.suspicion.as_mut().poll(cx).is_ready() {
            return Poll::Ready(abandoned(Abandoned::Suspect));
        }
        if Pin::new(&mut self.deadline).poll(cx).is_ready() {
            return Poll::Ready(abandoned(Abandoned::Silent(self.idle)));
        }
        Poll::Pending
    }
}

fn abandoned(why: Abandoned) -> io::Error {
    let kind = match why {
        Abandoned::Silent(_) => io::ErrorKind::TimedOut,
        Abandoned::Suspect => io::ErrorKind::ConnectionAborted,
    };
    io::Error::new(kind, why)
}

/// The client error for a failed read of a watch body: [`Error::Silent`] or [`Error::Suspect`]
/// when a [`GuardedBody`] gave up, else [`Error::Transport`].
pub fn read_error(e: &io::Error) -> Error {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<Abandoned>())
    {
        Some(why @ Abandoned::Silent(_)) => Error::Silent(why.to_string()),
        Some(why @ Abandoned::Suspect) => Error::Suspect(why.to_string()),
        None => Error::Transport(format!("watch stream broke off: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::property::Pieces;
    use crate::testing::ms;
    use smol::io::{AsyncRead, AsyncReadExt};

    /// A body that yields one byte every `every` on `clock`, forever.
    fn trickle(every: Duration, clock: Clock) -> Pieces {
        Pieces::from_stream(smol::stream::unfold(clock, move |clock| async move {
            clock.sleep(every).await;
            Some((Ok(b" ".to_vec()), clock))
        }))
    }

    /// Reads until the body fails; how many bytes came first, and the error as the client
    /// sees it.
    async fn read_until_error(mut body: impl AsyncRead + Unpin) -> (usize, Error) {
        let mut bytes = 0;
        let mut buf = [0u8; 8];
        loop {
            match body.read(&mut buf).await {
                Ok(n) => bytes += n,
                Err(e) => return (bytes, read_error(&e)),
            }
        }
    }

    #[test]
    fn a_body_that_keeps_talking_outlives_its_idle_timeout_and_a_silent_one_does_not() {
        let time = ManualClock::new();
        let liveness = Liveness::with_clock(time.clock());
        let talking = trickle(ms(10), time.clock());
        let talking = GuardedBody::new(talking, Deadlines::new(ms(40), &liveness, 0));
        let outcome = time.run_for(ms(200), read_until_error(talking));
        assert!(
            outcome.is_none(),
            "a talking watch was abandoned: {outcome:?}"
        );
        let started = time.now();
        let silent = trickle(ms(400), time.clock());
        let silent = GuardedBody::new(silent, Deadlines::new(ms(40), &liveness, 0));
        let (bytes, error) = time.run(read_until_error(silent));
        assert_eq!(bytes, 0);
        assert_eq!(time.now() - started, ms(40), "given up at its idle timeout");
        assert!(
            matches!(&error, Error::Silent(m) if m.contains("bookmark")),
            "{error}"
        );
    }

    #[test]
    fn a_suspicion_after_the_dial_ends_the_body_and_an_earlier_one_does_not() {
        let time = ManualClock::new();
        let earlier = Liveness::with_clock(time.clock());
        earlier.suspect("before the dial");
        let body = GuardedBody::new(
            trickle(ms(5), time.clock()),
            Deadlines::new(ms(1000), &earlier, earlier.epoch()),
        );
        let outcome = time.run_for(ms(100), read_until_error(body));
        assert!(
            outcome.is_none(),
            "an older suspicion ended the body: {outcome:?}"
        );

        let liveness = Liveness::with_clock(time.clock());
        let body = GuardedBody::new(
            trickle(ms(5), time.clock()),
            Deadlines::new(ms(1000), &liveness, liveness.epoch()),
        );
        let clock = time.clock();
        let raise = async {
            clock.sleep(ms(50)).await;
            liveness.suspect("after the dial");
            smol::future::pending::<()>().await;
        };
        let ((bytes, error), ()) = time.run(smol::future::or(
            async { (read_until_error(body).await, ()) },
            async {
                raise.await;
                unreachable!()
            },
        ));
        assert_eq!(
            bytes, 10,
            "cut at the suspicion, after 50 ms of a byte every 5 ms"
        );
        assert!(matches!(error, Error::Suspect(_)), "{error}");
    }

    #[test]
    fn other_read_errors_stay_transport_errors() {
        let e = io::Error::new(io::ErrorKind::ConnectionReset, "reset by peer");
        assert!(matches!(read_error(&e), Error::Transport(m) if m.contains("reset by peer")));
    }
}
