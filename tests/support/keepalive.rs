//! GETs over one kept-alive TLS connection, for observers that read an object many times a second.
//!
//! Why: a new TLS connection per request costs tens of milliseconds on a busy machine, which is
//! too slow to read a Lease every 100 ms. This client reuses its connection and dials again
//! only after an error.

use std::io::{self, BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use openssl::ssl::{SslConnector, SslMethod, SslStream};
use openssl::x509::X509;

/// Read and write timeout; the server is on loopback.
const TIMEOUT: Duration = Duration::from_secs(10);

/// HTTP/1.1 GETs with a bearer token to `https://127.0.0.1:<port>`, trusting only `ca_pem`.
pub struct KeepAliveGet {
    authority: String,
    ca_pem: String,
    token: String,
    connection: Option<BufReader<SslStream<TcpStream>>>,
}

impl KeepAliveGet {
    pub fn new(base_url: &str, ca_pem: &str, token: &str) -> KeepAliveGet {
        KeepAliveGet {
            authority: base_url.trim_start_matches("https://").to_owned(),
            ca_pem: ca_pem.to_owned(),
            token: token.to_owned(),
            connection: None,
        }
    }

    /// (status, body) of `GET path`; one fresh connection is tried if the kept one fails.
    pub fn get(&mut self, path: &str) -> io::Result<(u16, String)> {
        if self.connection.is_some() {
            match self.get_once(path) {
                Ok(answer) => return Ok(answer),
                Err(_) => self.connection = None,
            }
        }
        let answer = self.get_once(path);
        if answer.is_err() {
            self.connection = None;
        }
        answer
    }

    fn get_once(&mut self, path: &str) -> io::Result<(u16, String)> {
        if self.connection.is_none() {
            self.connection = Some(BufReader::new(self.dial()?));
        }
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Accept: application/json\r\n\r\n",
            self.authority, self.token
        );
        let connection = self
            .connection
            .as_mut()
            .ok_or_else(|| invalid("no connection"))?;
        connection.get_mut().write_all(request.as_bytes())?;
        read_response(connection)
    }

    fn dial(&self) -> io::Result<SslStream<TcpStream>> {
        let host = self
            .authority
            .rsplit_once(':')
            .map_or(self.authority.as_str(), |(host, _)| host);
        let mut connector =
            SslConnector::builder(SslMethod::tls_client()).map_err(io::Error::other)?;
        let ca = X509::from_pem(self.ca_pem.as_bytes()).map_err(io::Error::other)?;
        connector
            .cert_store_mut()
            .add_cert(ca)
            .map_err(io::Error::other)?;
        let tcp = TcpStream::connect(&self.authority)?;
        tcp.set_read_timeout(Some(TIMEOUT))?;
        tcp.set_write_timeout(Some(TIMEOUT))?;
        connector
            .build()
            .connect(host, tcp)
            .map_err(io::Error::other)
    }
}

fn read_response(reader: &mut impl BufRead) -> io::Result<(u16, String)> {
    let status_line = read_line(reader)?;
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| invalid("bad status line"))?;
    let mut length = None;
    let mut chunked = false;
    loop {
        let line = read_line(reader)?;
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if name.eq_ignore_ascii_case("content-length") {
            length = value.trim().parse::<usize>().ok();
        }
        if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.trim().eq_ignore_ascii_case("chunked");
        }
    }
    let body = match (chunked, length) {
        (true, _) => read_chunked(reader)?,
        (false, Some(n)) => read_exact(reader, n)?,
        (false, None) => return Err(invalid("response without length")),
    };
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

fn read_chunked(reader: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let size_line = read_line(reader)?;
        let size_text = size_line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| invalid("bad chunk size"))?;
        if size == 0 {
            while !read_line(reader)?.is_empty() {}
            return Ok(body);
        }
        body.extend(read_exact(reader, size)?);
        read_line(reader)?;
    }
}

fn read_exact(reader: &mut impl BufRead, n: usize) -> io::Result<Vec<u8>> {
    let mut buffer = vec![0; n];
    reader.read_exact(&mut buffer)?;
    Ok(buffer)
}

fn read_line(reader: &mut impl BufRead) -> io::Result<String> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed",
        ));
    }
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_owned())
}
