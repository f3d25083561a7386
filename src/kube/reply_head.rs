//! The connection as async-h1's response decoder reads it: through a [`HeadGuard`].
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
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Context;

use crate::hooked::{Before, Hooked, ReadHook};

/// Bytes read from the connection before a response head is decoded: async-h1's own 8 KiB head
/// limit plus its 8 KiB read-ahead, twice over. Past it, a status or header line that never
/// ends is an error.
pub const MAX_REPLY_HEAD_BYTES: usize = 32 * 1024;

/// The guard on a connection while its response head is read: what [`HeadGuard::new`] reads
/// the connection through.
pub struct HeadGuard {
    read: usize,
    /// Line ends in a row (carriage returns aside) at the end of what was read; two end the head.
    line_ends: u8,
    head_read: bool,
    /// Whether the read under way is checked: the head was not yet released when it began.
    guarded: bool,
    released: Arc<AtomicBool>,
}

/// Lifts the head limits of the [`HeadGuard`] it came with.
pub struct HeadRelease(Arc<AtomicBool>);

impl HeadRelease {
    pub fn release(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl HeadGuard {
    /// `inner` guarded until its response head is read; writes pass through.
    pub fn new<S>(inner: S) -> (Hooked<S, HeadGuard>, HeadRelease) {
        let released = Arc::new(AtomicBool::new(false));
        let guard = HeadGuard {
            read: 0,
            line_ends: 0,
            head_read: false,
            guarded: true,
            released: released.clone(),
        };
        (Hooked::new(inner, guard), HeadRelease(released))
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

impl ReadHook for HeadGuard {
    fn before_read(&mut self, buf: &mut [u8]) -> Before {
        self.guarded = !self.released.load(Ordering::Relaxed);
        if !self.guarded {
            return Before::Read(buf.len());
        }
        let budget = MAX_REPLY_HEAD_BYTES.saturating_sub(self.read);
        if budget == 0 {
            return Before::Answer(Err(io::Error::other(format!(
                "the response head is longer than {MAX_REPLY_HEAD_BYTES} bytes"
            ))));
        }
        Before::Read(buf.len().min(budget))
    }

    fn after_read(&mut self, cx: &mut Context<'_>, read: &[u8]) -> io::Result<()> {
        self.read = self.read.saturating_add(read.len());
        if self.guarded {
            self.check(read)?;
        }
        if !read.is_empty() {
            cx.waker().wake_by_ref();
        }
        Ok(())
    }
}
