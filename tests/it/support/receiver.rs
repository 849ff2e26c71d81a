//! A fake webhook receiver on loopback for `forward` handlers: `POST /events` records the
//! `Idempotency-Key` and body; `GET /events/{key}` answers 200 if that key was received,
//! else 404. Faults are queued per POST.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Acts, then answers only after this long (the caller has given up).
    SlowAfterAct(Duration),
    /// Answers this status without acting.
    Status(u16),
    /// Answers this status with `Retry-After: seconds`, without acting.
    StatusRetryAfter(u16, u64),
    /// Answers this status with this body, without acting.
    StatusBody(u16, &'static str),
}

#[derive(Debug, Default)]
pub struct Inner {
    /// (Idempotency-Key, body) of every POST that acted, repeats included.
    pub calls: Vec<(String, String)>,
    pub faults: VecDeque<Fault>,
    pub lookups: usize,
    /// The headers (names lower-cased) and body of every POST, faulted ones included.
    pub requests: Vec<(std::collections::BTreeMap<String, String>, String)>,
}

#[derive(Clone)]
pub struct Receiver {
    pub url: String,
    pub state: Arc<Mutex<Inner>>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let state: Arc<Mutex<Inner>> = Arc::default();
        let url = super::listen(state.clone(), serve).await;
        Receiver { url, state }
    }

    pub fn events_url(&self) -> String {
        format!("{}/events", self.url)
    }

    pub fn lookup_url(&self) -> String {
        format!("{}/events/{{key}}", self.url)
    }

    pub fn push_fault(&self, fault: Fault) {
        self.state.lock().unwrap().faults.push_back(fault);
    }

    pub fn calls(&self) -> Vec<(String, String)> {
        self.state.lock().unwrap().calls.clone()
    }

    pub fn requests(&self) -> Vec<(std::collections::BTreeMap<String, String>, String)> {
        self.state.lock().unwrap().requests.clone()
    }

    pub fn lookups(&self) -> usize {
        self.state.lock().unwrap().lookups
    }
}

/// Percent-decodes a path segment (as a real server does).
pub fn decode(s: &str) -> String {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

async fn serve(stream: TcpStream, state: Arc<Mutex<Inner>>) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).await.unwrap_or(0) == 0 {
            return;
        }
        let (mut length, mut key) = (0usize, String::new());
        let mut headers = std::collections::BTreeMap::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if k.eq_ignore_ascii_case("idempotency-key") {
                    key = v.trim().to_string();
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let mut parts = request_line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let status = match (method, path.strip_prefix("/events")) {
            ("POST", Some("")) => {
                let fault = {
                    let mut s = state.lock().unwrap();
                    s.requests.push((headers, String::from_utf8_lossy(&body).into_owned()));
                    let fault = s.faults.pop_front();
                    if !matches!(
                        fault,
                        Some(Fault::Status(_) | Fault::StatusRetryAfter(..) | Fault::StatusBody(..))
                    ) {
                        s.calls.push((key, String::from_utf8_lossy(&body).into_owned()));
                    }
                    fault
                };
                match fault {
                    None => (200, None, "{}"),
                    Some(Fault::SlowAfterAct(d)) => {
                        tokio::time::sleep(d).await;
                        (200, None, "{}")
                    }
                    Some(Fault::Status(s)) => (s, None, "{}"),
                    Some(Fault::StatusRetryAfter(s, seconds)) => (s, Some(seconds), "{}"),
                    Some(Fault::StatusBody(s, body)) => (s, None, body),
                }
            }
            ("GET", Some(rest)) if rest.starts_with('/') => {
                let key = decode(&rest[1..]);
                let mut s = state.lock().unwrap();
                s.lookups += 1;
                if s.calls.iter().any(|(k, _)| *k == key) {
                    (200, None, "{}")
                } else {
                    (404, None, "{}")
                }
            }
            _ => (404, None, "{}"),
        };
        let (status, retry_after, answer) = status;
        let retry_after = retry_after.map(|s| format!("retry-after: {s}\r\n")).unwrap_or_default();
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{retry_after}content-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if reader.get_mut().write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}
