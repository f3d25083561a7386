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
//! renewing its Lease while it heard nothing.

use super::Error;
use super::liveness::Liveness;
use crate::hooked::{Hooked, ReadHook};
use smol::Timer;
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
    deadline: Timer,
    suspicion: Suspicion,
}

impl Deadlines {
    pub fn new(idle: Duration, liveness: &Liveness, epoch: u64) -> Deadlines {
        let liveness = liveness.clone();
        Deadlines {
            idle,
            deadline: Timer::after(idle),
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
    use crate::property::Pieces;
    use crate::testing::ms;
    use smol::io::{AsyncRead, AsyncReadExt};
    use smol::stream::StreamExt;

    /// A body that yields one byte every `every`, forever.
    fn trickle(every: Duration) -> Pieces {
        Pieces::from_stream(Timer::interval(every).map(|_| Ok(b" ".to_vec())))
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

    /// `read_until_error`, or `None` if the body still reads after `wait`.
    fn still_reading_after(wait: Duration, body: impl AsyncRead + Unpin) -> Option<(usize, Error)> {
        smol::block_on(smol::future::or(
            async { Some(read_until_error(body).await) },
            async {
                Timer::after(wait).await;
                None
            },
        ))
    }

    #[test]
    fn a_body_that_keeps_talking_outlives_its_idle_timeout_and_a_silent_one_does_not() {
        let liveness = Liveness::new();
        let talking = GuardedBody::new(trickle(ms(10)), Deadlines::new(ms(40), &liveness, 0));
        let outcome = still_reading_after(ms(200), talking);
        assert!(
            outcome.is_none(),
            "a talking watch was abandoned: {outcome:?}"
        );
        let silent = GuardedBody::new(trickle(ms(400)), Deadlines::new(ms(40), &liveness, 0));
        let (bytes, error) = smol::block_on(read_until_error(silent));
        assert_eq!(bytes, 0);
        assert!(
            matches!(&error, Error::Silent(m) if m.contains("bookmark")),
            "{error}"
        );
    }

    #[test]
    fn a_suspicion_after_the_dial_ends_the_body_and_an_earlier_one_does_not() {
        let earlier = Liveness::new();
        earlier.suspect("before the dial");
        let body = GuardedBody::new(
            trickle(ms(5)),
            Deadlines::new(ms(1000), &earlier, earlier.epoch()),
        );
        let outcome = still_reading_after(ms(100), body);
        assert!(
            outcome.is_none(),
            "an older suspicion ended the body: {outcome:?}"
        );

        let liveness = Liveness::new();
        let body = GuardedBody::new(
            trickle(ms(5)),
            Deadlines::new(ms(1000), &liveness, liveness.epoch()),
        );
        let raiser = liveness.clone();
        smol::spawn(async move {
            Timer::after(ms(50)).await;
            raiser.suspect("after the dial");
        })
        .detach();
        let (bytes, error) = smol::block_on(read_until_error(body));
        assert!(bytes > 0, "the body was cut before the suspicion");
        assert!(matches!(error, Error::Suspect(_)), "{error}");
    }

    #[test]
    fn other_read_errors_stay_transport_errors() {
        let e = io::Error::new(io::ErrorKind::ConnectionReset, "reset by peer");
        assert!(matches!(read_error(&e), Error::Transport(m) if m.contains("reset by peer")));
    }
}
