//! A TCP proxy in front of PostgreSQL that a test can cut, to make the database unreachable.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

pub struct Proxy {
    pub port: u16,
    open: Arc<AtomicBool>,
    links: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: JoinHandle<()>,
}

impl Proxy {
    pub async fn start(target: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let open = Arc::new(AtomicBool::new(true));
        let links: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let (o, l) = (open.clone(), links.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                // Checked and kept under the lock that `cut` takes: a connection accepted
                // while it cuts is either refused or cut with the others.
                let mut links = l.lock().unwrap();
                if !o.load(Ordering::SeqCst) {
                    continue; // dropped: the client sees the connection closed
                }
                let target = target.clone();
                links.push(tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                }));
            }
        });
        Proxy { port, open, links, accept }
    }

    /// Cuts every open connection and refuses new ones.
    pub fn cut(&self) {
        let mut links = self.links.lock().unwrap();
        self.open.store(false, Ordering::SeqCst);
        for link in links.drain(..) {
            link.abort();
        }
    }

    pub fn restore(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

/// A proxy in front of PostgreSQL that loses one commit's answer: once a client has sent a
/// statement containing `pattern` (in a Parse or Query message), the proxy passes on the
/// message that runs it (Execute, or the Query itself) and the server's reply up to
/// ReadyForQuery, when the implicit or explicit transaction has ended, is dropped and both
/// connections are closed. One shot: later connections pass everything. The server must not
/// use TLS with the client (`sslmode=disable`): the proxy reads the protocol.
pub struct CommitCutter {
    pub port: u16,
    /// Set once a reply was dropped.
    pub cut: Arc<AtomicBool>,
    accept: JoinHandle<()>,
}

impl CommitCutter {
    pub async fn start(target: String, pattern: &'static [u8]) -> CommitCutter {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let done = cut.clone();
        let accept = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let Ok(outbound) = TcpStream::connect(target.clone()).await else { continue };
                tokio::spawn(cut_link(inbound, outbound, pattern, done.clone()));
            }
        });
        CommitCutter { port, cut, accept }
    }
}

impl Drop for CommitCutter {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// One client connection: frontend messages are framed (startup, then type + length) to
/// find the statement; the backend's bytes pass through until the cut.
async fn cut_link(inbound: TcpStream, outbound: TcpStream, pattern: &'static [u8], done: Arc<AtomicBool>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (mut client_rx, mut client_tx) = inbound.into_split();
    let (mut server_rx, mut server_tx) = outbound.into_split();
    let cutting = Arc::new(AtomicBool::new(false));
    let c = cutting.clone();
    let done2 = done.clone();
    let upstream = async move {
        let mut startup = true;
        let mut armed = false;
        loop {
            let mut head = [0u8; 5];
            let (kind, len) = if startup {
                if client_rx.read_exact(&mut head[..4]).await.is_err() {
                    return;
                }
                (0u8, u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize)
            } else {
                if client_rx.read_exact(&mut head).await.is_err() {
                    return;
                }
                (head[0], u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize)
            };
            let mut body = vec![0u8; len.saturating_sub(4)];
            if client_rx.read_exact(&mut body).await.is_err() {
                return;
            }
            if startup {
                let code = body.get(..4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                // SSLRequest / GSSENCRequest come before the startup message proper.
                startup = matches!(code, Some(80877103 | 80877104));
            }
            let mentions = body.windows(pattern.len()).any(|w| w == pattern);
            if matches!(kind, b'P' | b'Q') && mentions && !done2.load(Ordering::SeqCst) {
                armed = true;
            }
            if armed && matches!(kind, b'E' | b'Q') && !done2.swap(true, Ordering::SeqCst) {
                c.store(true, Ordering::SeqCst);
                armed = false;
            }
            let mut message = Vec::with_capacity(len + 1);
            message.extend_from_slice(if kind == 0 { &head[..4] } else { &head[..] });
            message.extend_from_slice(&body);
            if server_tx.write_all(&message).await.is_err() {
                return;
            }
        }
    };
    let downstream = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match server_rx.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if cutting.load(Ordering::SeqCst) {
                // The transaction has ended at ReadyForQuery: its outcome is decided.
                if buf[..n].windows(5).any(|w| w == [b'Z', 0, 0, 0, 5]) {
                    return;
                }
                continue;
            }
            if client_tx.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    // Whichever side ends first closes both connections.
    tokio::select! {
        _ = upstream => {}
        _ = downstream => {}
    }
}
