//! The connection as async-h1's response decoder reads it: [`HeadGuard`].
//!
//! Until the response head is decoded (the caller says so with [`HeadRelease::release`]):
//! - at most [`MAX_REPLY_HEAD_BYTES`] are read: async-h1 bounds a head only once its lines end,
//!   so a status or header line that never ends would grow without bound;
//! - every byte of the head must be ASCII: http-types panics on a header value that is valid
//!   UTF-8 but not ASCII (`Headers::insert` unwraps), which the fuzzers found. A Kubernetes API
//!   server sends ASCII heads; anything else is refused with an error saying so.
//!
//! Every read that brings bytes also wakes the task once more: async-h1's chunked decoder
//! returns `Pending` without arranging a wake-up when the bytes it has leave a chunk trailer
//! incomplete (they may have been read, and buffered, in the same poll); the task would then
//! sleep until a timeout. The extra wake-up costs one poll per read and makes it read on.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use smol::io::AsyncRead;

/// Bytes read from the connection before a response head is decoded: async-h1's own 8 KiB head
/// limit plus its 8 KiB read-ahead, twice over. Past it, a status or header line that never
/// ends is an error.
pub const MAX_REPLY_HEAD_BYTES: usize = 32 * 1024;

/// A connection guarded while its response head is read; writes pass through.
pub struct HeadGuard<S> {
    inner: S,
    read: usize,
    /// Line ends in a row (carriage returns aside) at the end of what was read; two end the head.
    line_ends: u8,
    head_read: bool,
    released: Arc<AtomicBool>,
}

/// Lifts the head limits of the [`HeadGuard`] it came with.
pub struct HeadRelease(Arc<AtomicBool>);

impl HeadRelease {
    pub fn release(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl<S> HeadGuard<S> {
    pub fn new(inner: S) -> (HeadGuard<S>, HeadRelease) {
        let released = Arc::new(AtomicBool::new(false));
        let guard = HeadGuard {
            inner,
            read: 0,
            line_ends: 0,
            head_read: false,
            released: released.clone(),
        };
        (guard, HeadRelease(released))
    }

    /// Checks the bytes just read up to the end of the head: all ASCII.
    fn check(&mut self, bytes: &[u8]) -> io::Result<()> {
        for &byte in bytes {
            if self.head_read {
                return Ok(());
            }
            match byte {
                b'\n' => {
                    self.line_ends += 1;
                    self.head_read = self.line_ends == 2;
                }
                b'\r' => {}
                _ if !byte.is_ascii() => {
                    return Err(io::Error::other(format!(
                        "the response head holds a byte that is not ASCII (0x{byte:02x}); an API server sends ASCII headers"
                    )));
                }
                _ => self.line_ends = 0,
            }
        }
        Ok(())
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for HeadGuard<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let guarded = !this.released.load(Ordering::Relaxed);
        let len = match guarded {
            false => buf.len(),
            true => {
                let budget = MAX_REPLY_HEAD_BYTES.saturating_sub(this.read);
                if budget == 0 {
                    return Poll::Ready(Err(io::Error::other(format!(
                        "the response head is longer than {MAX_REPLY_HEAD_BYTES} bytes"
                    ))));
                }
                buf.len().min(budget)
            }
        };
        let read = std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut buf[..len]))?;
        this.read = this.read.saturating_add(read);
        if guarded {
            this.check(&buf[..read])?;
        }
        if read > 0 {
            cx.waker().wake_by_ref();
        }
        Poll::Ready(Ok(read))
    }
}

crate::write_through::write_through!(HeadGuard);
