//! The metrics port's TLS handshake: bounded in time, in memory and in executor time.
//!
//! - The whole ClientHello is read first ([`super::client_hello`]): a half-sent one holds only
//!   its bytes, and no OpenSSL state, until [`HANDSHAKE_TIMEOUT`] closes it.
//! - The expensive step (key exchange and signature, computed when OpenSSL reads the
//!   ClientHello) takes one of [`HANDSHAKE_SLOTS`] slots, and keeps it until every other ready
//!   task has run once. A burst of ClientHellos is so computed a few at a time, between the
//!   controllers' and `/healthz`'s turns, instead of all at once ahead of them.
//! - A client that speaks plain HTTP to this port is told so (400), as Go's servers do.

use std::pin::pin;
use std::time::Instant;

use smol::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use smol::lock::Semaphore;
use smol::net::TcpStream;

use super::admission::{Ticket, Touching};
use super::client_hello::{FirstRecord, Prefix, Replay, read_first};
use super::limits::HANDSHAKE_SLOTS;
use super::refusals::Refusal;
use super::tls::MetricsTls;
use crate::kube::tls_stream::{self, TlsStream};

/// An established server-side TLS connection.
pub type Tls = TlsStream<Replay<Touching<TcpStream>>>;

const PLAIN_HTTP_ANSWER: &[u8] = b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/// The metrics server's TLS context and its handshake slots.
pub struct Handshakes {
    tls: MetricsTls,
    slots: Semaphore,
}

impl Handshakes {
    pub fn new(tls: MetricsTls) -> Handshakes {
        Handshakes {
            tls,
            slots: Semaphore::new(HANDSHAKE_SLOTS),
        }
    }

    /// Accepts TLS on `tcp`, finished by `deadline`, or says why not.
    /// The connection is not evictable (see [`Ticket::set_waiting`]) from its whole ClientHello
    /// until its handshake has been computed: that wait is skiff's, not the client's.
    pub async fn accept(
        &self,
        tcp: Touching<TcpStream>,
        ticket: &Ticket,
        deadline: Instant,
    ) -> Result<Tls, Refusal> {
        let late = async {
            smol::Timer::at(deadline).await;
            Err(Refusal::HandshakeTimeout)
        };
        smol::future::or(self.handshake(tcp, ticket), late).await
    }

    async fn handshake<S>(
        &self,
        mut tcp: S,
        ticket: &Ticket,
    ) -> Result<TlsStream<Replay<S>>, Refusal>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let record = match read_first(&mut tcp).await {
            FirstRecord::Hello(record) => record,
            FirstRecord::PlainHttp => {
                let _ = tcp.write_all(PLAIN_HTTP_ANSWER).await;
                return Err(Refusal::HandshakeFailed);
            }
            FirstRecord::Refused(why) => {
                log::debug!("metrics: TLS refused: {why}");
                return Err(Refusal::HandshakeFailed);
            }
            FirstRecord::Closed => return Err(Refusal::HandshakeFailed),
        };
        let ssl = self.tls.ssl().map_err(|e| {
            log::warn!("metrics: cannot start a TLS connection: {e}");
            Refusal::HandshakeFailed
        })?;
        let mut handshake = pin!(tls_stream::accept(
            ssl,
            Replay::new(tcp, Prefix::new(record))
        ));
        ticket.set_waiting(false);
        let slot = self.slots.acquire().await;
        let computed = smol::future::poll_once(handshake.as_mut()).await;
        smol::future::yield_now().await;
        drop(slot);
        ticket.settle();
        ticket.set_waiting(true);
        let result = match computed {
            Some(result) => result,
            None => handshake.await,
        };
        result.map_err(|e| {
            log::debug!("metrics: TLS handshake failed: {e}");
            Refusal::HandshakeFailed
        })
    }
}
