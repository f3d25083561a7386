//! A request body in pieces, some of them shared.
//!
//! A fan-out writes one object into many namespaces: the copies differ in a small head (name,
//! namespace, labels) and share their content, which may be a megabyte. Each copy's create is
//! sent as its own head and the one shared content piece ([`Arc`]), read out piece by piece
//! into the connection, so no write holds a copy of the content and no retry makes one.

use smol::io::{AsyncBufRead, AsyncReadExt, Cursor};
use std::sync::Arc;

/// The bytes of a body, in order.
#[derive(Debug, Clone, Default)]
pub struct Pieces(Vec<Arc<[u8]>>);

impl Pieces {
    pub fn new(pieces: Vec<Arc<[u8]>>) -> Pieces {
        Pieces(pieces)
    }

    pub fn len(&self) -> usize {
        self.0.iter().map(|piece| piece.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The body as the HTTP client sends it: read from the pieces in turn, its length known.
    pub fn http_body(&self) -> http_types::Body {
        type Reader = Box<dyn AsyncBufRead + Unpin + Send + Sync>;
        let empty: Reader = Box::new(smol::io::empty());
        let reader = self.0.iter().fold(empty, |reader, piece| {
            Box::new(reader.chain(Cursor::new(Arc::clone(piece))))
        });
        http_types::Body::from_reader(reader, Some(self.len()))
    }
}

impl From<Vec<u8>> for Pieces {
    fn from(bytes: Vec<u8>) -> Pieces {
        Pieces(vec![bytes.into()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Pieces {
        /// The whole body in one buffer (for the tests of every module).
        pub(crate) fn to_vec(&self) -> Vec<u8> {
            self.0.concat()
        }
    }

    #[test]
    fn the_body_reads_every_piece_in_order_and_shares_them() {
        let shared: Arc<[u8]> = Arc::from(&b"\"data\":{\"k\":\"v\"}}"[..]);
        let pieces = Pieces::new(vec![
            Arc::from(&b"{\"metadata\":{},"[..]),
            Arc::from(&b""[..]),
            Arc::clone(&shared),
        ]);
        assert_eq!(pieces.len(), 32);
        let body = smol::block_on(pieces.http_body().into_bytes()).expect("read");
        assert_eq!(body, br#"{"metadata":{},"data":{"k":"v"}}"#);
        assert_eq!(pieces.to_vec(), body);
        assert_eq!(
            Arc::strong_count(&shared),
            2,
            "held by the pieces, not copied"
        );
    }
}
