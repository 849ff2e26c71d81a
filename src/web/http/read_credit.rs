//! A connection reads a request's body only as fast as its handler takes it.
//!
//! actix-http's dispatcher reads a connection's socket ahead of its handler, up to 128 KiB
//! (`h1::decoder::MAX_BUFFER_SIZE`, not configurable), whether the handler reads the body or
//! waits (a post with files waiting for its turn, `Files::turn`). Each chunk it splits off
//! keeps its whole read buffer allocated, so a waiting upload held about 280 KiB
//! (docs/benchmarks/history.md, fourteenth session). So every connection's socket is wrapped in
//! [`Metered`], which reads at most [`WINDOW`] bytes past what the handler has taken
//! ([`ReadCredit`]): the request head and the start of its body, and then only as the handler
//! takes chunks (`connections::with_body_deadline` reports them). A request head larger than
//! the window never completes: the head deadline answers it (408).
//!
//! The window is renewed past each request (one without a body, or the end of a body), never
//! at a head alone: part of the body may already be read by then, and each request on a
//! kept-alive connection would read a window further ahead of its handler (about 240 KiB
//! per connection under 64 uploads; docs/benchmarks/history.md, fifteenth session).

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use bytes::{Buf, BufMut, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How far a connection reads ahead of its handler: a request head (Node.js's default limit
/// for one) or the start of a body.
pub const WINDOW: u64 = 16 * 1024;

/// A connection's reading allowance, shared by its socket ([`Metered`]) and the request being
/// handled (through the connection's data). A connection lives on one worker thread.
#[derive(Clone)]
pub struct ReadCredit(Rc<Credit>);

struct Credit {
    /// Bytes read from the socket.
    read: Cell<u64>,
    /// How far the socket may be read (`u64::MAX`: as far as the client sends).
    allowed: Cell<u64>,
    /// The connection's task, waiting for more allowance.
    parked: Cell<Option<Waker>>,
}

impl ReadCredit {
    fn new() -> ReadCredit {
        ReadCredit(Rc::new(Credit {
            read: Cell::new(0),
            allowed: Cell::new(WINDOW),
            parked: Cell::new(None),
        }))
    }

    /// A request's head was read (`has_body`: it declares a body). A request without a body
    /// took all it will take: the connection may read a window past it. A request with a
    /// body is read within the window its head came in, renewed when the body is done
    /// ([`body_done`](Self::body_done)): part of it may already be read by now.
    /// After a body of unknown length was left open, a window past what was read.
    pub fn next_request(&self, has_body: bool) {
        let (allowed, window) = (self.0.allowed.get(), self.0.read.get().saturating_add(WINDOW));
        if allowed == u64::MAX {
            self.allow(window);
        } else if !has_body {
            self.allow(allowed.max(window));
        }
    }

    /// The handler took `n` bytes of the body: as many more may be read.
    pub fn taken(&self, n: usize) {
        self.allow(self.0.allowed.get().saturating_add(n as u64));
    }

    /// The handler is done with the body, `rest` bytes of it still to come (`Some(0)`: it was
    /// read to its end; `None`: a body of unknown length left open). The dispatcher reads
    /// the rest, to discard it, and a window past it for the next request.
    pub fn body_done(&self, rest: Option<u64>) {
        let past = rest.map(|n| self.0.read.get().saturating_add(n).saturating_add(WINDOW));
        self.allow(past.unwrap_or(u64::MAX));
    }

    fn allow(&self, allowed: u64) {
        self.0.allowed.set(allowed);
        if let Some(waker) = self.0.parked.take() {
            waker.wake();
        }
    }

    /// Bytes the socket may be read now.
    fn budget(&self) -> usize {
        usize::try_from(self.0.allowed.get().saturating_sub(self.0.read.get())).unwrap_or(usize::MAX)
    }

    fn add_read(&self, n: usize) {
        self.0.read.set(self.0.read.get() + n as u64);
    }
}

/// A connection's socket, read within its [`ReadCredit`].
pub struct Metered<T> {
    io: T,
    credit: ReadCredit,
    /// Bytes read from the socket that the dispatcher's buffer had no room for yet: handed
    /// on at its next reads (within the same poll), and freed once handed on.
    ahead: BytesMut,
}

impl<T> Metered<T> {
    pub fn new(io: T) -> Metered<T> {
        Metered { io, credit: ReadCredit::new(), ahead: BytesMut::new() }
    }

    pub fn credit(&self) -> ReadCredit {
        self.credit.clone()
    }
}

/// The most one read of the socket takes.
const MAX_READ: usize = 64 * 1024;

impl<T: AsyncRead + Unpin> AsyncRead for Metered<T> {
    /// Reads the socket as far as the allowance goes (up to [`MAX_READ`]) in one call, even
    /// when the dispatcher's buffer has room for less (8 KiB at a time): the rest waits in
    /// `ahead`. With reads of the buffer's size, a streamed upload cost the server about 7 %
    /// more CPU (docs/benchmarks/history.md, fifteenth session).
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        if self.ahead.is_empty() {
            let budget = self.credit.budget();
            if budget == 0 {
                self.credit.0.parked.set(Some(cx.waker().clone()));
                return Poll::Pending;
            }
            let want = budget.min(MAX_READ);
            let this = &mut *self;
            this.ahead.reserve(want);
            let read =
                tokio_util::io::poll_read_buf(Pin::new(&mut this.io), cx, &mut (&mut this.ahead).limit(want));
            match read {
                Poll::Ready(Ok(n)) => this.credit.add_read(n),
                // An idle connection holds no buffer.
                other => {
                    this.ahead = BytesMut::new();
                    return other.map_ok(|_| ());
                }
            }
        }
        let n = self.ahead.len().min(buf.remaining());
        buf.put_slice(&self.ahead[..n]);
        self.ahead.advance(n);
        if self.ahead.is_empty() {
            self.ahead = BytesMut::new();
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Metered<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// Reads what is ready now, in 32 KiB reads, until the socket (or the allowance) says wait.
    fn read_ready(metered: &mut Metered<tokio::io::DuplexStream>) -> usize {
        let mut cx = Context::from_waker(Waker::noop());
        let (mut chunk, mut got) = (vec![0u8; 32 * 1024], 0);
        loop {
            let mut buf = ReadBuf::new(&mut chunk);
            match Pin::new(&mut *metered).poll_read(&mut cx, &mut buf) {
                Poll::Ready(Ok(())) if !buf.filled().is_empty() => got += buf.filled().len(),
                _ => return got,
            }
        }
    }

    #[tokio::test]
    async fn the_socket_is_read_a_window_ahead_then_as_far_as_was_taken() {
        let (mut client, server) = tokio::io::duplex(1 << 20);
        client.write_all(&[7u8; 200 * 1024]).await.unwrap();
        let mut metered = Metered::new(server);
        let credit = metered.credit();
        assert_eq!(read_ready(&mut metered) as u64, WINDOW);
        credit.taken(1000);
        assert_eq!(read_ready(&mut metered), 1000);
        credit.next_request(true);
        assert_eq!(read_ready(&mut metered), 0, "a body is read within the window its head came in");
        credit.next_request(false);
        assert_eq!(read_ready(&mut metered) as u64, WINDOW, "a request without a body renews the window");
        credit.body_done(Some(5000));
        assert_eq!(read_ready(&mut metered) as u64, 5000 + WINDOW, "the rest of a body left, then a window");
        credit.body_done(None);
        assert_eq!(read_ready(&mut metered) as u64, 200 * 1024 - 3 * WINDOW - 6000);
        client.write_all(&[7u8; 2 * WINDOW as usize]).await.unwrap();
        credit.next_request(true);
        assert_eq!(
            read_ready(&mut metered) as u64,
            WINDOW,
            "a chunked body left open is not read ahead after it"
        );
        credit.taken(WINDOW as usize);
        assert_eq!(read_ready(&mut metered) as u64, WINDOW);
        drop(client);
        credit.body_done(None);
        assert_eq!(metered.read(&mut [0u8; 16]).await.unwrap(), 0);
    }

    /// Posts on one kept-alive connection, each sent once the one before was answered, as
    /// browsers send them: however many came before, the socket is read at most a window
    /// past the handler (here: the head, then the body taken as far as it was read).
    #[tokio::test]
    async fn request_after_request_the_socket_is_read_no_further_ahead() {
        const HEAD: u64 = 300;
        const BODY: u64 = 100 * 1024;
        let (mut client, server) = tokio::io::duplex(1 << 20);
        let mut metered = Metered::new(server);
        let credit = metered.credit();
        let (mut read, mut handled) = (0u64, 0u64);
        for post in 0..20 {
            client.write_all(&[7u8; (HEAD + BODY) as usize]).await.unwrap();
            read += read_ready(&mut metered) as u64;
            handled += HEAD;
            credit.next_request(true);
            let end = handled + BODY;
            while handled < end {
                // (tokio's duplex pipe says wait after so many reads in one poll of the task.)
                tokio::task::yield_now().await;
                read += read_ready(&mut metered) as u64;
                assert!(read - handled <= WINDOW, "post {post}: {} bytes read ahead", read - handled);
                let chunk = (read - handled).min(end - handled);
                assert!(chunk > 0, "post {post}: the body stalled at {handled} of {end}");
                credit.taken(chunk as usize);
                handled += chunk;
            }
            credit.body_done(Some(0));
        }
    }

    /// Counts the reads of the socket that returned bytes.
    struct Counted(tokio::io::DuplexStream, usize);

    impl AsyncRead for Counted {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let before = buf.filled().len();
            let read = Pin::new(&mut self.0).poll_read(cx, buf);
            if buf.filled().len() > before {
                self.1 += 1;
            }
            read
        }
    }

    /// The dispatcher reads 8 KiB at a time; the socket is read once for the whole window,
    /// and a connection waiting for its client holds no buffer.
    #[tokio::test]
    async fn the_socket_is_read_once_per_allowance_and_an_idle_connection_holds_no_buffer() {
        let (mut client, server) = tokio::io::duplex(1 << 20);
        client.write_all(&[7u8; 3 * WINDOW as usize]).await.unwrap();
        let mut metered = Metered::new(Counted(server, 0));
        let mut cx = Context::from_waker(Waker::noop());
        let mut got = 0;
        for _ in 0..WINDOW / 8192 {
            let mut chunk = [0u8; 8192];
            let mut buf = ReadBuf::new(&mut chunk);
            assert!(Pin::new(&mut metered).poll_read(&mut cx, &mut buf).is_ready());
            got += buf.filled().len();
        }
        assert_eq!((got as u64, metered.io.1), (WINDOW, 1));
        metered.credit().body_done(Some(0));
        let mut rest = vec![0u8; 3 * WINDOW as usize];
        assert_eq!(metered.read(&mut rest).await.unwrap() as u64, WINDOW);
        metered.credit().body_done(Some(0));
        assert_eq!(metered.read(&mut rest).await.unwrap() as u64, WINDOW);
        metered.credit().body_done(Some(0));
        assert!(Pin::new(&mut metered).poll_read(&mut cx, &mut ReadBuf::new(&mut rest)).is_pending());
        assert_eq!(metered.ahead.capacity(), 0, "an idle connection holds no buffer");
    }
}
