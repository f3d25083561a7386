//! Connector: dials the API server over TCP (+TLS) with a timeout; one per client, never shared.
//!
//! Each [`Client`](super::Client) builds its own connector from its own config, so the lease
//! client's connections are never the main client's, and a stuck main connection cannot hold
//! up a lease renewal. Through a proxy, each connection is its own tunnel (HTTP CONNECT or
//! SOCKS5). A client certificate from a credential plugin is passed per dial, so new
//! connections present the current one.

use super::Error;
use super::config::{ClientIdentity, Config};
use super::proxy::{Proxy, ProxyScheme};
use super::tls_setup::TlsSetup;
use super::tls_stream::TlsStream;
use crate::deadline::or_timeout;
use smol::io::{AsyncRead, AsyncWrite};
use smol::net::TcpStream;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

/// Dials new connections to one server.
pub struct Connector {
    host: String,
    port: u16,
    tls: Option<TlsSetup>,
    proxy: Option<Proxy>,
    connect_timeout: Duration,
}

impl Connector {
    pub fn new(config: &Config) -> Result<Connector, Error> {
        let url = &config.server;
        let host = url
            .host_str()
            .ok_or_else(|| Error::Refused(format!("server URL {url} has no host")))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = url.port_or_known_default().ok_or_else(|| {
            Error::Refused(format!("server URL {url} has no port and no known default"))
        })?;
        let tls = match url.scheme() {
            "https" => Some(TlsSetup::new(&config.tls, &host)?),
            "http" => None,
            other => {
                return Err(Error::Refused(format!(
                    "server URL scheme {other:?} is not supported; use https:// or http://"
                )));
            }
        };
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let proxy = super::proxy::resolve(&config.proxy, url, &env).map_err(Error::Refused)?;
        if let Some(proxy) = &proxy {
            log::info!(
                "client {:?} reaches {url} through proxy {proxy:?}",
                config.name
            );
        }
        Ok(Connector {
            host,
            port,
            tls,
            proxy,
            connect_timeout: config.connect_timeout,
        })
    }

    /// Opens a new connection (TCP, then the TLS handshake), all within the connect timeout,
    /// presenting `identity` (from a credential plugin) if given instead of the config's client
    /// certificate.
    pub async fn connect_as(&self, identity: Option<&ClientIdentity>) -> Result<Connection, Error> {
        let dial = async {
            let tcp = self.dial_tcp().await?;
            // Requests are small and latency matters more than packet count.
            if let Err(e) = tcp.set_nodelay(true) {
                log::debug!("TCP_NODELAY not set: {e}");
            }
            if let Err(e) = keep_alive(&tcp) {
                log::debug!("TCP keep-alive not set: {e}");
            }
            let stream = match &self.tls {
                None => Box::new(tcp) as Stream,
                Some(tls) => Box::new(self.handshake(tls, identity, tcp).await?),
            };
            Ok(Connection::new(stream))
        };
        or_timeout(dial, smol::Timer::after(self.connect_timeout), || {
            format!(
                "connecting to {}:{} took longer than {:?}",
                self.host, self.port, self.connect_timeout
            )
        })
        .await
    }

    /// TCP to the server, or to the proxy and then a tunnel (CONNECT or SOCKS5) to the server.
    async fn dial_tcp(&self) -> Result<TcpStream, Error> {
        let Some(proxy) = &self.proxy else {
            return TcpStream::connect((self.host.as_str(), self.port))
                .await
                .map_err(|e| {
                    Error::Transport(format!("connect to {}:{}: {e}", self.host, self.port))
                });
        };
        let mut tcp = TcpStream::connect((proxy.host.as_str(), proxy.port))
            .await
            .map_err(|e| Error::Transport(format!("connect to proxy {proxy:?}: {e}")))?;
        match proxy.scheme {
            ProxyScheme::Http => {
                super::tunnel::open(&mut tcp, proxy, &self.host, self.port).await?
            }
            ProxyScheme::Socks5 => {
                super::socks::open(&mut tcp, proxy, &self.host, self.port).await?
            }
        }
        Ok(tcp)
    }

    async fn handshake(
        &self,
        tls: &TlsSetup,
        identity: Option<&ClientIdentity>,
        tcp: TcpStream,
    ) -> Result<TlsStream<TcpStream>, Error> {
        let ssl = tls.ssl(identity)?;
        super::tls_stream::connect(ssl, tcp)
            .await
            .map_err(|e| {
                Error::Transport(format!(
                    "TLS handshake with {}:{} (as {:?}) failed: {e}; check the cluster's certificate-authority and tls-server-name",
                    self.host, self.port, tls.server_name
                ))
            })
    }
}

/// Idle time before the kernel probes a quiet connection: 15 s, Go's dialer default (client-go
/// uses 30 s).
pub const KEEP_ALIVE_IDLE: Duration = Duration::from_secs(15);
/// Time between unanswered keep-alive probes.
pub const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(5);
/// Unanswered probes before the kernel gives the connection up.
pub const KEEP_ALIVE_PROBES: u32 = 3;
/// How long sent data may stay unacknowledged, probes included, before the kernel gives the
/// connection up: idle + interval × probes, so both paths agree. A flow a NAT or load
/// balancer dropped is then noticed in 30 s; with the kernel's defaults (9 probes, and 15
/// retransmissions for unacknowledged data) it took minutes.
pub const USER_TIMEOUT: Duration = Duration::from_secs(30);

fn keep_alive(tcp: &TcpStream) -> std::io::Result<()> {
    use rustix::net::sockopt;
    sockopt::set_socket_keepalive(tcp, true)?;
    sockopt::set_tcp_keepidle(tcp, KEEP_ALIVE_IDLE)?;
    sockopt::set_tcp_keepintvl(tcp, KEEP_ALIVE_INTERVAL)?;
    sockopt::set_tcp_keepcnt(tcp, KEEP_ALIVE_PROBES)?;
    let millis = u32::try_from(USER_TIMEOUT.as_millis()).unwrap_or(u32::MAX);
    sockopt::set_tcp_user_timeout(tcp, millis)?;
    Ok(())
}

/// A plain TCP or TLS byte stream.
pub type Stream = Box<dyn Socket>;

/// What a connection's stream is besides bytes: the TCP socket under it, and, with TLS, record
/// buffers to free.
pub trait Socket: AsyncRead + AsyncWrite + Send + Unpin {
    /// The TCP socket (for socket options).
    fn tcp(&self) -> &TcpStream;

    /// Frees the TLS record buffers if they hold nothing (see [`super::tls_buffers`]).
    fn release_buffers(&mut self) {}
}

impl Socket for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Socket for TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.socket()
    }

    fn release_buffers(&mut self) {
        TlsStream::release_buffers(self);
    }
}

/// A byte stream shared by its handles, as `async_h1::connect` takes its stream by value.
pub type Shared = async_dup::Arc<async_dup::Mutex<Stream>>;

/// One connection, and its number for logs.
///
/// Clones are the same connection: the pool keeps one clone while async-h1 reads the response
/// body through a handle on its stream ([`Connection::io`]), which is why a body must be read
/// to the end before reuse.
#[derive(Clone)]
pub struct Connection {
    stream: Shared,
    id: u64,
}

impl Connection {
    fn new(stream: Stream) -> Connection {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Connection {
            stream: async_dup::Arc::new(async_dup::Mutex::new(stream)),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// A process-unique number, for logs.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// A handle to read and write the connection through.
    pub fn io(&self) -> Shared {
        self.stream.clone()
    }

    /// Makes the eventual close reset the connection (`SO_LINGER` 0) instead of delivering
    /// what is still unsent: for writes in flight when the fence closes, which must not reach
    /// the server later, after a partition heals.
    pub fn reset_on_close(&self) -> io::Result<()> {
        let tcp = self.stream.lock();
        rustix::net::sockopt::set_socket_linger(tcp.tcp(), Some(Duration::ZERO))?;
        Ok(())
    }

    /// Frees the TLS record buffers of a connection going idle, if they hold nothing.
    pub fn release_buffers(&self) {
        self.stream.lock().release_buffers();
    }

    /// Whether an idle connection still looks usable: not closed by the server and with no
    /// unexpected bytes waiting. Checked without blocking before a pooled connection is reused.
    pub fn is_idle_and_open(&self) -> bool {
        let mut probe = [0u8; 1];
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut handle = self.stream.clone();
        matches!(
            Pin::new(&mut handle).poll_read(&mut cx, &mut probe),
            Poll::Pending
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_types::Url;
    use smol::io::{AsyncReadExt, AsyncWriteExt};

    /// A connection dialed by a connector for a plain `http://` server on this host, and the
    /// server's end of it.
    async fn dialed() -> (Connection, TcpStream) {
        let listener = smol::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = Url::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        let connector = Connector::new(&Config::new(url)).unwrap();
        let (conn, accepted) =
            smol::future::zip(connector.connect_as(None), listener.accept()).await;
        (conn.unwrap(), accepted.unwrap().0)
    }

    #[test]
    fn plain_connection_round_trips_and_notices_the_peer_closing() {
        smol::block_on(async {
            let (conn, mut server) = dialed().await;
            assert!(conn.is_idle_and_open());
            conn.io().write_all(b"ping").await.unwrap();
            let mut buf = [0u8; 4];
            server.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"ping");
            drop(server);
            smol::Timer::after(Duration::from_millis(50)).await;
            assert!(!conn.is_idle_and_open());
        });
    }

    #[test]
    fn connections_are_dialed_with_nodelay_and_keep_alive() {
        smol::block_on(async {
            let (conn, _server) = dialed().await;
            let stream = conn.stream.lock();
            let tcp = stream.tcp();
            assert!(tcp.nodelay().unwrap());
            assert!(rustix::net::sockopt::socket_keepalive(tcp).unwrap());
            use rustix::net::sockopt;
            assert_eq!(sockopt::tcp_keepidle(tcp).unwrap(), KEEP_ALIVE_IDLE);
            assert_eq!(sockopt::tcp_keepintvl(tcp).unwrap(), KEEP_ALIVE_INTERVAL);
            assert_eq!(sockopt::tcp_keepcnt(tcp).unwrap(), KEEP_ALIVE_PROBES);
            assert_eq!(sockopt::tcp_user_timeout(tcp).unwrap(), 30_000);
            drop(stream);
            conn.reset_on_close().unwrap();
            let stream = conn.stream.lock();
            let tcp = stream.tcp();
            assert_eq!(sockopt::socket_linger(tcp).unwrap(), Some(Duration::ZERO));
        });
    }

    #[test]
    fn refused_dial_is_a_transport_error_naming_the_address() {
        // Bind then drop to find a port nobody listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = Url::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        let connector = Connector::new(&Config::new(url)).unwrap();
        let err = smol::block_on(connector.connect_as(None)).err().unwrap();
        assert!(
            matches!(&err, Error::Transport(m) if m.contains(&port.to_string())),
            "{err}"
        );
    }

    #[test]
    fn unsupported_scheme_and_bad_ca_are_refused_up_front() {
        let config = Config::new(Url::parse("ftp://example").unwrap());
        assert!(matches!(Connector::new(&config), Err(Error::Refused(_))));
        let mut config = Config::new(Url::parse("https://example").unwrap());
        config.tls.ca_pem = Some(b"not a certificate".to_vec());
        assert!(matches!(Connector::new(&config), Err(Error::Refused(_))));
    }
}
