//! The connections that carry a write right now, so they can be reset when the fence closes,
//! and so a write given up on (timed out, cancelled) resets its connection.
//!
//! Why: a Lease is not a fencing token. A write sent just before a partition sits in the
//! kernel's send buffer and is retransmitted when the network heals, reaching the API server
//! after another replica leads. Closing such a connection normally would not stop that: the
//! kernel keeps delivering unsent data after `close`. Setting `SO_LINGER` 0 first makes the
//! close a reset, which discards it.

use super::connect::Connection;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// One client's connections with a mutating request in flight.
#[derive(Default)]
pub struct InFlightWrites {
    conns: Mutex<HashMap<u64, Connection>>,
}

/// Keeps a connection listed while its write is in flight; dropping it takes it off the list.
/// Dropped before [`Tracked::answered`] (the exchange timed out or was cancelled), it makes the
/// connection reset on close: a write the caller gave up on must not land later.
pub struct Tracked<'a> {
    writes: &'a InFlightWrites,
    conn: Connection,
    answered: bool,
}

impl InFlightWrites {
    /// Lists `conn` until the returned guard is dropped.
    pub fn track(&self, conn: &Connection) -> Tracked<'_> {
        self.lock().insert(conn.id(), conn.clone());
        Tracked {
            writes: self,
            conn: conn.clone(),
            answered: false,
        }
    }

    /// Makes every listed connection reset when it closes, and forgets them (so this list
    /// keeps none of them open). Returns how many there were.
    pub fn reset_all(&self) -> usize {
        let conns: Vec<Connection> = self.lock().drain().map(|(_, conn)| conn).collect();
        conns.iter().for_each(reset_on_close);
        conns.len()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Connection>> {
        // A map of handles stays valid even if a holder panicked.
        self.conns.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Tracked<'_> {
    /// The server's reply arrived: the write is done, whatever it said.
    pub fn answered(&mut self) {
        self.answered = true;
    }
}

impl Drop for Tracked<'_> {
    fn drop(&mut self) {
        self.writes.lock().remove(&self.conn.id());
        if !self.answered {
            reset_on_close(&self.conn);
        }
    }
}

fn reset_on_close(conn: &Connection) {
    if let Err(e) = conn.reset_on_close() {
        log::debug!("SO_LINGER 0 not set on connection {}: {e}", conn.id());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::config::Config;
    use crate::kube::connect::Connector;
    use http_types::Url;
    use std::io::Read as _;

    /// A connection to a loopback listener, and the server's end of it.
    fn connection() -> (Connection, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
        let conn =
            smol::block_on(Connector::new(&Config::new(url)).unwrap().connect_as(None)).unwrap();
        (conn, listener.accept().unwrap().0)
    }

    /// How the server sees the client go: `true` for a reset, `false` for a clean close.
    fn closed_with_reset(mut server: std::net::TcpStream) -> bool {
        let mut buf = [0u8; 16];
        match server.read(&mut buf) {
            Ok(0) => false,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
            Ok(n) => panic!("{n} unexpected bytes"),
        }
    }

    #[test]
    fn an_answered_write_closes_cleanly_and_an_abandoned_one_resets() {
        let writes = InFlightWrites::default();
        let (conn, server) = connection();
        let mut tracked = writes.track(&conn);
        tracked.answered();
        drop((tracked, conn));
        assert!(
            !closed_with_reset(server),
            "an answered write reset its connection"
        );

        let (conn, server) = connection();
        drop((writes.track(&conn), conn));
        assert!(
            closed_with_reset(server),
            "an abandoned write closed cleanly"
        );
    }

    #[test]
    fn reset_all_resets_the_writes_in_flight_and_forgets_them() {
        let writes = InFlightWrites::default();
        let (conn, server) = connection();
        let mut tracked = writes.track(&conn);
        assert_eq!(writes.reset_all(), 1);
        assert_eq!(writes.reset_all(), 0, "forgotten");
        tracked.answered();
        drop((tracked, conn));
        assert!(closed_with_reset(server), "the fence's reset did not stick");
    }
}
