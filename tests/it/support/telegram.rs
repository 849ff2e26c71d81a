//! A loopback Telegram Bot API that holds `sendMessage` to the Bot API's own description and
//! refuses anything else the way the Bot API does (its status, `{"ok": false, "error_code",
//! "description"}`).
//!
//! Where each rule comes from (core.telegram.org/bots/api, as the Bot API's typings quote it):
//! - [requests] "Making requests": every request goes to `/bot<token>/METHOD_NAME`; method
//!   names are case-insensitive; JSON (`application/json`), URL-encoded or multipart bodies.
//!   "The response contains a JSON object, which always has a Boolean field `ok`…; if `ok`
//!   equals true … the result of the query can be found in the `result` field. In case of an
//!   unsuccessful request, `ok` equals false and the error is explained in the `description`.
//!   An Integer `error_code` field is also returned… Some errors may also have an optional
//!   field `parameters` of the type ResponseParameters": `retry_after`, "in case of exceeding
//!   flood control, the number of seconds left to wait before the request can be repeated".
//! - [send] `sendMessage`: `chat_id` (Integer or String, "unique identifier for the target
//!   chat or username of the target channel (in the format @channelusername)"), `text`
//!   ("1-4096 characters after entities parsing"), optional `parse_mode` (`MarkdownV2`,
//!   `HTML`, `Markdown`), `link_preview_options` (a LinkPreviewOptions object: `is_disabled`
//!   Boolean, …). "On success, the sent Message is returned" (`message_id`, `date`, `chat`,
//!   `text`, …).
//! - [seen] the descriptions the Bot API answers, as its users quote them: 401
//!   `Unauthorized`, 404 `Not Found` (an unknown method), 400 `Bad Request: chat not found`,
//!   `Bad Request: message text is empty`, `Bad Request: message is too long`, 429
//!   `Too Many Requests: retry after N`.
//!
//! Text length is counted in UTF-16 code units, as Telegram counts entity offsets.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};
use tokio::net::TcpListener;

use super::chat::{Fault, Log, Posted};
use super::vendor::{serve, Reply, Request};

pub const BOT_TOKEN: &str = "123456789:AAE-test_Token0123456789abcdefghijk";
/// The one chat the bot is a member of.
pub const CHAT_ID: i64 = -1001234567890;

#[derive(Clone)]
pub struct FakeTelegram {
    pub url: String,
    pub state: Arc<Mutex<Log>>,
}

impl FakeTelegram {
    pub async fn start() -> FakeTelegram {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state: Arc<Mutex<Log>> = Arc::default();
        let s = state.clone();
        serve(listener, move |req| handle(s.clone(), req));
        FakeTelegram { url, state }
    }

    pub fn posted(&self) -> Vec<Posted> {
        self.state.lock().unwrap().posted.clone()
    }

    pub fn refused(&self) -> Vec<String> {
        self.state.lock().unwrap().refused.clone()
    }
}

/// [requests] an unsuccessful answer.
fn error(status: u16, description: &str) -> Reply {
    let body = json!({"ok": false, "error_code": status, "description": description});
    Some((status, String::new(), body.to_string()))
}

fn refuse(state: &Mutex<Log>, rule: &str, reply: Reply) -> Reply {
    state.lock().unwrap().refused.push(rule.to_string());
    reply
}

async fn handle(state: Arc<Mutex<Log>>, req: Request) -> Reply {
    state.lock().unwrap().arrivals.push(Instant::now());
    let path: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    let (token, method) = match path.as_slice() {
        [bot, method] if bot.starts_with("bot") => (&bot[3..], *method),
        _ => return refuse(&state, "route", error(404, "Not Found")),
    };
    if token != BOT_TOKEN {
        return refuse(&state, "token", error(401, "Unauthorized"));
    }
    if !method.eq_ignore_ascii_case("sendMessage") {
        return refuse(&state, "method", error(404, "Not Found"));
    }
    if req.method != "POST" && req.method != "GET" {
        return refuse(&state, "http method", error(404, "Not Found"));
    }
    // This fake reads JSON bodies only (what onceform sends); the others are refused, not guessed.
    if !req.is_json() {
        return refuse(&state, "content type", error(400, "Bad Request: only JSON bodies in this fake"));
    }
    let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
        return refuse(&state, "json", error(400, "Bad Request: can't parse JSON object"));
    };
    // [send] chat_id, text, parse_mode, link_preview_options.
    let chat = match &body["chat_id"] {
        Value::Number(n) => n.as_i64(),
        Value::String(s) if s.trim().parse::<i64>().is_ok() => s.trim().parse().ok(),
        Value::String(s) if s.starts_with('@') => None,
        _ => return refuse(&state, "chat_id", error(400, "Bad Request: chat_id is empty")),
    };
    let text = body["text"].as_str().unwrap_or("");
    if text.trim().is_empty() {
        return refuse(&state, "text: empty", error(400, "Bad Request: message text is empty"));
    }
    if text.encode_utf16().count() > 4096 {
        return refuse(&state, "text: too long", error(400, "Bad Request: message is too long"));
    }
    match body.get("parse_mode") {
        None | Some(Value::Null) => {}
        Some(Value::String(m)) if ["MarkdownV2", "HTML", "Markdown"].contains(&m.as_str()) => {}
        Some(_) => return refuse(&state, "parse_mode", error(400, "Bad Request: unsupported parse_mode")),
    }
    if let Some(o) = body.get("link_preview_options") {
        if !o.is_object() || !(o["is_disabled"].is_null() || o["is_disabled"].is_boolean()) {
            return refuse(
                &state,
                "link_preview_options",
                error(400, "Bad Request: can't parse link preview options"),
            );
        }
    }
    if chat != Some(CHAT_ID) {
        return refuse(&state, "chat", error(400, "Bad Request: chat not found"));
    }
    // [requests] flood control, or the service failing, before anything is sent.
    let fault = state.lock().unwrap().faults.pop_front();
    match fault {
        Some(Fault::RateLimited(seconds)) => {
            let n = seconds.ceil() as u64;
            let body = json!({"ok": false, "error_code": 429,
                              "description": format!("Too Many Requests: retry after {n}"),
                              "parameters": {"retry_after": n}});
            return Some((429, String::new(), body.to_string()));
        }
        Some(Fault::ServerError(status)) => return error(status, "Internal Server Error"),
        _ => {}
    }
    let message_id = state.lock().unwrap().posted.len() as i64 + 42;
    let message = json!({"ok": true, "result": {
        "message_id": message_id, "date": 1_796_083_200,
        "chat": {"id": CHAT_ID, "title": "Sales", "type": "supergroup"},
        "from": {"id": 123456789, "is_bot": true, "first_name": "onceform", "username": "onceform_bot"},
        "text": text,
    }});
    state.lock().unwrap().posted.push(Posted { body, id: message_id.to_string() });
    if let Some(Fault::SlowAfterPost(d)) = fault {
        tokio::time::sleep(d).await;
    }
    Some((200, String::new(), message.to_string()))
}
