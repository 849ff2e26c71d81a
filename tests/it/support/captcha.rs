//! A fake captcha provider on loopback: `POST /siteverify` (form-encoded `secret`,
//! `response`, `remoteip`) answers like Turnstile and hCaptcha do. Tokens starting with
//! `good` pass once; a token seen before gets `timeout-or-duplicate`; others fail.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Judge,
    /// 503 to every call.
    Down,
    /// Never answers.
    Hang,
}

#[derive(Debug)]
pub struct Inner {
    pub mode: Mode,
    /// The form bodies received, decoded.
    pub calls: Vec<HashMap<String, String>>,
}

#[derive(Clone)]
pub struct FakeCaptcha {
    pub url: String,
    pub state: Arc<Mutex<Inner>>,
}

impl FakeCaptcha {
    pub async fn start() -> FakeCaptcha {
        let state = Arc::new(Mutex::new(Inner { mode: Mode::Judge, calls: Vec::new() }));
        let url = format!("{}/siteverify", super::listen(state.clone(), serve).await);
        FakeCaptcha { url, state }
    }

    pub fn set_mode(&self, mode: Mode) {
        self.state.lock().unwrap().mode = mode;
    }

    pub fn calls(&self) -> Vec<HashMap<String, String>> {
        self.state.lock().unwrap().calls.clone()
    }
}

async fn serve(stream: TcpStream, state: Arc<Mutex<Inner>>) {
    let mut reader = BufReader::new(stream);
    let mut length = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).await.is_err() {
        return;
    }
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let (mode, seen) = {
        let mut s = state.lock().unwrap();
        let token = form.get("response").cloned().unwrap_or_default();
        let seen = s.calls.iter().any(|c| c.get("response") == Some(&token));
        s.calls.push(form.clone());
        (s.mode, seen)
    };
    let token = form.get("response").map(String::as_str).unwrap_or("");
    let (status, json) = match mode {
        Mode::Hang => {
            tokio::time::sleep(Duration::from_secs(60)).await;
            return;
        }
        Mode::Down => ("503 Service Unavailable", r#"{"error":"down"}"#.to_string()),
        Mode::Judge if seen => {
            ("200 OK", r#"{"success":false,"error-codes":["timeout-or-duplicate"]}"#.into())
        }
        Mode::Judge if token.starts_with("good") && form.get("secret").is_some_and(|s| s == "s3cret-key") => {
            ("200 OK", r#"{"success":true,"hostname":"example.com"}"#.into())
        }
        Mode::Judge => ("200 OK", r#"{"success":false,"error-codes":["invalid-input-response"]}"#.into()),
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{json}",
        json.len()
    );
    let _ = reader.get_mut().write_all(reply.as_bytes()).await;
}
