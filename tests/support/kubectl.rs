//! Talking to the e2e control plane as a user would: kubectl, and raw HTTPS requests.
//!
//! Why: the e2e suites check what a cluster admin would see, so they use the real kubectl
//! (`bin/kubectl`, built with the server). The raw GET exists because kubectl hides response
//! headers, and API Priority and Fairness reports its classification only there; a raw write
//! sends exactly one request (kubectl reads an object before it patches it, with rights a
//! thief with skiff's token does not have).

use std::io::{self, BufRead, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use openssl::ssl::{SslConnector, SslMethod};
use openssl::x509::X509;

use super::control_plane::bin_dir;

/// Read and write timeout of a raw request; the control plane is on loopback.
const RAW_TIMEOUT: Duration = Duration::from_secs(10);

/// `bin/kubectl --kubeconfig <file>`, with its discovery cache in the control plane's temp dir
/// (not in the user's home).
pub struct Kubectl {
    kubeconfig: PathBuf,
    cache_dir: PathBuf,
}

impl Kubectl {
    pub fn new(kubeconfig: &Path, control_plane_dir: &Path) -> Kubectl {
        Kubectl {
            kubeconfig: kubeconfig.to_owned(),
            cache_dir: control_plane_dir.join("kubectl-cache"),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(bin_dir().join("kubectl"));
        command
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache_dir)
            .args(args);
        command
    }

    /// Runs kubectl with `args`, whatever its outcome.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run kubectl {}: {e}", args.join(" ")))
    }

    /// Starts kubectl with `args` (a `--watch`, say), its stdout piped, its stderr dropped.
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        self.command(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start kubectl {}: {e}", args.join(" ")))
    }

    /// A watch of one field of one object (`field` as jsonpath, e.g. `.data.k`): the kubectl
    /// process, and one line per change, the first being the object as listed.
    pub fn watch_field(
        &self,
        kind: &str,
        namespace: &str,
        name: &str,
        field: &str,
    ) -> (std::process::Child, impl Iterator<Item = String> + use<>) {
        let template = format!("jsonpath={{{field}}}{{\"\\n\"}}");
        let args = [
            "get", kind, name, "-n", namespace, "--watch", "-o", &template,
        ];
        let mut child = self.spawn(&args);
        let stdout = child.stdout.take().expect("stdout is piped");
        let lines = io::BufReader::new(stdout).lines().map_while(Result::ok);
        (child, lines)
    }

    /// Runs kubectl with `stdin` piped in (for `apply -f -`), whatever its outcome.
    pub fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("run kubectl {}: {e}", args.join(" ")));
        let mut pipe = child.stdin.take().expect("stdin is piped");
        pipe.write_all(stdin.as_bytes())
            .unwrap_or_else(|e| panic!("write kubectl stdin: {e}"));
        drop(pipe);
        child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("wait for kubectl {}: {e}", args.join(" ")))
    }

    /// Runs kubectl; panics with its stderr unless it succeeds; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        succeeded(args, self.run(args))
    }

    /// `kubectl apply -f -` of `manifest` (YAML or JSON); panics unless it succeeds.
    pub fn apply(&self, manifest: &str) -> String {
        let args = ["apply", "-f", "-"];
        succeeded(&args, self.run_with_stdin(&args, manifest))
    }
}

/// stdout of a successful kubectl run; a panic showing the command and stderr otherwise.
pub fn succeeded(args: &[&str], output: Output) -> String {
    output_ok(&format!("kubectl {}", args.join(" ")), output)
}

/// stdout of a successful run of the command `what`; a panic showing it, its exit status,
/// stderr and stdout otherwise.
pub fn output_ok(what: &str, output: Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\nstderr: {}\nstdout: {stdout}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// What came back from a raw request.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    /// Names as sent (HTTP/1.1 from Go: canonical case); look up with [`RawResponse::header`].
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl RawResponse {
    /// The first header named `name`, compared without case.
    pub fn header(&self, name: &str) -> Option<&str> {
        let found = self
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name));
        found.map(|(_, value)| value.as_str())
    }
}

/// One HTTP/1.1 GET over TLS to `base_url` (`https://127.0.0.1:<port>`), trusting only
/// `ca_pem`, with an optional bearer token.
pub fn https_get(
    base_url: &str,
    ca_pem: &str,
    path: &str,
    token: Option<&str>,
) -> io::Result<RawResponse> {
    https_get_accepting(base_url, ca_pem, path, token, "application/json")
}

/// As [`https_get`], asking for the media type `accept` (a list of metadata only, say).
pub fn https_get_accepting(
    base_url: &str,
    ca_pem: &str,
    path: &str,
    token: Option<&str>,
    accept: &str,
) -> io::Result<RawResponse> {
    let request = RawRequest {
        method: "GET",
        path,
        accept,
        body: None,
    };
    https_request(base_url, ca_pem, token, &request)
}

/// One raw request: its method, path (with the query), Accept, and body with its media type.
pub struct RawRequest<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub accept: &'a str,
    pub body: Option<(&'a str, &'a str)>,
}

/// One HTTP/1.1 request over TLS to `base_url` (`https://127.0.0.1:<port>`), trusting only
/// `ca_pem`, with an optional bearer token, on a connection of its own.
pub fn https_request(
    base_url: &str,
    ca_pem: &str,
    token: Option<&str>,
    request: &RawRequest,
) -> io::Result<RawResponse> {
    let authority = base_url
        .strip_prefix("https://")
        .ok_or_else(|| invalid("not https"))?;
    let host = authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host);
    let mut connector = SslConnector::builder(SslMethod::tls_client()).map_err(io::Error::other)?;
    let ca = X509::from_pem(ca_pem.as_bytes()).map_err(io::Error::other)?;
    connector
        .cert_store_mut()
        .add_cert(ca)
        .map_err(io::Error::other)?;
    let tcp = TcpStream::connect(authority)?;
    tcp.set_read_timeout(Some(RAW_TIMEOUT))?;
    tcp.set_write_timeout(Some(RAW_TIMEOUT))?;
    let mut tls = connector
        .build()
        .connect(host, tcp)
        .map_err(io::Error::other)?;
    let authorization = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let content = request.body.map_or(String::new(), |(media_type, body)| {
        format!(
            "Content-Type: {media_type}\r\nContent-Length: {}\r\n",
            body.len()
        )
    });
    let head = format!(
        "{} {} HTTP/1.1\r\nHost: {authority}\r\n{authorization}\
         Accept: {}\r\n{content}Connection: close\r\n\r\n",
        request.method, request.path, request.accept
    );
    tls.write_all(head.as_bytes())?;
    if let Some((_, body)) = request.body {
        tls.write_all(body.as_bytes())?;
    }
    let mut raw = Vec::new();
    // The server closes after the response; an unclean TLS close after it is no error here.
    let read = tls.read_to_end(&mut raw);
    let response = parse_response(&raw);
    match (response, read) {
        (Some(response), _) => Ok(response),
        (None, Err(e)) => Err(e),
        (None, Ok(_)) => Err(invalid("incomplete HTTP response")),
    }
}

fn parse_response(raw: &[u8]) -> Option<RawResponse> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..split]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let mut response = RawResponse {
        status,
        headers,
        body: String::new(),
    };
    let body = &raw[split + 4..];
    let chunked = response.header("transfer-encoding") == Some("chunked");
    response.body = if chunked {
        String::from_utf8_lossy(&dechunk(body)?).into_owned()
    } else {
        String::from_utf8_lossy(body).into_owned()
    };
    Some(response)
}

/// The payload of a complete chunked body; None if it is cut short.
fn dechunk(mut body: &[u8]) -> Option<Vec<u8>> {
    let mut payload = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&body[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Some(payload);
        }
        payload.extend_from_slice(body.get(..size)?);
        body = body.get(size + 2..)?;
    }
}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_owned())
}
