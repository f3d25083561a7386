//! Which connections a server holds, and which one goes when it is full.
//!
//! A server keeps at most its cap of connections. When a new one arrives at the cap, of the
//! connections still *waiting* (for their TLS handshake, their request head, or idle between
//! requests) the one silent the longest is closed to make room, and counted as evicted. Only
//! when every held connection is being answered is the new one closed instead. A flood of
//! silent or slow connections therefore cannot lock out the kubelet, nor a scraper: the
//! kubelet's probe sends its request as soon as it connects, and a scraper's handshake keeps
//! bytes flowing, so neither is the one silent the longest unless it is itself starved of CPU
//! (then it is silent like an attacker, and its next connection gets in). Silence counts only
//! while it is the peer's turn: a connection that skiff has just answered (a handshake computed, a
//! reply sent) starts afresh. And a connection whose TLS handshake skiff has computed goes
//! only when no connection without one is left: under a burst of new connections the newest
//! evict each other, not a scraper that is one round trip from sending its request.
//! Connections report what they read through [`Touching`].
//!
//! Closing means `shutdown(2)` on the socket: the peer sees the end at once, and the
//! connection's task sees end of input on its next read and drops the file descriptor. Until
//! it has, the evicted connection still holds its descriptor and stays in the table; the
//! accept loop lets no more than [`MAX_EVICTING`] pile up (see [`Admission::evicting`]), so
//! the descriptors a server holds stay within its cap plus that.

use std::collections::BTreeMap;
use std::io;
use std::net::Shutdown;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Context;
use std::time::Instant;

use smol::net::TcpStream;

use super::refusals::{Refusal, ServerStats};
use crate::hooked::{Hooked, ReadHook};

/// Evicted connections whose task has not yet closed them, at most, before the accept loop
/// waits for them.
pub const MAX_EVICTING: usize = 32;

/// One server's open connections.
pub struct Admission {
    cap: usize,
    table: Mutex<Table>,
    pub stats: ServerStats,
}

#[derive(Default)]
struct Table {
    next_id: u64,
    open: BTreeMap<u64, Entry>,
}

struct Entry {
    waiting: bool,
    /// Its TLS handshake is computed: it has shown more than a connection that has not, so it
    /// goes only when no unsettled one is left to evict.
    settled: bool,
    /// When it was admitted or last sent bytes.
    heard: Instant,
    /// Shut down to make room; gone once its task drops its ticket.
    evicted: bool,
    socket: TcpStream,
}

/// A held connection's place in the table; dropping it gives the place back.
pub struct Ticket(Activity);

/// Records that a held connection sent bytes (see [`Touching`]).
#[derive(Clone)]
pub struct Activity {
    id: u64,
    admission: Arc<Admission>,
}

/// The waiting connection silent the longest. Bytes the kernel holds for a connection that
/// its task has not read yet count as heard now: under a burst of accepts, a scraper's request
/// can arrive before its task runs again, and it must not be the one that goes.
fn quietest(table: &mut Table) -> Option<&mut Entry> {
    let mut candidates: Vec<(bool, Instant, u64)> = table
        .open
        .iter()
        .filter(|(_, e)| e.waiting && !e.evicted)
        .map(|(id, e)| (e.settled, e.heard, *id))
        .collect();
    candidates.sort_unstable();
    let now = Instant::now();
    let mut chosen = candidates.first().map(|(_, _, id)| *id);
    for (_, _, id) in &candidates {
        let entry = table.open.get_mut(id)?;
        if !has_unread_input(&entry.socket) {
            chosen = Some(*id);
            break;
        }
        entry.heard = now;
    }
    table.open.get_mut(&chosen?)
}

/// Whether bytes from the peer wait in the socket's receive queue (a peek, never blocking).
fn has_unread_input(socket: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    let flags = rustix::net::RecvFlags::PEEK | rustix::net::RecvFlags::DONTWAIT;
    matches!(rustix::net::recv(socket, &mut byte, flags), Ok((n, _)) if n > 0)
}

impl Admission {
    /// A table for at most `cap` connections, counting into `stats`.
    pub fn new(cap: usize, stats: ServerStats) -> Arc<Admission> {
        Arc::new(Admission {
            cap: cap.max(1),
            table: Mutex::new(Table::default()),
            stats,
        })
    }

    /// Admits `socket` as waiting, evicting the oldest waiting connection if the table is full;
    /// `None` (counted) when everything held is being answered.
    pub fn admit(self: &Arc<Self>, socket: &TcpStream) -> Option<Ticket> {
        let mut table = self.lock();
        let live = table.open.values().filter(|e| !e.evicted).count();
        if live >= self.cap {
            let Some(quietest) = quietest(&mut table) else {
                self.stats.refused(Refusal::OverCapacity);
                return None;
            };
            quietest.evicted = true;
            let _ = quietest.socket.shutdown(Shutdown::Both);
            self.stats.refused(Refusal::Evicted);
        }
        let id = table.next_id;
        table.next_id += 1;
        let entry = Entry {
            waiting: true,
            settled: false,
            heard: Instant::now(),
            evicted: false,
            socket: socket.clone(),
        };
        table.open.insert(id, entry);
        self.stats.set_open(table.open.len());
        Some(Ticket(Activity {
            id,
            admission: self.clone(),
        }))
    }

    /// Evicted connections whose task has not closed them yet.
    pub fn evicting(&self) -> usize {
        self.lock().open.values().filter(|e| e.evicted).count()
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Ticket {
    /// Marks the connection as being answered (not evictable) or waiting again. Waiting again
    /// starts the peer's turn: its silence counts from now, not from before skiff's own part
    /// (a handshake computed, a reply sent), so skiff's slowness is never held against it.
    pub fn set_waiting(&self, waiting: bool) {
        self.0.change(|entry| {
            if waiting && !entry.waiting {
                entry.heard = Instant::now();
            }
            entry.waiting = waiting;
        });
    }

    /// Marks the connection's TLS handshake as computed (see [`Entry::settled`]).
    pub fn settle(&self) {
        self.0.change(|entry| entry.settled = true);
    }

    /// A handle that records the connection's reads.
    pub fn activity(&self) -> Activity {
        self.0.clone()
    }
}

impl Activity {
    /// Changes the connection's entry, while it is held.
    fn change(&self, change: impl FnOnce(&mut Entry)) {
        if let Some(entry) = self.admission.lock().open.get_mut(&self.id) {
            change(entry);
        }
    }
}

/// A stream that records, in its connection's entry, every read that brought bytes.
pub type Touching<S> = Hooked<S, Activity>;

impl ReadHook for Activity {
    fn after_read(&mut self, _: &mut Context<'_>, read: &[u8]) -> io::Result<()> {
        if !read.is_empty() {
            self.change(|entry| entry.heard = Instant::now());
        }
        Ok(())
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let Activity { id, admission } = &self.0;
        let mut table = admission.lock();
        table.open.remove(id);
        admission.stats.set_open(table.open.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smol::io::{AsyncReadExt, AsyncWriteExt};
    use smol::net::TcpListener;

    impl Admission {
        /// Connections held now.
        fn len(&self) -> usize {
            self.lock().open.len()
        }
    }

    /// A connected pair: (the client's end, the server's end).
    type Pair = (TcpStream, TcpStream);

    /// A new connection to `listener`.
    async fn pair(listener: &TcpListener) -> Pair {
        let addr = listener.local_addr().expect("addr");
        let (client, accepted) =
            smol::future::zip(TcpStream::connect(addr), listener.accept()).await;
        (client.expect("connect"), accepted.expect("accept").0)
    }

    /// A table of `CAP` places, full: `CAP` connections admitted in turn, each with its ticket,
    /// and one more connected, not yet admitted.
    async fn full<const CAP: usize>(name: &str) -> (Arc<Admission>, [(Pair, Ticket); CAP], Pair) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let admission = Admission::new(CAP, ServerStats::new(name));
        let mut held = Vec::new();
        for _ in 0..CAP {
            let (client, server) = pair(&listener).await;
            let ticket = admission.admit(&server).expect("room");
            held.push(((client, server), ticket));
        }
        let held = held
            .try_into()
            .unwrap_or_else(|_| unreachable!("{CAP} held"));
        let newcomer = pair(&listener).await;
        (admission, held, newcomer)
    }

    /// Admits `newcomer` into a full table, which must close `goes` (a client's end) to make
    /// room and keep `stays`; `why` is the rule that chooses. The newcomer's ticket.
    async fn evicts(
        admission: &Arc<Admission>,
        newcomer: &Pair,
        goes: TcpStream,
        stays: TcpStream,
        why: &str,
    ) -> Ticket {
        let ticket = admission.admit(&newcomer.1).expect("room made");
        assert!(is_closed(goes).await, "the wrong one stayed: {why}");
        assert!(!is_closed(stays).await, "the wrong one went: {why}");
        ticket
    }

    async fn is_closed(mut client: TcpStream) -> bool {
        let mut byte = [0u8; 1];
        let read = smol::future::or(async { Some(client.read(&mut byte).await) }, async {
            smol::Timer::after(std::time::Duration::from_millis(200)).await;
            None
        });
        matches!(read.await, Some(Ok(0)) | Some(Err(_)))
    }

    #[test]
    fn a_full_table_evicts_the_waiting_connection_silent_the_longest() {
        smol::block_on(async {
            let (admission, [(first, first_ticket), (second, second_ticket)], third) =
                full::<2>("test-evict").await;
            first_ticket.set_waiting(false);
            let why = "the oldest waiting one goes, one being answered stays";
            let _third_ticket = evicts(&admission, &third, second.0, first.0, why).await;
            assert_eq!(admission.evicting(), 1, "until its task lets go of it");
            drop(second_ticket);
            assert_eq!((admission.len(), admission.evicting()), (2, 0));
            assert_eq!(admission.stats.count(Refusal::Evicted), 1);
        });
    }

    #[test]
    fn a_connection_just_answered_outlasts_ones_silent_since_before() {
        smol::block_on(async {
            let (admission, [(answered, answered_ticket), (silent, _silent_ticket)], new) =
                full::<2>("test-turn").await;
            // skiff computes its part (a handshake), then hands the turn back.
            answered_ticket.set_waiting(false);
            smol::Timer::after(std::time::Duration::from_millis(5)).await;
            answered_ticket.set_waiting(true);
            let why = "the answered one's silence began when skiff answered";
            evicts(&admission, &new, silent.0, answered.0, why).await;
        });
    }

    #[test]
    fn a_settled_connection_outlasts_newer_unsettled_ones() {
        smol::block_on(async {
            let (admission, [(settled, settled_ticket), (fresh, _fresh_ticket)], new) =
                full::<2>("test-settled").await;
            settled_ticket.settle();
            let why = "the unsettled one goes first; the older one's handshake is done";
            evicts(&admission, &new, fresh.0, settled.0, why).await;
        });
    }

    #[test]
    fn a_connection_that_keeps_sending_outlasts_newer_silent_ones() {
        smol::block_on(async {
            let (admission, [((busy_client, busy), busy_ticket), (silent, _silent_ticket)], late) =
                full::<2>("test-quiet").await;
            smol::Timer::after(std::time::Duration::from_millis(5)).await;
            let mut reading = Touching::new(busy.clone(), busy_ticket.activity());
            let mut client = busy_client.clone();
            client.write_all(b"GET").await.expect("write");
            let mut three = [0u8; 3];
            reading.read_exact(&mut three).await.expect("read");
            let why = "the silent one goes, the older, talking one stays";
            evicts(&admission, &late, silent.0, busy_client, why).await;
        });
    }

    #[test]
    fn a_request_not_yet_read_outlasts_newer_silent_ones() {
        smol::block_on(async {
            let (admission, [(sent, _sent_ticket), (silent, _silent_ticket)], late) =
                full::<2>("test-unread").await;
            let mut client = sent.0.clone();
            client.write_all(b"GET /metrics").await.expect("write");
            smol::Timer::after(std::time::Duration::from_millis(20)).await;
            let why = "the silent one goes, the older one whose request waits unread stays";
            evicts(&admission, &late, silent.0, sent.0, why).await;
        });
    }

    #[test]
    fn when_everything_is_being_answered_the_newcomer_is_refused() {
        smol::block_on(async {
            let (admission, [(_busy, ticket)], late) = full::<1>("test-refuse").await;
            ticket.set_waiting(false);
            assert!(admission.admit(&late.1).is_none());
            assert_eq!(admission.stats.count(Refusal::OverCapacity), 1);
            drop(ticket);
            assert_eq!(admission.len(), 0, "a dropped ticket frees its place");
            assert!(admission.admit(&late.1).is_some());
        });
    }
}
