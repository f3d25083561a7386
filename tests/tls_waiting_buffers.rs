//! A TLS connection waiting for data holds no record buffer: a read that finds nothing frees
//! the 16 KiB OpenSSL allocated for it (`skiff::kube::tls_stream`). Its own test binary: one
//! thread allocating, so malloc's figures are this test's alone.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn connections_waiting_to_read_give_their_buffers_back() {
    use openssl::ssl::SslVerifyMode;
    use openssl::ssl::{Ssl, SslAcceptor, SslConnector, SslMethod, SslMode, SslOptions};
    use skiff::kube::tls_stream;
    use smol::future::{poll_once, zip};
    use smol::io::{AsyncReadExt, AsyncWriteExt};
    use smol::net::{TcpListener, TcpStream};

    const CONNECTIONS: usize = 16;
    let key = openssl::pkey::PKey::from_ec_key(
        openssl::ec::EcKey::generate(
            &openssl::ec::EcGroup::from_curve_name(openssl::nid::Nid::X9_62_PRIME256V1).unwrap(),
        )
        .unwrap(),
    )
    .unwrap();
    let mut acceptor = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls_server()).unwrap();
    acceptor.set_private_key(&key).unwrap();
    acceptor.set_certificate(&self_signed(&key)).unwrap();
    // No session tickets: a client's first read would otherwise keep one, blurring the figure.
    acceptor.set_options(SslOptions::NO_TICKET);
    acceptor.set_mode(SslMode::RELEASE_BUFFERS);
    let acceptor = acceptor.build();
    let mut connector = SslConnector::builder(SslMethod::tls_client()).unwrap();
    connector.set_verify(SslVerifyMode::NONE);
    connector.set_mode(SslMode::RELEASE_BUFFERS);
    let connector = connector.build();

    smol::block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let servers = async {
            let mut accepted = Vec::new();
            for _ in 0..CONNECTIONS {
                let (tcp, _) = listener.accept().await.unwrap();
                let ssl = Ssl::new(acceptor.context()).unwrap();
                accepted.push(tls_stream::accept(ssl, tcp).await.unwrap());
            }
            accepted
        };
        let clients = async {
            let mut dialed = Vec::new();
            for _ in 0..CONNECTIONS {
                let tcp = TcpStream::connect(addr).await.unwrap();
                let ssl = connector
                    .configure()
                    .unwrap()
                    .into_ssl("localhost")
                    .unwrap();
                dialed.push(tls_stream::connect(ssl, tcp).await.unwrap());
            }
            dialed
        };
        let (mut servers, mut clients) = zip(servers, clients).await;

        let before = in_use();
        let mut buf = [0u8; 64];
        for client in &mut clients {
            assert!(
                poll_once(client.read(&mut buf)).await.is_none(),
                "nothing to read yet"
            );
        }
        let grown = in_use().saturating_sub(before);
        assert!(
            grown < CONNECTIONS * 4 * 1024,
            "{CONNECTIONS} connections waiting to read hold {grown} B more"
        );

        for (server, client) in servers.iter_mut().zip(&mut clients) {
            server.write_all(b"hello").await.unwrap();
            server.flush().await.unwrap();
            let mut hello = [0u8; 5];
            client.read_exact(&mut hello).await.unwrap();
            assert_eq!(
                &hello, b"hello",
                "a connection reads on after its buffer was freed"
            );
        }
    });
}

/// Bytes malloc has handed out and not taken back.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn in_use() -> usize {
    // SAFETY: mallinfo2 takes malloc's locks itself and returns its figures by value.
    unsafe { libc::mallinfo2() }.uordblks
}

/// A certificate for `key`, CN `localhost`, valid for a day.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn self_signed(key: &openssl::pkey::PKey<openssl::pkey::Private>) -> openssl::x509::X509 {
    let mut name = openssl::x509::X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", "localhost").unwrap();
    let name = name.build();
    let mut cert = openssl::x509::X509Builder::new().unwrap();
    cert.set_version(2).unwrap();
    cert.set_subject_name(&name).unwrap();
    cert.set_issuer_name(&name).unwrap();
    cert.set_pubkey(key).unwrap();
    cert.set_not_before(&openssl::asn1::Asn1Time::days_from_now(0).unwrap())
        .unwrap();
    cert.set_not_after(&openssl::asn1::Asn1Time::days_from_now(1).unwrap())
        .unwrap();
    cert.sign(key, openssl::hash::MessageDigest::sha256())
        .unwrap();
    cert.build()
}
