//! Property tests without a framework: seeded cases, mutations of real inputs, and bodies
//! split at random places, in a fixed number of cases within a time budget, so CI runs them on
//! stable Rust in bounded time. The coverage-guided fuzzers (`fuzz/`, `make fuzz`) explore the
//! same parsers further, from the same seeds.
//!
//! A failing case names its seed; `SKIFF_PROPERTY_SEED=<seed>` reruns the cases from there.
//! `SKIFF_PROPERTY_CASES` changes how many cases each property runs.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use smol::io::AsyncRead;
use smol::stream::{self, Stream, StreamExt};

use crate::random::Rng;

/// Cases per property unless `SKIFF_PROPERTY_CASES` says otherwise.
const CASES: u64 = 500;
/// A property stops early, passing, once it has run this long (a slow debug build in CI).
const BUDGET: Duration = Duration::from_secs(3);

/// A case's source of choices.
pub struct Gen(Rng);

impl Gen {
    /// A number in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        self.0.usize(..n)
    }

    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    pub fn byte(&mut self) -> u8 {
        self.0.u8(..)
    }
}

/// Runs `case` for each seed, reporting the seed of the first failure.
pub fn check(name: &str, mut case: impl FnMut(&mut Gen)) {
    let number = |var: &str| std::env::var(var).ok().and_then(|v| v.parse::<u64>().ok());
    let first = number("SKIFF_PROPERTY_SEED").unwrap_or(1);
    let cases = number("SKIFF_PROPERTY_CASES").unwrap_or(CASES);
    let started = Instant::now();
    for seed in first..first + cases {
        if started.elapsed() > BUDGET {
            eprintln!("{name}: {} cases in the time budget", seed - first);
            return;
        }
        let mut generator = Gen(Rng::with_seed(seed));
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case(&mut generator)));
        if let Err(panic) = outcome {
            eprintln!("{name}: case failed; rerun it with SKIFF_PROPERTY_SEED={seed}");
            std::panic::resume_unwind(panic);
        }
    }
}

/// `seed` changed in one to four places: bytes flipped, inserted, deleted or repeated, long
/// runs added, numbers made huge, or the end cut off.
pub fn mutate(seed: &[u8], g: &mut Gen) -> Vec<u8> {
    let mut out = seed.to_vec();
    for _ in 0..=g.below(4) {
        let at = g.below(out.len() + 1);
        match g.below(8) {
            0 if !out.is_empty() => {
                let i = g.below(out.len());
                out[i] = g.byte();
            }
            1 => {
                let insert: Vec<u8> = (0..g.below(16) + 1).map(|_| g.byte()).collect();
                out.splice(at..at, insert);
            }
            2 => {
                let end = (at + g.below(64)).min(out.len());
                out.drain(at..end);
            }
            3 => {
                let end = (at + g.below(256)).min(out.len());
                let copy = out[at..end].to_vec();
                out.splice(at..at, copy.repeat(g.below(8) + 1));
            }
            4 => {
                let run = [b'a', b' ', b'0', b'\r', b'{', b'"'][g.below(6)];
                out.splice(at..at, std::iter::repeat_n(run, g.below(64 * 1024)));
            }
            5 => {
                let huge: &[u8] = [
                    &b"ffffffffffffffff"[..],
                    b"8000000000000000",
                    b"99999999999999999999",
                ][g.below(3)];
                out.splice(at..at, huge.iter().copied());
            }
            6 => out.truncate(at),
            _ => {
                let end_of_line: &[u8] = [&b"\r\n"[..], b"\n", b"\r\n\r\n", b"\r"][g.below(4)];
                out.splice(at..at, end_of_line.iter().copied());
            }
        }
    }
    out
}

/// A body delivered in pieces, as they come from a stream of them: a piece is read whole when
/// the buffer has room, an error piece fails its read, and the stream's end is the body's.
pub struct Pieces {
    pieces: Pin<Box<dyn Stream<Item = io::Result<Vec<u8>>> + Send + Sync>>,
    /// The piece being read, and how much of it has been.
    piece: Vec<u8>,
    at: usize,
}

impl Pieces {
    /// The pieces `pieces` yields, in turn.
    pub fn from_stream(
        pieces: impl Stream<Item = io::Result<Vec<u8>>> + Send + Sync + 'static,
    ) -> Pieces {
        Pieces {
            pieces: Box::pin(pieces),
            piece: Vec::new(),
            at: 0,
        }
    }

    /// `pieces` in turn, then the end.
    pub fn each(pieces: Vec<io::Result<Vec<u8>>>) -> Pieces {
        Pieces::from_stream(stream::iter(pieces))
    }

    /// `bytes` in pieces of `size`, then the end.
    pub fn of(bytes: &[u8], size: usize) -> Pieces {
        Pieces::each(bytes.chunks(size.max(1)).map(|c| Ok(c.to_vec())).collect())
    }

    /// `bytes` cut at random places (pieces of 1 byte to 4 KiB), then the end.
    pub fn random_split(bytes: &[u8], g: &mut Gen) -> Pieces {
        let mut pieces = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            let size = (g.below(4096) + 1).min(rest.len());
            let size = if g.chance(4) { 1 } else { size };
            pieces.push(Ok(rest[..size].to_vec()));
            rest = &rest[size..];
        }
        Pieces::each(pieces)
    }

    /// `bytes`, then nothing ever again (a peer that went silent).
    pub fn stalled(bytes: Vec<u8>) -> Pieces {
        Pieces::from_stream(stream::once(Ok(bytes)).chain(stream::pending()))
    }
}

impl AsyncRead for Pieces {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        while self.at == self.piece.len() {
            match std::task::ready!(self.pieces.as_mut().poll_next(cx)) {
                None => return Poll::Ready(Ok(0)),
                Some(Err(e)) => return Poll::Ready(Err(e)),
                Some(Ok(piece)) => (self.piece, self.at) = (piece, 0),
            }
        }
        let at = self.at;
        let n = (self.piece.len() - at).min(buf.len());
        buf[..n].copy_from_slice(&self.piece[at..at + n]);
        self.at += n;
        Poll::Ready(Ok(n))
    }
}
