//! Pool: one client's idle keep-alive connections, reused one request at a time.
//!
//! A connection is either carrying exactly one request or sitting idle here; a request that
//! finds nothing idle dials a new one, so requests never queue behind each other on a socket.
//! A connection goes back only after its response body was read to the end; a failed or timed
//! out request simply drops its connection. An idle connection returned before the last
//! suspicion ([`Liveness`]) is not reused: it may be one a load balancer silently forgot.

use super::Error;
use super::config::ClientIdentity;
use super::connect::{Connection, Connector};
use super::inflight::InFlightWrites;
use super::liveness::Liveness;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Idle connections kept per client; more are closed when returned (client-go's
/// `MaxIdleConnsPerHost` is 25 for API clients; skiff rounds up a little).
pub const MAX_IDLE: usize = 32;
/// An idle connection older than this is not reused: client-go's `IdleConnTimeout`. Load
/// balancers forget idle flows after minutes (4 to 10 by default in the large clouds), without
/// telling either end; a request sent on such a connection would wait out its timeout.
pub const MAX_IDLE_AGE: Duration = Duration::from_secs(90);

/// A connection taken from the pool, and whether it had carried a request before.
pub struct Checkout {
    pub conn: Connection,
    pub reused: bool,
}

struct Idle {
    conn: Connection,
    since: Instant,
    epoch: u64,
}

pub struct Pool {
    connector: Connector,
    /// Idle connections with when, and at which suspicion epoch, they were returned.
    idle: Mutex<Vec<Idle>>,
    max_idle: usize,
    liveness: Liveness,
    /// Connections carrying a write now, reset when the fence closes.
    pub writes: InFlightWrites,
}

impl Pool {
    pub fn new(connector: Connector, max_idle: usize, liveness: Liveness) -> Pool {
        Pool {
            connector,
            idle: Mutex::new(Vec::new()),
            max_idle,
            liveness,
            writes: InFlightWrites::default(),
        }
    }

    /// The most recently used idle connection that is still open and not suspect, or a new
    /// one presenting `identity` (a plugin's client certificate) if given.
    pub async fn checkout(&self, identity: Option<&ClientIdentity>) -> Result<Checkout, Error> {
        let epoch = self.liveness.epoch();
        while let Some(idle) = self.pop_idle() {
            let conn = idle.conn;
            if idle.epoch < epoch {
                log::debug!("dropping suspect idle connection {}", conn.id());
            } else if idle.since.elapsed() > MAX_IDLE_AGE {
                log::debug!(
                    "dropping idle connection {} unused for {MAX_IDLE_AGE:?}",
                    conn.id()
                );
            } else if conn.is_idle_and_open() {
                return Ok(Checkout { conn, reused: true });
            } else {
                log::debug!("dropping closed idle connection {}", conn.id());
            }
        }
        Ok(Checkout {
            conn: self.dial(identity).await?,
            reused: false,
        })
    }

    /// A new connection that bypasses the idle list (watches, redials), presenting `identity`
    /// if given.
    pub async fn dial(&self, identity: Option<&ClientIdentity>) -> Result<Connection, Error> {
        self.close_unusable(Instant::now());
        self.connector.connect_as(identity).await
    }

    /// Closes the idle connections that will not be reused as of `now` (suspect, or idle for
    /// longer than [`MAX_IDLE_AGE`]): a checkout only finds them when every connection
    /// returned after them has been taken, so they would otherwise stay open, each with its
    /// TLS state, for as long as the pool is busy enough to never reach them. Done at every
    /// return and every dial (each watch dials again within a minute).
    fn close_unusable(&self, now: Instant) {
        let epoch = self.liveness.epoch();
        self.lock()
            .retain(|idle| idle.epoch >= epoch && now.duration_since(idle.since) <= MAX_IDLE_AGE);
    }

    /// Closes every idle connection (their client certificate was replaced).
    pub fn clear_idle(&self) {
        self.lock().clear();
    }

    /// Returns a connection whose last response was read to the end, its TLS buffers freed.
    pub fn checkin(&self, conn: Connection) {
        conn.release_buffers();
        self.close_unusable(Instant::now());
        let epoch = self.liveness.epoch();
        let mut idle = self.lock();
        if idle.len() < self.max_idle {
            idle.push(Idle {
                conn,
                since: Instant::now(),
                epoch,
            });
        }
    }

    /// Idle connections right now; for tests and diagnostics.
    pub fn idle_count(&self) -> usize {
        self.lock().len()
    }

    fn pop_idle(&self) -> Option<Idle> {
        self.lock().pop()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Idle>> {
        // A list of handles stays valid even if a holder panicked.
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::config::Config;
    use http_types::Url;

    fn pool_with_listener(max_idle: usize) -> (Pool, smol::net::TcpListener) {
        let listener = smol::block_on(smol::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = Url::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        let connector = Connector::new(&Config::new(url)).unwrap();
        (Pool::new(connector, max_idle, Liveness::new()), listener)
    }

    #[test]
    fn connections_returned_before_a_suspicion_are_not_reused() {
        let (pool, listener) = pool_with_listener(4);
        smol::block_on(async {
            let (first, _accepted) =
                smol::future::zip(pool.checkout(None), listener.accept()).await;
            let first = first.unwrap();
            let id = first.conn.id();
            pool.checkin(first.conn);
            pool.liveness.suspect("test");
            let (next, _still_open) =
                smol::future::zip(pool.checkout(None), listener.accept()).await;
            let next = next.unwrap();
            assert!(!next.reused, "a suspect connection was reused");
            assert_ne!(next.conn.id(), id);
            pool.checkin(next.conn);
            assert!(pool.checkout(None).await.unwrap().reused, "a later one is");
        });
    }

    #[test]
    fn returned_connection_is_reused_and_closed_ones_are_skipped() {
        let (pool, listener) = pool_with_listener(4);
        smol::block_on(async {
            let (first, accepted) = smol::future::zip(pool.checkout(None), listener.accept()).await;
            let first = first.unwrap();
            let (server_side, _) = accepted.unwrap();
            assert!(!first.reused);
            let id = first.conn.id();
            pool.checkin(first.conn);
            let again = pool.checkout(None).await.unwrap();
            assert!(again.reused);
            assert_eq!(again.conn.id(), id);
            pool.checkin(again.conn);
            drop(server_side);
            smol::Timer::after(std::time::Duration::from_millis(50)).await;
            let (fresh, _) = smol::future::zip(pool.checkout(None), listener.accept()).await;
            let fresh = fresh.unwrap();
            assert!(!fresh.reused);
            assert_ne!(fresh.conn.id(), id);
        });
    }

    #[test]
    fn connections_idle_too_long_or_suspect_are_closed_not_kept() {
        let (pool, listener) = pool_with_listener(4);
        smol::block_on(async {
            for _ in 0..2 {
                let (conn, _) = smol::future::zip(pool.dial(None), listener.accept()).await;
                pool.checkin(conn.unwrap());
            }
            pool.close_unusable(Instant::now());
            assert_eq!(pool.idle_count(), 2, "fresh connections stay");
            pool.close_unusable(Instant::now() + MAX_IDLE_AGE + Duration::from_secs(1));
            assert_eq!(pool.idle_count(), 0, "stale ones are closed");
            let (conn, _) = smol::future::zip(pool.dial(None), listener.accept()).await;
            pool.checkin(conn.unwrap());
            pool.liveness.suspect("test");
            pool.close_unusable(Instant::now());
            assert_eq!(pool.idle_count(), 0, "suspect ones are closed");
        });
    }

    #[test]
    fn idle_list_is_capped() {
        let (pool, listener) = pool_with_listener(1);
        smol::block_on(async {
            let (a, _) = smol::future::zip(pool.dial(None), listener.accept()).await;
            let (b, _) = smol::future::zip(pool.dial(None), listener.accept()).await;
            pool.checkin(a.unwrap());
            pool.checkin(b.unwrap());
            assert_eq!(pool.idle_count(), 1);
        });
    }
}
