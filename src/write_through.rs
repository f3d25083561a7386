//! Wrappers that watch or bound what a stream reads (a response head's guard, a replayed
//! ClientHello, a connection's activity) leave its writes alone; one macro writes that
//! pass-through so each wrapper's file holds only what it adds.

/// `impl AsyncWrite for $wrapper<S>`, forwarding every call to the wrapper's `inner` stream.
macro_rules! write_through {
    ($wrapper:ident) => {
        impl<S: smol::io::AsyncWrite + Unpin> smol::io::AsyncWrite for $wrapper<S> {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                std::pin::Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut self.get_mut().inner).poll_flush(cx)
            }

            fn poll_close(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut self.get_mut().inner).poll_close(cx)
            }
        }
    };
}

pub(crate) use write_through;
