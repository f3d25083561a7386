//! One server's accept loop and each connection's life: admission, TLS on the metrics port,
//! then requests, each within the deadlines and sizes of [`super::limits`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use smol::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use smol::net::{TcpListener, TcpStream};

use super::admission::{Admission, MAX_EVICTING, Ticket, Touching};
use super::handshake::Handshakes;
use super::head::{self, Deadlines, HeadRead, Method};
use super::limits::{HANDSHAKE_TIMEOUT, HEAD_TIMEOUT, IDLE_TIMEOUT, SOCKET_BUFFER_BYTES};
use super::refusals::Refusal;
use super::reply::{self, Reply};
use super::routes::Routes;

/// Pause after a failed `accept` (e.g. out of file descriptors) so the loop never spins hot.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);
/// Longest wait for evicted connections to close before accepting again.
const EVICTION_WAIT: Duration = Duration::from_millis(100);
/// Connections accepted between two turns of the other tasks; well under the cap.
const ACCEPTS_PER_TURN: usize = 16;
/// The kernel's queue of connections not yet accepted (Linux caps it at `somaxconn`, 4,096 by
/// default).
const ACCEPT_QUEUE: i32 = 4096;

/// What every connection of one server shares.
pub struct Server {
    pub name: &'static str,
    pub routes: Routes,
    pub admission: Arc<Admission>,
    /// TLS on the metrics port when served securely.
    pub tls: Option<Handshakes>,
    /// Where its connections run.
    pub executor: Arc<smol::Executor<'static>>,
}

/// Accepts connections on `listener` until the future is dropped.
pub async fn accept_loop(listener: TcpListener, server: Arc<Server>) {
    if let Err(e) = tune_listener(&listener) {
        log::debug!("{} server: listener not tuned: {e}", server.name);
    }
    let mut accepted = 0usize;
    loop {
        match listener.accept().await {
            Ok((tcp, _peer)) => {
                if let Some(ticket) = server.admission.admit(&tcp) {
                    let connection = serve(server.clone(), tcp, ticket);
                    server.executor.spawn(connection).detach();
                }
                accepted = accepted.wrapping_add(1);
                // Let the new connections (and evicted ones) run now and then. A connection
                // is evicted only once the cap's worth of newer ones arrived, so one that
                // sent its request at once (the kubelet's) is read long before.
                if accepted.is_multiple_of(ACCEPTS_PER_TURN) {
                    smol::future::yield_now().await;
                }
                wait_for_evictions(&server.admission).await;
            }
            Err(e) => {
                log::warn!("{} server: accept failed: {e}", server.name);
                smol::Timer::after(ACCEPT_ERROR_PAUSE).await;
            }
        }
    }
}

/// Once [`MAX_EVICTING`] evicted connections still hold their descriptors, waits (briefly)
/// until their tasks have closed them all, so a burst cannot make the server hold more
/// descriptors than its cap allows for. Waiting for the whole batch keeps accepting fast: one
/// wait per batch, not one per connection.
async fn wait_for_evictions(admission: &Admission) {
    if admission.evicting() < MAX_EVICTING {
        return;
    }
    let started = Instant::now();
    while admission.evicting() > 0 && started.elapsed() < EVICTION_WAIT {
        smol::future::yield_now().await;
        if admission.evicting() > 0 {
            smol::Timer::after(Duration::from_millis(1)).await;
        }
    }
}

/// A small receive buffer for the accepted sockets (they inherit the listener's; the send
/// buffer stays the kernel's, so a response is not held back waiting for acknowledgements),
/// and a long accept queue: a burst of connections then waits in the kernel's queue instead
/// of having its SYNs dropped, which would make a probe sent in the middle of it wait a
/// second for a retry.
fn tune_listener(listener: &TcpListener) -> std::io::Result<()> {
    use rustix::net::sockopt;
    sockopt::set_socket_recv_buffer_size(listener, SOCKET_BUFFER_BYTES)?;
    rustix::net::listen(listener, ACCEPT_QUEUE)?;
    Ok(())
}

async fn serve(server: Arc<Server>, tcp: TcpStream, ticket: Ticket) {
    let accepted = Instant::now();
    let _ = tcp.set_nodelay(true);
    let socket = tcp.clone();
    let tcp = Touching::new(tcp, ticket.activity());
    match &server.tls {
        None => requests(&server, tcp, socket, &ticket, accepted).await,
        Some(handshakes) => match handshakes
            .accept(tcp, &ticket, accepted + HANDSHAKE_TIMEOUT)
            .await
        {
            Ok(tls) => requests(&server, tls, socket, &ticket, accepted).await,
            Err(refusal) => server.admission.stats.refused(refusal),
        },
    }
}

/// Answers requests on `stream` until the client closes, asks to close, or breaks a limit;
/// `socket` is the TCP connection under it (the same, without TLS).
async fn requests<S>(
    server: &Server,
    mut stream: S,
    mut socket: TcpStream,
    ticket: &Ticket,
    accepted: Instant,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let stats = &server.admission.stats;
    let mut buf = Vec::new();
    let first = accepted + HEAD_TIMEOUT;
    let mut deadlines = Deadlines {
        idle_until: first,
        head_by: Some(first),
    };
    let mut answered = 0u64;
    loop {
        ticket.set_waiting(true);
        let head = match head::read(&mut stream, &mut buf, deadlines).await {
            HeadRead::Head(head) => head,
            HeadRead::Rejected(rejection) => {
                stats.refused(match u16::from(rejection.status) {
                    414 | 431 => Refusal::TooLarge,
                    _ => Refusal::BadRequest,
                });
                let reply = Reply::text(rejection.status, &rejection.why);
                if reply::send(&mut stream, &reply.encode(true, true)).await {
                    reply::close_after_refusal(&mut stream, &mut socket, &mut buf).await;
                }
                return;
            }
            HeadRead::TimedOut => {
                if answered == 0 || !buf.is_empty() {
                    stats.refused(Refusal::HeadTimeout);
                }
                return;
            }
            HeadRead::Closed => return,
        };
        ticket.set_waiting(false);
        let (reply, refusal) = server.routes.respond(&head).await;
        if let Some(refusal) = refusal {
            stats.refused(refusal);
        }
        let bytes = reply.encode(head.method != Method::Head, !head.keep_alive);
        if !reply::send(&mut stream, &bytes).await || !head.keep_alive {
            let _ = stream.close().await;
            return;
        }
        answered += 1;
        if buf.is_empty() {
            // Nothing pipelined: an idle connection holds no buffer.
            buf = Vec::new();
        }
        deadlines = Deadlines {
            idle_until: Instant::now() + IDLE_TIMEOUT,
            head_by: None,
        };
    }
}
