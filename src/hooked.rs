//! A stream read through a hook: [`Hooked`].
//!
//! The wrappers that watch or bound what a stream reads (a response head's guard, a watch
//! body's deadline on silence, a connection's activity, a replayed ClientHello) differ only in
//! what they do around each read. [`Hooked`] writes the pinning and polling once, and passes
//! writes through untouched, so each wrapper's file holds only what it adds: a [`ReadHook`].

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use smol::io::{AsyncRead, AsyncWrite};

/// What a hook does around each read of the stream it wraps; by default, nothing.
pub trait ReadHook {
    /// Before the inner stream is asked: read into `buf` as it is, into less of it, or answer
    /// without asking.
    fn before_read(&mut self, buf: &mut [u8]) -> Before {
        Before::Read(buf.len())
    }

    /// The bytes the inner stream just read (none at its end); an error fails the read.
    fn after_read(&mut self, _cx: &mut Context<'_>, _read: &[u8]) -> io::Result<()> {
        Ok(())
    }

    /// The inner stream has nothing yet: an error that ends the wait, or `Pending` to wait on.
    fn while_pending(&mut self, _cx: &mut Context<'_>) -> Poll<io::Error> {
        Poll::Pending
    }
}

/// What [`ReadHook::before_read`] makes of a read.
pub enum Before {
    /// Read from the inner stream into the first this many bytes of the buffer.
    Read(usize),
    /// Answer this, and leave the inner stream alone.
    Answer(io::Result<usize>),
}

/// `inner`, read through `hook`; writes pass through.
pub struct Hooked<S, H> {
    inner: S,
    hook: H,
}

impl<S, H> Hooked<S, H> {
    pub fn new(inner: S, hook: H) -> Hooked<S, H> {
        Hooked { inner, hook }
    }
}

impl<S: AsyncRead + Unpin, H: ReadHook + Unpin> AsyncRead for Hooked<S, H> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let len = match this.hook.before_read(buf) {
            Before::Read(len) => len,
            Before::Answer(answer) => return Poll::Ready(answer),
        };
        match Pin::new(&mut this.inner).poll_read(cx, &mut buf[..len]) {
            Poll::Ready(Ok(read)) => {
                this.hook.after_read(cx, &buf[..read])?;
                Poll::Ready(Ok(read))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => this.hook.while_pending(cx).map(Err),
        }
    }
}

impl<S: AsyncWrite + Unpin, H: Unpin> AsyncWrite for Hooked<S, H> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_close(cx)
    }
}
