//! A real SMTP server on loopback that keeps what it receives; it can drop the connection
//! right after a message's DATA, before answering.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

#[derive(Clone)]
pub struct SmtpSink {
    pub url: String,
    /// Every message whose DATA arrived, dropped or not.
    pub messages: Arc<Mutex<Vec<String>>>,
    /// How many of the next messages to drop after DATA.
    drop_next: Arc<AtomicUsize>,
    /// Replies to give the next messages after DATA instead of 250 (e.g. 451, 550).
    refuse_next: Arc<Mutex<VecDeque<u16>>>,
}

impl SmtpSink {
    pub async fn start() -> SmtpSink {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("smtp://{}", listener.local_addr().unwrap());
        let sink = SmtpSink {
            url,
            messages: Arc::default(),
            drop_next: Arc::default(),
            refuse_next: Arc::default(),
        };
        let s = sink.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(session(stream, s.clone()));
            }
        });
        sink
    }

    pub fn refuse_next(&self, code: u16) {
        self.refuse_next.lock().unwrap().push_back(code);
    }

    pub fn drop_after_data(&self, n: usize) {
        self.drop_next.store(n, Ordering::SeqCst);
    }

    pub fn messages(&self) -> Vec<String> {
        self.messages.lock().unwrap().clone()
    }
}

async fn session(stream: TcpStream, sink: SmtpSink) {
    let mut io = BufReader::new(stream);
    if io.get_mut().write_all(b"220 sink ESMTP\r\n").await.is_err() {
        return;
    }
    let mut line = String::new();
    loop {
        line.clear();
        if io.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        let verb = line.get(..4).unwrap_or("").to_ascii_uppercase();
        let reply: &[u8] = match verb.as_str() {
            "EHLO" | "HELO" => b"250-sink\r\n250 8BITMIME\r\n",
            "MAIL" | "RCPT" | "RSET" | "NOOP" => b"250 OK\r\n",
            "QUIT" => {
                let _ = io.get_mut().write_all(b"221 bye\r\n").await;
                return;
            }
            "DATA" => {
                if io.get_mut().write_all(b"354 go ahead\r\n").await.is_err() {
                    return;
                }
                let mut message = String::new();
                loop {
                    let mut l = String::new();
                    if io.read_line(&mut l).await.unwrap_or(0) == 0 {
                        return;
                    }
                    if l == ".\r\n" {
                        break;
                    }
                    message.push_str(&l);
                }
                let n = {
                    let mut m = sink.messages.lock().unwrap();
                    m.push(message);
                    m.len()
                };
                let drop = sink
                    .drop_next
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |d| d.checked_sub(1))
                    .is_ok();
                if drop {
                    return; // DATA received, never acknowledged
                }
                let refusal = sink.refuse_next.lock().unwrap().pop_front();
                let reply = match refusal {
                    Some(code) => format!("{code} {}.0.0 refused by the test\r\n", code / 100),
                    None => format!("250 2.0.0 queued as Q{n}\r\n"),
                };
                let _ = io.get_mut().write_all(reply.as_bytes()).await;
                continue;
            }
            _ => b"502 not implemented\r\n",
        };
        if io.get_mut().write_all(reply).await.is_err() {
            return;
        }
    }
}
