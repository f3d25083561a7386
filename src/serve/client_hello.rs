//! The TLS ClientHello, read whole before OpenSSL sees the connection.
//!
//! OpenSSL sizes its buffers by what a record or handshake message *announces*: a client that
//! sends the first bytes of a ClientHello announcing 16 KiB (or a handshake message announcing
//! 128 KiB) and then goes silent makes it allocate that much per connection, plus the TLS
//! state, for as long as the handshake deadline allows. Here the first record (which holds the
//! ClientHello of every real client) is read into a buffer that grows only as bytes arrive,
//! up to [`MAX_CLIENT_HELLO_BYTES`]; OpenSSL then gets the whole record at once, through
//! [`Replay`], and does its work in one step.

use smol::io::{AsyncRead, AsyncReadExt};

use super::limits::{MAX_CLIENT_HELLO_BYTES, READ_CHUNK_BYTES};
use crate::hooked::{Before, Hooked, ReadHook};

/// A TLS record's header: content type, version, length.
pub const RECORD_HEADER_BYTES: usize = 5;
const HANDSHAKE: u8 = 22;

/// What the first bytes on the metrics port were.
#[derive(Debug, PartialEq, Eq)]
pub enum FirstRecord {
    /// A whole TLS handshake record, header included.
    Hello(Vec<u8>),
    /// Plain HTTP (a letter first): answered 400 saying the port speaks HTTPS.
    PlainHttp,
    /// Not a TLS handshake record, or one over the limit; the reason.
    Refused(String),
    /// The client closed before sending a whole record.
    Closed,
}

/// The length of the record whose header starts `header`, or why it is refused.
pub fn record_len(header: &[u8; RECORD_HEADER_BYTES]) -> Result<usize, FirstRecord> {
    if header[0].is_ascii_alphabetic() {
        return Err(FirstRecord::PlainHttp);
    }
    if header[0] != HANDSHAKE || header[1] != 3 {
        return Err(FirstRecord::Refused(format!(
            "the first record is not a TLS handshake (bytes {:02x} {:02x})",
            header[0], header[1]
        )));
    }
    match usize::from(u16::from_be_bytes([header[3], header[4]])) {
        0 => Err(FirstRecord::Refused("an empty TLS record".to_owned())),
        len if len > MAX_CLIENT_HELLO_BYTES => Err(FirstRecord::Refused(format!(
            "a ClientHello of {len} bytes, over the {MAX_CLIENT_HELLO_BYTES}-byte limit"
        ))),
        len => Ok(len),
    }
}

/// Reads the first record from `stream`, never past its end; the caller bounds the time.
pub async fn read_first<S: AsyncRead + Unpin>(stream: &mut S) -> FirstRecord {
    let mut record = Vec::new();
    if !read_up_to(stream, &mut record, RECORD_HEADER_BYTES).await {
        return FirstRecord::Closed;
    }
    let mut header = [0u8; RECORD_HEADER_BYTES];
    header.copy_from_slice(&record);
    let len = match record_len(&header) {
        Ok(len) => len,
        Err(refused) => return refused,
    };
    match read_up_to(stream, &mut record, RECORD_HEADER_BYTES + len).await {
        true => FirstRecord::Hello(record),
        false => FirstRecord::Closed,
    }
}

/// Reads until `buf` holds `want` bytes, growing it by at most [`READ_CHUNK_BYTES`] a read;
/// `false` at the end of input.
async fn read_up_to<S: AsyncRead + Unpin>(stream: &mut S, buf: &mut Vec<u8>, want: usize) -> bool {
    while buf.len() < want {
        let filled = buf.len();
        let room = (want - filled).min(READ_CHUNK_BYTES);
        buf.reserve_exact(room);
        buf.resize(filled + room, 0);
        let read = stream.read(&mut buf[filled..]).await.unwrap_or(0);
        buf.truncate(filled + read);
        if read == 0 {
            return false;
        }
    }
    true
}

/// A stream that first yields a prefix (the record already read), then reads from its own.
pub type Replay<S> = Hooked<S, Prefix>;

/// The bytes a [`Replay`] yields first.
pub struct Prefix {
    bytes: Vec<u8>,
    at: usize,
}

impl Prefix {
    pub fn new(bytes: Vec<u8>) -> Prefix {
        Prefix { bytes, at: 0 }
    }
}

impl ReadHook for Prefix {
    fn before_read(&mut self, buf: &mut [u8]) -> Before {
        if self.at == self.bytes.len() {
            return Before::Read(buf.len());
        }
        let n = (self.bytes.len() - self.at).min(buf.len());
        buf[..n].copy_from_slice(&self.bytes[self.at..self.at + n]);
        self.at += n;
        if self.at == self.bytes.len() {
            self.bytes = Vec::new();
            self.at = 0;
        }
        Before::Answer(Ok(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::property::{self, Pieces};

    /// A handshake record of `len` bytes.
    fn hello_of(len: u16) -> Vec<u8> {
        let mut record = vec![HANDSHAKE, 3, 1];
        record.extend_from_slice(&len.to_be_bytes());
        record.extend((0..len).map(|i| i as u8));
        record
    }

    fn first(pieces: Pieces) -> FirstRecord {
        let mut stream = pieces;
        smol::block_on(read_first(&mut stream))
    }

    #[test]
    fn a_whole_record_is_read_and_nothing_after_it() {
        let mut bytes = hello_of(512);
        let record = bytes.clone();
        bytes.extend_from_slice(b"next record");
        let mut stream = Pieces::of(&bytes, 100);
        let read = smol::block_on(read_first(&mut stream));
        assert_eq!(read, FirstRecord::Hello(record));
        let mut rest = Vec::new();
        smol::block_on(stream.read_to_end(&mut rest)).expect("rest");
        assert_eq!(rest, b"next record");
    }

    #[test]
    fn oversized_foreign_and_plain_http_first_bytes_are_refused() {
        let huge = first(Pieces::of(&hello_of(16 * 1024)[..5], 5));
        assert!(
            matches!(&huge, FirstRecord::Refused(why) if why.contains(&MAX_CLIENT_HELLO_BYTES.to_string())),
            "{huge:?}"
        );
        assert_eq!(
            first(Pieces::of(b"GET / HTTP/1.1\r\n", 64)),
            FirstRecord::PlainHttp
        );
        assert!(matches!(
            first(Pieces::of(&[23, 3, 3, 0, 5], 5)),
            FirstRecord::Refused(_)
        ));
        assert_eq!(
            first(Pieces::of(&hello_of(512)[..300], 64)),
            FirstRecord::Closed
        );
    }

    #[test]
    fn a_half_sent_hello_holds_only_what_arrived() {
        let mut stream = Pieces::stalled(hello_of(8000)[..40].to_vec());
        let mut record = Vec::new();
        let read = smol::future::block_on(smol::future::poll_once(read_up_to(
            &mut stream,
            &mut record,
            8005,
        )));
        assert!(read.is_none(), "still waiting");
        assert!(
            record.capacity() <= 40 + READ_CHUNK_BYTES,
            "{}",
            record.capacity()
        );
    }

    #[test]
    fn replay_yields_the_prefix_then_the_stream() {
        let mut replay = Replay::new(Pieces::of(b"world", 2), Prefix::new(b"hello ".to_vec()));
        let mut all = Vec::new();
        smol::block_on(replay.read_to_end(&mut all)).expect("read");
        assert_eq!(all, b"hello world");
    }

    #[test]
    fn property_record_headers_never_pass_the_limit() {
        property::check("client hello headers", |random| {
            let header: [u8; RECORD_HEADER_BYTES] = std::array::from_fn(|_| random.byte());
            if let Ok(len) = record_len(&header) {
                assert!((1..=MAX_CLIENT_HELLO_BYTES).contains(&len));
            }
        });
    }
}
