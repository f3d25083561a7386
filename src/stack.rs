//! Stack pages a thread touched once and does not use now, handed back to the system.
//!
//! A thread's stack keeps every page it ever touched. Start-up (flags, the kubeconfig, TLS
//! contexts, the first handshakes and lists) runs deeper than skiff's steady state, and so do
//! rare events such as a reconnect; without help those pages stay resident for the life of the
//! process (measured at idle: 288 KiB on the main thread and 148 KiB on the executor's, of a
//! 3.2 MiB RssAnon). Everything below the stack pointer is dead by the ABI, so
//! [`release_unused`] drops those pages with `MADV_DONTNEED`; a call that goes that deep again
//! gets fresh zeroed pages. glibc does the same for a thread's stack when the thread exits.
//!
//! It must run on the thread whose stack it releases, from a shallow frame: the main thread
//! runs it between polls of its root future ([`Releasing`]), the executor's thread from a task
//! of its own ([`release_periodically`]).
#![allow(unsafe_code)]

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// How often a thread's unused stack pages are released at most.
pub const RELEASE_EVERY: Duration = Duration::from_secs(5);

/// Kept below the stack pointer: the frames live while [`release_unused`] runs (its own below
/// the marker, the system call's), with room to spare.
const MARGIN: usize = 16 * 1024;

/// Releases the pages of the calling thread's stack below its current frame; returns the
/// bytes released (`None` where the stack cannot be found, or on other systems).
pub fn release_unused() -> Option<usize> {
    ThreadStack::default().release()
}

/// The calling thread's stack, whose lowest address is read from `/proc/self/maps` at most
/// every [`RELEASE_EVERY`] (the main thread's stack grows down as it is used).
#[derive(Debug, Default)]
pub struct ThreadStack {
    start: usize,
    read_at: Option<Instant>,
}

impl ThreadStack {
    /// Releases the pages below the caller's frame; the bytes released.
    #[inline(never)]
    pub fn release(&mut self) -> Option<usize> {
        let marker = 0u8;
        let sp = std::hint::black_box(&marker) as *const u8 as usize;
        if self.read_at.is_none_or(|at| at.elapsed() >= RELEASE_EVERY) {
            let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
            self.start = mapping_containing(&maps, sp)?.0;
            self.read_at = Some(Instant::now());
        }
        let page = os::page_size();
        let end = sp.checked_sub(MARGIN)? & !(page - 1);
        if end <= self.start {
            return Some(0);
        }
        os::discard(self.start, end - self.start).then_some(end - self.start)
    }
}

/// The `[start, end)` of the mapping of `/proc/self/maps` (`maps`) that holds `address`.
fn mapping_containing(maps: &str, address: usize) -> Option<(usize, usize)> {
    maps.lines().find_map(|line| {
        let range = line.split_whitespace().next()?;
        let (start, end) = range.split_once('-')?;
        let start = usize::from_str_radix(start, 16).ok()?;
        let end = usize::from_str_radix(end, 16).ok()?;
        (start..end).contains(&address).then_some((start, end))
    })
}

/// A future, releasing its thread's unused stack pages each time a poll returns pending: for
/// the root future a thread blocks on, which returns to its shallowest frame there. The main
/// thread runs the lease there; released after each request, its depth costs page faults, not
/// memory.
///
/// The future is built in a frame of its own and polled through a pointer, never inlined: the
/// frames that hold and poll the root future live as long as the thread, and would otherwise
/// be as large as the future (skiff's is tens of KiB).
pub struct Releasing<'a, T> {
    future: Pin<Box<dyn Future<Output = T> + 'a>>,
    stack: ThreadStack,
}

impl<'a, T> Releasing<'a, T> {
    #[inline(never)]
    pub fn new<F: Future<Output = T> + 'a>(make: impl FnOnce() -> F) -> Releasing<'a, T> {
        Releasing {
            future: Box::pin(make()),
            stack: ThreadStack::default(),
        }
    }
}

impl<T> Future for Releasing<'_, T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let poll = self.future.as_mut().poll(cx);
        if poll.is_pending() {
            self.stack.release();
        }
        poll
    }
}

/// Runs for the life of the process on an executor thread: releases that thread's unused
/// stack pages every [`RELEASE_EVERY`].
pub async fn release_periodically() {
    loop {
        smol::Timer::after(RELEASE_EVERY).await;
        release_unused();
    }
}

#[cfg(target_os = "linux")]
mod os {
    pub fn page_size() -> usize {
        // SAFETY: sysconf only reads a system constant.
        let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(size).unwrap_or(4096)
    }

    /// Drops the pages of `[start, start + len)`, dead stack below the caller's frames.
    pub fn discard(start: usize, len: usize) -> bool {
        // SAFETY: the range is page-aligned, inside the calling thread's stack mapping and
        // below every live frame of that thread (release_unused keeps MARGIN below its own):
        // nothing reads it before writing it again, and MADV_DONTNEED refills it with zeroes.
        unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_DONTNEED) == 0 }
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    pub fn page_size() -> usize {
        4096
    }

    pub fn discard(_start: usize, _len: usize) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
