//! A connection reads a request's body only as fast as its handler takes it.
//!
//! actix-http's dispatcher reads a connection's socket ahead of its handler, up to 128 KiB
//! (`h1::decoder::MAX_BUFFER_SIZE`, not configurable), whether the handler reads the body or
//! waits (a post with files waiting for its turn, `Files::turn`). Each chunk it splits off
//! keeps its whole read buffer allocated, so a waiting upload held about 280 KiB
//! (BENCHMARKS.md, fourteenth session). So every connection's socket is wrapped in
//! [`Metered`], which reads at most [`WINDOW`] bytes past what the handler has taken
//! ([`ReadCredit`]): the request head and the start of its body, and then only as the handler
//! takes chunks (`connections::with_body_deadline` reports them). A request head larger than
//! the window never completes: the head deadline answers it (408).

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

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
    /// took all it will take: the connection may read a window past it. A request with a body
    /// is read within the window its head came in, renewed when its body is done
    /// ([`body_done`](Self::body_done)): the part of its body already read is inside that
    /// window, so a window renewed here would let each request on a kept-alive connection
    /// read a window further ahead of its handler. After a body of unknown length was left
    /// open, a window past what was read.
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
        self.allow(past.map_or(u64::MAX, |past| self.0.allowed.get().max(past)));
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
}

impl<T> Metered<T> {
    pub fn new(io: T) -> Metered<T> {
        Metered { io, credit: ReadCredit::new() }
    }

    pub fn credit(&self) -> ReadCredit {
        self.credit.clone()
    }
}

/// The most a read cut short by the allowance copies through the stack.
const EDGE: usize = 8 * 1024;

impl<T: AsyncRead + Unpin> AsyncRead for Metered<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let budget = self.credit.budget();
        if budget == 0 {
            self.credit.0.parked.set(Some(cx.waker().clone()));
            return Poll::Pending;
        }
        if budget >= buf.remaining() {
            let before = buf.filled().len();
            std::task::ready!(Pin::new(&mut self.io).poll_read(cx, buf))?;
            self.credit.add_read(buf.filled().len() - before);
            return Poll::Ready(Ok(()));
        }
        // Only `budget` bytes: read through a buffer that small (the caller's buffer is
        // uninitialised memory, which safe code cannot hand on cut shorter).
        let mut edge = [0u8; EDGE];
        let mut part = ReadBuf::new(&mut edge[..budget.min(EDGE)]);
        std::task::ready!(Pin::new(&mut self.io).poll_read(cx, &mut part))?;
        buf.put_slice(part.filled());
        self.credit.add_read(part.filled().len());
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
}
