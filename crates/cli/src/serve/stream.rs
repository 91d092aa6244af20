//! Response bodies: an answer too big to hold whole is streamed (chunked) from the query's
//! thread through a channel as it is written. The engine never waits on a client (its workers
//! are shared by every query): what a slow client has not read stays queued, at most the
//! answer's byte cap, and the query's slot stays taken until the body is sent or dropped, so
//! `--max-concurrent` bounds those bytes too; the write timeout drops a client that reads
//! nothing. Whatever a body must keep alive (the slot, the connection's in-flight mark) goes
//! with it and is released when the body is dropped.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

/// What the query's thread sends: data, the trailers that end a streamed answer, or an error
/// that aborts it (the client then sees an incomplete response, never a complete wrong one).
pub type Piece = Result<Frame<Bytes>, std::io::Error>;

/// Bytes per chunk sent.
pub const CHUNK: usize = 64 << 10;
/// Bytes held before deciding the response's head: an answer that fits is sent whole, with its
/// true status and headers (a time limit past within it is still a 503).
pub const HELD: usize = 256 << 10;

/// The receiving end, as a response body.
pub struct ChannelBody(pub mpsc::UnboundedReceiver<Piece>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.0.poll_recv(cx)
    }
}

/// A body with something kept alive until the body is dropped.
pub struct Guarded<B> {
    inner: B,
    _guard: Box<dyn Send + Sync>,
}

impl<B> Guarded<B> {
    pub fn new(inner: B, guard: impl Send + Sync + 'static) -> Self {
        Guarded {
            inner,
            _guard: Box::new(guard),
        }
    }
}

impl<B: Body + Unpin> Body for Guarded<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
