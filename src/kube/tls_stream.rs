//! TLS streams on smol, from an OpenSSL context built once: each client's (`SslConnector`), and
//! the metrics server's ([`accept`]).
//!
//! async-native-tls builds a new OpenSSL context (`SSL_CTX`) for every connection it dials:
//! the cipher and signature tables, the trust store (the cluster CA), and first the system's
//! default roots, which OpenSSL parses from the host's CA bundle before native-tls replaces
//! them with the cluster's. Measured on a real control plane, that was 250 KB kept for seven
//! connections and about 300 KB of short-lived allocations per dial on a host with a CA
//! bundle. Here the context is made once per client (`connect.rs`) and each connection only
//! adds its `SSL` state, whose 16 KiB buffers the context's `RELEASE_BUFFERS` mode frees
//! while the connection is idle, and [`super::tls_buffers`] while a read waits for data.
//!
//! The bridge is the usual one: the TLS stream reads and writes a std `Read + Write` adapter
//! that polls the async socket with the waker of the current task and turns `Pending` into
//! `WouldBlock`; each async call hands the adapter its task's waker first.

use openssl::ssl::{HandshakeError, MidHandshakeSslStream, Ssl, SslStream};
use openssl::x509::X509VerifyResult;
use smol::io::{AsyncRead, AsyncWrite};
use std::future::poll_fn;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// Dials a TLS connection over `stream` with `ssl` (made from the client's shared context for
/// this server name).
pub async fn connect<S>(ssl: Ssl, stream: S) -> io::Result<TlsStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    handshake(ssl, stream, Ssl::connect).await
}

/// Accepts a TLS connection over `stream` with `ssl` (made from a server context).
pub async fn accept<S>(ssl: Ssl, stream: S) -> io::Result<TlsStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    handshake(ssl, stream, Ssl::accept).await
}

type Start<S> = fn(Ssl, Bridge<S>) -> Result<SslStream<Bridge<S>>, HandshakeError<Bridge<S>>>;

async fn handshake<S>(ssl: Ssl, stream: S, start: Start<S>) -> io::Result<TlsStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut state = Handshake::Start(ssl, stream);
    poll_fn(|cx| {
        let attempt = match std::mem::replace(&mut state, Handshake::Finished) {
            Handshake::Start(ssl, stream) => start(ssl, Bridge::new(stream, cx)),
            Handshake::Midway(mut midway) => {
                midway.get_mut().set_waker(cx);
                midway.handshake()
            }
            Handshake::Finished => {
                return Poll::Ready(Err(io::Error::other(
                    "TLS handshake polled after it finished",
                )));
            }
        };
        match attempt {
            Ok(tls) => Poll::Ready(Ok(TlsStream { tls })),
            Err(HandshakeError::WouldBlock(midway)) => {
                state = Handshake::Midway(midway);
                Poll::Pending
            }
            Err(HandshakeError::Failure(failed)) => Poll::Ready(Err(handshake_error(&failed))),
            Err(HandshakeError::SetupFailure(e)) => Poll::Ready(Err(io::Error::other(e))),
        }
    })
    .await
}

enum Handshake<S> {
    Start(Ssl, S),
    Midway(MidHandshakeSslStream<Bridge<S>>),
    Finished,
}

/// The handshake's error, with the reason a certificate was refused when it was.
fn handshake_error<S>(failed: &MidHandshakeSslStream<S>) -> io::Error {
    let verify = failed.ssl().verify_result();
    if verify == X509VerifyResult::OK {
        io::Error::other(failed.error().to_string())
    } else {
        io::Error::other(format!(
            "{} (certificate verification: {})",
            failed.error(),
            verify.error_string()
        ))
    }
}

/// An established TLS connection over `S`.
pub struct TlsStream<S> {
    tls: SslStream<Bridge<S>>,
}

impl<S> TlsStream<S> {
    /// The socket under the TLS layer (for socket options).
    pub fn socket(&self) -> &S {
        &self.tls.get_ref().socket
    }

    /// Frees the connection's record buffers if they hold nothing (see [`super::tls_buffers`]):
    /// done by every read that finds nothing to read, and by the pool when a connection goes
    /// idle. Whether they were freed.
    pub fn release_buffers(&mut self) -> bool {
        super::tls_buffers::release_if_empty(self.tls.ssl())
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream<S> {
    /// Runs one std I/O call with the task's waker; `WouldBlock` means the socket registered it.
    fn poll_io<R>(
        &mut self,
        cx: &mut Context<'_>,
        io: impl FnOnce(&mut SslStream<Bridge<S>>) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        self.tls.get_mut().set_waker(cx);
        match io(&mut self.tls) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Poll::Pending,
            result => Poll::Ready(result),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for TlsStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let read = this.poll_io(cx, |tls| tls.read(buf));
        if read.is_pending() {
            this.release_buffers();
        }
        read
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for TlsStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_io(cx, |tls| tls.write(buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_io(cx, |tls| tls.flush())
    }

    /// Sends TLS's close_notify, then closes the socket.
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let close_notify = |tls: &mut SslStream<Bridge<S>>| {
            tls.shutdown()
                .map(|_| ())
                .map_err(|e| e.into_io_error().unwrap_or_else(io::Error::other))
        };
        match this.poll_io(cx, close_notify) {
            Poll::Pending => return Poll::Pending,
            // A peer that already closed is closed; the socket is closed below either way.
            Poll::Ready(Ok(())) | Poll::Ready(Err(_)) => {}
        }
        Pin::new(&mut this.tls.get_mut().socket).poll_close(cx)
    }
}

/// std `Read + Write` over an async socket, for OpenSSL: `Pending` becomes `WouldBlock`.
struct Bridge<S> {
    socket: S,
    waker: Waker,
}

impl<S> Bridge<S> {
    fn new(socket: S, cx: &Context<'_>) -> Bridge<S> {
        Bridge {
            socket,
            waker: cx.waker().clone(),
        }
    }

    fn set_waker(&mut self, cx: &Context<'_>) {
        if !self.waker.will_wake(cx.waker()) {
            self.waker = cx.waker().clone();
        }
    }

    fn poll<R>(
        &mut self,
        io: impl FnOnce(Pin<&mut S>, &mut Context<'_>) -> Poll<io::Result<R>>,
    ) -> io::Result<R>
    where
        S: Unpin,
    {
        let Bridge { socket, waker } = self;
        match io(Pin::new(socket), &mut Context::from_waker(waker)) {
            Poll::Ready(result) => result,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

impl<S: AsyncRead + Unpin> Read for Bridge<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.poll(|socket, cx| socket.poll_read(cx, buf))
    }
}

impl<S: AsyncWrite + Unpin> Write for Bridge<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.poll(|socket, cx| socket.poll_write(cx, buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.poll(|socket, cx| socket.poll_flush(cx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openssl::ssl::{SslConnector, SslMethod, SslMode};
    use openssl::x509::X509;
    use smol::io::{AsyncReadExt, AsyncWriteExt};
    use smol::net::{TcpListener, TcpStream};

    /// A TLS echo server for one connection at a time, with a self-signed certificate.
    async fn echo_server(listener: TcpListener, acceptor: async_native_tls::TlsAcceptor) {
        while let Ok((tcp, _)) = listener.accept().await {
            let Ok(mut tls) = acceptor.accept(tcp).await else {
                continue;
            };
            let mut buf = vec![0u8; 64 * 1024];
            while let Ok(n) = tls.read(&mut buf).await {
                if n == 0 || tls.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }

    /// A TLS echo server with a fresh self-signed certificate (CN `skiff-test`): its address
    /// and the certificate's PEM.
    async fn start_server() -> (std::net::SocketAddr, Vec<u8>) {
        let key =
            openssl::pkey::PKey::from_rsa(openssl::rsa::Rsa::generate(2048).unwrap()).unwrap();
        let cert = crate::kube::test_cert::self_signed(&key);
        let key_pem = key.private_key_to_pem_pkcs8().unwrap();
        let identity = native_tls::Identity::from_pkcs8(&cert, &key_pem).unwrap();
        let acceptor = native_tls::TlsAcceptor::new(identity).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        smol::spawn(echo_server(listener, acceptor.into())).detach();
        (addr, cert)
    }

    /// A client context trusting only `roots` (PEM).
    fn client_trusting(roots: &[&[u8]]) -> SslConnector {
        let mut store = openssl::x509::store::X509StoreBuilder::new().unwrap();
        for pem in roots {
            store.add_cert(X509::from_pem(pem).unwrap()).unwrap();
        }
        let mut builder = SslConnector::builder(SslMethod::tls_client()).unwrap();
        builder.set_cert_store(store.build());
        builder.set_mode(SslMode::RELEASE_BUFFERS);
        builder.build()
    }

    /// A TLS connection to `addr` through `connector`, for the server name `skiff-test`.
    async fn dial(
        connector: &SslConnector,
        addr: std::net::SocketAddr,
    ) -> io::Result<TlsStream<TcpStream>> {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let ssl = connector
            .configure()
            .unwrap()
            .into_ssl("skiff-test")
            .unwrap();
        connect(ssl, tcp).await
    }

    #[test]
    fn dials_sharing_one_connector_handshake_echo_and_close() {
        smol::block_on(async {
            let (addr, cert) = start_server().await;
            let connector = client_trusting(&[&cert]);
            for dial_no in 0..2 {
                let mut tls = dial(&connector, addr).await.unwrap();
                // Larger than one TLS record, so reads and writes take several turns.
                let message: Vec<u8> = (0..40_000).map(|i| (i * 7 + dial_no) as u8).collect();
                tls.write_all(&message).await.unwrap();
                let mut echoed = vec![0u8; message.len()];
                tls.read_exact(&mut echoed).await.unwrap();
                assert_eq!(echoed, message, "dial {dial_no}");
                tls.close().await.unwrap();
            }
        });
    }

    #[test]
    fn an_untrusted_server_fails_the_handshake() {
        smol::block_on(async {
            let (addr, _cert) = start_server().await;
            // An empty trust store: nothing vouches for the server's certificate.
            let connector = client_trusting(&[]);
            let err = dial(&connector, addr).await.err().map(|e| e.to_string());
            assert!(
                err.as_deref()
                    .is_some_and(|e| e.contains("certificate verification: self-signed")),
                "the handshake must fail naming the unknown certificate: {err:?}"
            );
        });
    }
}
