//! A client certificate from an exec plugin is what new connections present, and a 401 to it
//! runs the plugin again and reconnects with the new certificate.
//!
//! Why a server of its own: neither the fake API server nor the e2e control plane asks for a
//! client certificate. This one (openssl, blocking, one thread per connection) records the
//! certificate's CN of every TLS connection and answers each request with a ConfigMap, or 401
//! while told to.

use crate::support::fake::tls::self_signed;
use crate::support::plugin::{EXEC_API, Plugin, exec_kubeconfig};
use crate::support::skiff::TempDir;
use openssl::pkey::{PKey, Private};
use openssl::ssl::{SslAcceptor, SslMethod, SslStream, SslVerifyMode};
use skiff::kube::api::ConfigMap;
use skiff::kube::{Client, load_kubeconfig_files};
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const CONFIGMAP: &str =
    r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"ns"}}"#;
const UNAUTHORIZED: &str = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","message":"Unauthorized","code":401}"#;

fn key() -> PKey<Private> {
    PKey::from_rsa(openssl::rsa::Rsa::generate(2048).expect("RSA")).expect("key")
}

/// Records the client certificate CN of each connection; answers 401 while `reject` > 0.
struct CertServer {
    port: u16,
    cns: Arc<Mutex<Vec<String>>>,
    reject: Arc<AtomicUsize>,
}

impl CertServer {
    fn start() -> CertServer {
        let key = key();
        let mut acceptor =
            SslAcceptor::mozilla_intermediate_v5(SslMethod::tls()).expect("acceptor");
        acceptor.set_private_key(&key).expect("server key");
        acceptor
            .set_certificate(&self_signed(&key, "server").expect("certificate"))
            .expect("server cert");
        // Any client certificate will do: the test reads its CN.
        acceptor.set_verify_callback(
            SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT,
            |_, _| true,
        );
        let acceptor = Arc::new(acceptor.build());
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let cns = Arc::new(Mutex::new(Vec::new()));
        let reject = Arc::new(AtomicUsize::new(0));
        let (seen, rejecting) = (cns.clone(), reject.clone());
        std::thread::spawn(move || {
            for tcp in listener.incoming().flatten() {
                let (acceptor, seen, rejecting) =
                    (acceptor.clone(), seen.clone(), rejecting.clone());
                std::thread::spawn(move || {
                    if let Ok(tls) = acceptor.accept(tcp) {
                        seen.lock().expect("lock").push(peer_cn(&tls));
                        answer(tls, &rejecting);
                    }
                });
            }
        });
        CertServer { port, cns, reject }
    }

    fn cns(&self) -> Vec<String> {
        self.cns.lock().expect("lock").clone()
    }
}

fn peer_cn(tls: &SslStream<TcpStream>) -> String {
    let Some(cert) = tls.ssl().peer_certificate() else {
        return "<none>".into();
    };
    let cn = cert
        .subject_name()
        .entries_by_nid(openssl::nid::Nid::COMMONNAME)
        .next()
        .and_then(|entry| entry.data().to_string().ok());
    cn.unwrap_or_default()
}

/// Answers GET requests (no bodies) on one keep-alive connection until it closes.
fn answer(tls: SslStream<TcpStream>, reject: &AtomicUsize) {
    let mut reader = BufReader::new(tls);
    loop {
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
        }
        let rejected = reject
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        let (status, body) = if rejected {
            ("401 Unauthorized", UNAUTHORIZED)
        } else {
            ("200 OK", CONFIGMAP)
        };
        let reply = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        if reader.get_mut().write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

#[test]
fn new_connections_present_the_plugins_current_client_certificate() {
    let server = CertServer::start();
    let dir = TempDir::new("exec-cert");
    for n in [1, 2] {
        let key = key();
        let cert = self_signed(&key, &format!("client-{n}")).expect("certificate");
        let reply = serde_json::json!({
            "apiVersion": EXEC_API,
            "kind": "ExecCredential",
            "status": {
                "clientCertificateData": String::from_utf8(cert.to_pem().expect("PEM")).expect("UTF-8"),
                "clientKeyData": String::from_utf8(key.private_key_to_pem_pkcs8().expect("PEM")).expect("UTF-8"),
            },
        });
        std::fs::write(dir.0.join(format!("reply-{n}.json")), reply.to_string()).expect("write");
    }
    let plugin = Plugin::write(&dir.0, "cat \"$here/reply-$n.json\"");
    let url = format!("https://127.0.0.1:{}", server.port);
    let extra = ["insecure-skip-tls-verify: true"];
    let kubeconfig = exec_kubeconfig(&dir.0, &url, None, &plugin, "ns", &extra);
    let config = load_kubeconfig_files(&[kubeconfig], None).expect("kubeconfig");
    let client = Client::new(config).expect("client");
    let get = || smol::block_on(client.get::<ConfigMap>(Some("ns"), "app"));

    get().expect("first certificate accepted");
    get().expect("same connection, same certificate");
    assert_eq!(server.cns(), ["client-1"], "one connection so far");

    // The server rejects client-1: the plugin runs again, and the retry presents client-2 on a
    // new connection (the idle ones with client-1 are closed).
    server.reject.store(1, Ordering::SeqCst);
    get().expect("the retry with the new certificate succeeds");
    assert_eq!(plugin.runs(), 2);
    assert_eq!(server.cns(), ["client-1", "client-2"]);
    get().expect("client-2's connection is reused");
    assert_eq!(server.cns(), ["client-1", "client-2"]);
}
