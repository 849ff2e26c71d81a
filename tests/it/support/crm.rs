//! A fake CRM on loopback (a real HTTP server, written raw so faults can drop connections):
//! `POST /leads` creates, `GET /leads/{external_ref}` looks up. Faults are queued per create.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Creates the lead, then answers only after this long (the client has given up).
    SlowAfterCreate(Duration),
    /// Creates the lead, then closes the connection without an answer.
    DropAfterCreate,
    /// Answers this status without creating anything.
    Status(u16),
    /// 429 with `Retry-After: N`.
    RateLimited(u64),
}

#[derive(Debug, Default)]
pub struct Inner {
    /// (external_ref, lead id) of every lead created, duplicates included.
    pub leads: Vec<(String, String)>,
    pub faults: VecDeque<Fault>,
    pub create_requests: usize,
    pub lookups: usize,
    /// Bodies of create requests, for mapping assertions.
    pub bodies: Vec<Value>,
}

#[derive(Clone)]
pub struct FakeCrm {
    pub url: String,
    pub state: Arc<Mutex<Inner>>,
}

impl FakeCrm {
    pub async fn start() -> FakeCrm {
        let state: Arc<Mutex<Inner>> = Arc::default();
        let url = super::listen(state.clone(), serve).await;
        FakeCrm { url, state }
    }

    pub fn push_fault(&self, fault: Fault) {
        self.state.lock().unwrap().faults.push_back(fault);
    }

    pub fn leads(&self) -> Vec<(String, String)> {
        self.state.lock().unwrap().leads.clone()
    }

    pub fn create_requests(&self) -> usize {
        self.state.lock().unwrap().create_requests
    }

    pub fn lookup_url(&self) -> String {
        format!("{}/leads/{{external_ref}}", self.url)
    }
}

async fn serve(stream: TcpStream, state: Arc<Mutex<Inner>>) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).await.unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let mut parts = request_line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let reply = match (method, path.strip_prefix("/leads")) {
            ("POST", Some("")) => create(&state, &body).await,
            ("GET", Some(rest)) if rest.starts_with('/') => {
                lookup(&state, &super::receiver::decode(&rest[1..]))
            }
            _ => Some((404, String::new(), json!({"error": "no route"}))),
        };
        let Some((status, extra_headers, body)) = reply else { return }; // drop the connection
        let body = body.to_string();
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra_headers}\r\n{body}",
            body.len()
        );
        if reader.get_mut().write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

async fn create(state: &Arc<Mutex<Inner>>, body: &[u8]) -> Option<(u16, String, Value)> {
    let lead: Value = serde_json::from_slice(body).unwrap_or_default();
    let external_ref = lead["external_ref"].as_str().unwrap_or("").to_string();
    let (fault, id) = {
        let mut s = state.lock().unwrap();
        s.create_requests += 1;
        s.bodies.push(lead.clone());
        let fault = s.faults.pop_front();
        let id = format!("L-{}", s.leads.len() + 1);
        if !matches!(fault, Some(Fault::Status(_) | Fault::RateLimited(_))) {
            s.leads.push((external_ref, id.clone()));
        }
        (fault, id)
    };
    match fault {
        None => Some((201, String::new(), json!({"id": id}))),
        Some(Fault::SlowAfterCreate(d)) => {
            tokio::time::sleep(d).await;
            Some((201, String::new(), json!({"id": id})))
        }
        Some(Fault::DropAfterCreate) => None,
        Some(Fault::Status(s)) => Some((s, String::new(), json!({"error": "injected"}))),
        Some(Fault::RateLimited(secs)) => {
            Some((429, format!("retry-after: {secs}\r\n"), json!({"error": "slow down"})))
        }
    }
}

fn lookup(state: &Arc<Mutex<Inner>>, external_ref: &str) -> Option<(u16, String, Value)> {
    let mut s = state.lock().unwrap();
    s.lookups += 1;
    let found = s.leads.iter().find(|(r, _)| r == external_ref).map(|(_, id)| id.clone());
    Some(match found {
        Some(id) => (200, String::new(), json!({"id": id, "external_ref": external_ref})),
        None => (404, String::new(), json!({"error": "not found"})),
    })
}
