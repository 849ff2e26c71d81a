//! A loopback LINE Messaging API that holds `POST /v2/bot/message/push` to LINE's own
//! reference and refuses anything else the way LINE does (its status, `{"message",
//! "details"}`).
//!
//! Where each rule comes from (developers.line.biz, Messaging API reference and guides):
//! - [push] "Send push message": `POST https://api.line.me/v2/bot/message/push`,
//!   `Authorization: Bearer {channel access token}`, `Content-Type: application/json`; body
//!   `to` (the ID of a user, group chat or multi-person chat: `U`, `C` or `R` and 32 hex
//!   digits), `messages` (1 to 5 message objects); a 200 answers
//!   `{"sentMessages": [{"id", "quoteToken"}]}` with `X-Line-Request-Id`.
//! - [text] the text message object: `type: "text"`, `text` at most 5000 characters,
//!   counted in UTF-16 code units ("Counting characters in a text").
//! - [errors] "Error responses": `{"message": …, "details": [{"message", "property"}]}`
//!   (`details` left out when empty); the messages quoted below ("The property, 'to', in the
//!   request body is invalid (line: -, column: -)", "Authentication failed due to the
//!   following reason: …", "Failed to send messages", "The request body has N error(s)").
//! - [retry] "Retrying a failed API request": `X-Line-Retry-Key` is a hexadecimal UUID the
//!   caller makes; a request is accepted once per key; a repeat is answered 409 Conflict
//!   ("An API request with the same retry key has already been accepted") with
//!   `X-Line-Accepted-Request-Id` naming the accepted request and `sentMessages`; a 5xx or a
//!   timeout may have been accepted; the key holds for 24 hours.
//! - [limits] "Status codes" and "Rate limits": 429 Too Many Requests when over the rate limit
//!   or the month's message limit ("You have reached your monthly limit."); no `Retry-After`
//!   is documented.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};
use tokio::net::TcpListener;

use super::chat::{Fault, Log, Posted};
use super::vendor::{serve, Reply, Request};

/// The channel access token the fake accepts.
pub const TOKEN: &str = "W1/p7Yk3Gc0TokenForOnceformTests+abcdef0123456789=";
/// The one group the account is in.
pub const GROUP_ID: &str = "C4af4980629abcdef0123456789abcdef";
/// A well-formed user ID that is no friend of the account.
pub const STRANGER_ID: &str = "U0000000000000000000000000000dead";

/// What the fake saw of retry keys.
#[derive(Debug, Default)]
pub struct Keys {
    /// The `X-Line-Retry-Key` of every push that passed the checks, in order (`None`: none sent).
    pub seen: Vec<Option<String>>,
    /// Each accepted key: (the accepting request's ID, its `sentMessages`).
    pub accepted: BTreeMap<String, (String, Value)>,
    /// How many repeats were answered 409.
    pub conflicts: usize,
}

#[derive(Clone)]
pub struct FakeLine {
    pub url: String,
    pub state: Arc<Mutex<Log>>,
    pub keys: Arc<Mutex<Keys>>,
}

impl FakeLine {
    pub async fn start() -> FakeLine {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state: Arc<Mutex<Log>> = Arc::default();
        let keys: Arc<Mutex<Keys>> = Arc::default();
        let (s, k) = (state.clone(), keys.clone());
        serve(listener, move |req| handle(s.clone(), k.clone(), req));
        FakeLine { url, state, keys }
    }

    pub fn posted(&self) -> Vec<Posted> {
        self.state.lock().unwrap().posted.clone()
    }

    pub fn refused(&self) -> Vec<String> {
        self.state.lock().unwrap().refused.clone()
    }

    pub fn keys_seen(&self) -> Vec<Option<String>> {
        self.keys.lock().unwrap().seen.clone()
    }

    pub fn conflicts(&self) -> usize {
        self.keys.lock().unwrap().conflicts
    }
}

/// [errors] an error body with its status.
fn error(status: u16, message: &str) -> Reply {
    Some((status, request_id_header(), json!({ "message": message }).to_string()))
}

/// [errors] "The request body has N error(s)" with one detail.
fn invalid(property: &str, message: &str) -> Reply {
    let body = json!({"message": "The request body has 1 error(s)",
                      "details": [{"message": message, "property": property}]});
    Some((400, request_id_header(), body.to_string()))
}

fn request_id_header() -> String {
    format!("x-line-request-id: {}\r\n", uuid::Uuid::new_v4())
}

fn refuse(state: &Mutex<Log>, rule: &str, reply: Reply) -> Reply {
    state.lock().unwrap().refused.push(rule.to_string());
    reply
}

/// [retry] a hexadecimal UUID (`8-4-4-4-12`).
fn is_uuid(key: &str) -> bool {
    let groups: Vec<&str> = key.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// [push] a user, group or room ID.
fn is_recipient(id: &str) -> bool {
    matches!(id.as_bytes().first(), Some(b'U' | b'C' | b'R'))
        && id.len() == 33
        && id[1..].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

async fn handle(state: Arc<Mutex<Log>>, keys: Arc<Mutex<Keys>>, req: Request) -> Reply {
    state.lock().unwrap().arrivals.push(Instant::now());
    let path: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    if path != ["v2", "bot", "message", "push"] {
        return refuse(&state, "route", error(404, "Not found"));
    }
    if req.method != "POST" {
        return refuse(&state, "method", error(405, "Method Not Allowed"));
    }
    if req.bearer() != Some(TOKEN) {
        let said = "Authentication failed due to the following reason: invalid token. \
                    Confirm that the access token in the authorization header is valid.";
        return refuse(&state, "auth", error(401, said));
    }
    let key = req.header("x-line-retry-key").map(str::to_string);
    if key.as_deref().is_some_and(|k| !is_uuid(k)) {
        return refuse(
            &state,
            "retry key",
            error(400, "The value for the 'X-Line-Retry-Key' header is invalid"),
        );
    }
    if !req.is_json() {
        return refuse(&state, "content type", error(415, "Unsupported Media Type"));
    }
    let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
        return refuse(
            &state,
            "json",
            error(400, "The request body could not be parsed as JSON (line: 1, column: 1)"),
        );
    };
    let to = body["to"].as_str().unwrap_or("");
    if !is_recipient(to) {
        return refuse(
            &state,
            "to",
            error(400, "The property, 'to', in the request body is invalid (line: -, column: -)"),
        );
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if messages.is_empty() || messages.len() > 5 {
        return refuse(&state, "messages", invalid("messages", "Size must be between 1 and 5"));
    }
    for (i, m) in messages.iter().enumerate() {
        if m["type"] != "text" {
            return refuse(&state, "type", invalid(&format!("messages[{i}].type"), "Only text in this fake"));
        }
        let text = m["text"].as_str().unwrap_or("");
        if text.is_empty() {
            return refuse(
                &state,
                "text: empty",
                invalid(&format!("messages[{i}].text"), "May not be empty"),
            );
        }
        if text.encode_utf16().count() > 5000 {
            return refuse(
                &state,
                "text: too long",
                invalid(&format!("messages[{i}].text"), "Length must be between 0 and 5000"),
            );
        }
    }
    keys.lock().unwrap().seen.push(key.clone());
    // [retry] a repeat of an accepted request.
    if let Some(k) = &key {
        let accepted = keys.lock().unwrap().accepted.get(k).cloned();
        if let Some((request_id, sent)) = accepted {
            keys.lock().unwrap().conflicts += 1;
            let headers = format!("{}x-line-accepted-request-id: {request_id}\r\n", request_id_header());
            let body = json!({"message": "The retry key is already accepted", "sentMessages": sent});
            return Some((409, headers, body.to_string()));
        }
    }
    if to != GROUP_ID {
        return refuse(&state, "recipient", error(400, "Failed to send messages"));
    }
    // [limits] the rate or month's limit, or the platform failing, before anything is accepted.
    let fault = state.lock().unwrap().faults.pop_front();
    match fault {
        Some(Fault::RateLimited(_)) => {
            return error(429, "The API rate limit has been exceeded. Try again later.");
        }
        Some(Fault::OverMonthlyLimit) => return error(429, "You have reached your monthly limit."),
        Some(Fault::ServerError(status)) => return error(status, "An error occurred in the server."),
        _ => {}
    }
    let request_id = uuid::Uuid::new_v4().to_string();
    let n = state.lock().unwrap().posted.len();
    let sent: Value = messages
        .iter()
        .enumerate()
        .map(|(i, _)| json!({"id": format!("{}", 500_000_000_000_000_000u64 + (n * 5 + i) as u64), "quoteToken": "q"}))
        .collect();
    let id = sent[0]["id"].as_str().unwrap().to_string();
    state.lock().unwrap().posted.push(Posted { body, id });
    if let Some(k) = key {
        keys.lock().unwrap().accepted.insert(k, (request_id.clone(), sent.clone()));
    }
    if let Some(Fault::SlowAfterPost(d)) = fault {
        tokio::time::sleep(d).await;
    }
    let headers = format!("x-line-request-id: {request_id}\r\n");
    Some((200, headers, json!({ "sentMessages": sent }).to_string()))
}
