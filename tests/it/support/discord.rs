//! A loopback Discord that holds "Execute Webhook" requests to Discord's own description and
//! refuses anything else the way Discord does (its status, a JSON `{"message", "code"}`).
//!
//! Where each rule comes from (discord/discord-api-docs):
//! - [webhook] `docs/resources/webhook.mdx`, "Execute Webhook": `POST /webhooks/{webhook.id}/
//!   {webhook.token}` (no authentication but the token in the path); query `wait` ("waits for
//!   server confirmation of message send before response, and returns the created message
//!   body"; without it a `204 No Content`) and `thread_id`; JSON params `content` ("up to 2000
//!   characters"), `embeds` ("up to 10"), `allowed_mentions`, …; "you must provide a value
//!   for at least one of `content`, `embeds`, `components`, `file`, or `poll`".
//! - [reference] `docs/reference.mdx`: the base URL `https://discord.com/api`, optionally
//!   versioned (`/api/v10`); snowflake IDs as strings; "Boolean Query Strings" (`True`,
//!   `true` or `1`); a `Content-Type` other than JSON, form or multipart is a 50035; "Error
//!   Messages": `{"code": 50035, "errors": {FIELD: {"_errors": [{"code", "message"}]}},
//!   "message": "Invalid Form Body"}`.
//! - [codes] `docs/topics/opcodes-and-status-codes.md`: 404 for a resource that does not
//!   exist, 401 for a missing or invalid token, 405 for a method; JSON codes 10015 "Unknown
//!   webhook", 50006 "Cannot send an empty message", 50027 "Invalid webhook token", 50035
//!   "Invalid form body", 50109 "The request body contains invalid JSON".
//! - [limits] `docs/topics/rate-limits.md`, "Exceeding A Rate Limit": a 429 with a JSON body
//!   `{"message", "retry_after" (float seconds), "global"}`, `Retry-After` and the
//!   `X-RateLimit-*` headers (`X-RateLimit-Reset-After` "can have decimals").
//! - [message] `docs/resources/message.md`: the message object (`id`, `channel_id`, `author`,
//!   `content`, `timestamp`, `webhook_id`, …) and the allowed mentions object (`parse`: an
//!   array of `roles`, `users`, `everyone`).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};
use tokio::net::TcpListener;

use super::chat::{Fault, Log, Posted};
use super::vendor::{serve, Reply, Request};

pub const WEBHOOK_ID: &str = "1234567890123456789";
pub const WEBHOOK_TOKEN: &str = "tk_ABC-def_0123456789";
const CHANNEL_ID: &str = "199737254929760256";

#[derive(Clone)]
pub struct FakeDiscord {
    pub url: String,
    pub state: Arc<Mutex<Log>>,
}

impl FakeDiscord {
    pub async fn start() -> FakeDiscord {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state: Arc<Mutex<Log>> = Arc::default();
        let s = state.clone();
        serve(listener, move |req| handle(s.clone(), req));
        FakeDiscord { url, state }
    }

    /// The webhook's URL as Discord shows it (`…/api/webhooks/{id}/{token}`).
    pub fn webhook_url(&self) -> String {
        format!("{}/api/webhooks/{WEBHOOK_ID}/{WEBHOOK_TOKEN}", self.url)
    }

    pub fn posted(&self) -> Vec<Posted> {
        self.state.lock().unwrap().posted.clone()
    }

    pub fn refused(&self) -> Vec<String> {
        self.state.lock().unwrap().refused.clone()
    }
}

/// [codes] `{"message", "code"}` with its status.
fn error(status: u16, code: u32, message: &str) -> Reply {
    Some((status, String::new(), json!({"message": message, "code": code}).to_string()))
}

/// [reference] a 50035 naming the field and its error.
fn invalid_form(field: &str, code: &str, message: &str) -> Reply {
    let body = json!({"code": 50035, "message": "Invalid Form Body",
                      "errors": {field: {"_errors": [{"code": code, "message": message}]}}});
    Some((400, String::new(), body.to_string()))
}

fn refuse(state: &Mutex<Log>, rule: &str, reply: Reply) -> Reply {
    state.lock().unwrap().refused.push(rule.to_string());
    reply
}

async fn handle(state: Arc<Mutex<Log>>, req: Request) -> Reply {
    state.lock().unwrap().arrivals.push(Instant::now());
    let path: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    // [reference] `/api` or `/api/v{N}`, then [webhook] `/webhooks/{id}/{token}`.
    let rest = match path.as_slice() {
        ["api", v, rest @ ..] if v.starts_with('v') && v[1..].parse::<u8>().is_ok() => rest,
        ["api", rest @ ..] => rest,
        _ => return refuse(&state, "route", error(404, 0, "404: Not Found")),
    };
    let (id, token) = match rest {
        ["webhooks", id, token] => (*id, *token),
        _ => return refuse(&state, "route", error(404, 0, "404: Not Found")),
    };
    if req.method != "POST" {
        return refuse(&state, "method", error(405, 0, "405: Method Not Allowed"));
    }
    // [codes] an unknown webhook, then its token.
    if id != WEBHOOK_ID {
        return refuse(&state, "unknown webhook", error(404, 10015, "Unknown Webhook"));
    }
    if token != WEBHOOK_TOKEN {
        return refuse(&state, "token", error(401, 50027, "Invalid Webhook Token"));
    }
    // [reference] the content type, then the JSON.
    if !req.is_json() {
        return refuse(
            &state,
            "content type",
            invalid_form("_errors", "CONTENT_TYPE_INVALID", "Expected JSON"),
        );
    }
    let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
        return refuse(&state, "json", error(400, 50109, "The request body contains invalid JSON."));
    };
    if let Some(rule) = invalid(&body) {
        return refuse(&state, rule.0, rule.1);
    }
    // [limits] a rate limit, or the service failing, before anything is saved.
    let fault = state.lock().unwrap().faults.pop_front();
    match fault {
        Some(Fault::RateLimited(seconds)) => {
            let headers = format!(
                "retry-after: {}\r\nx-ratelimit-limit: 5\r\nx-ratelimit-remaining: 0\r\n\
                 x-ratelimit-reset-after: {seconds}\r\nx-ratelimit-bucket: abcd1234\r\nx-ratelimit-scope: shared\r\n",
                seconds.ceil() as u64
            );
            let body = json!({"message": "The resource is being rate limited.", "retry_after": seconds,
                              "global": false});
            return Some((429, headers, body.to_string()));
        }
        Some(Fault::ServerError(status)) => return error(status, 0, &format!("{status}: Server Error")),
        _ => {}
    }
    let message_id = format!("{}", 1_100_000_000_000_000_000u64 + state.lock().unwrap().posted.len() as u64);
    let content = body["content"].as_str().unwrap_or("");
    let message = json!({
        "id": message_id, "type": 0, "content": content, "channel_id": CHANNEL_ID,
        "author": {"bot": true, "id": WEBHOOK_ID, "username": "onceform", "avatar": null, "discriminator": "0000"},
        "attachments": [], "embeds": body["embeds"].as_array().cloned().unwrap_or_default(),
        "mentions": [], "mention_roles": [], "pinned": false, "mention_everyone": false, "tts": false,
        "timestamp": "2026-12-01T00:00:00.000000+00:00", "edited_timestamp": null, "flags": 0,
        "components": [], "webhook_id": WEBHOOK_ID,
    });
    state.lock().unwrap().posted.push(Posted { body, id: message_id });
    if let Some(Fault::SlowAfterPost(d)) = fault {
        tokio::time::sleep(d).await;
    }
    // [webhook] `wait`: the saved message; without it, 204 and nothing to read.
    match req.query("wait") {
        Some("true" | "True" | "1") => Some((200, String::new(), message.to_string())),
        _ => Some((204, String::new(), String::new())),
    }
}

/// [webhook] [message] what Discord refuses in an "Execute Webhook" body.
fn invalid(body: &Value) -> Option<(&'static str, Reply)> {
    let Some(obj) = body.as_object() else {
        return Some((
            "body",
            invalid_form("_errors", "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType"),
        ));
    };
    let content = match obj.get("content") {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(_) => {
            return Some((
                "content: type",
                invalid_form("content", "BASE_TYPE_STRING", "Could not interpret value as string."),
            ))
        }
    };
    if content.chars().count() > 2000 {
        return Some((
            "content: too long",
            invalid_form("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length."),
        ));
    }
    let embeds = obj.get("embeds").and_then(Value::as_array).map_or(0, Vec::len);
    if embeds > 10 {
        return Some((
            "embeds: too many",
            invalid_form("embeds", "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length."),
        ));
    }
    if content.trim().is_empty()
        && embeds == 0
        && !["components", "file", "poll"].iter().any(|k| obj.contains_key(*k))
    {
        return Some(("empty", error(400, 50006, "Cannot send an empty message")));
    }
    if let Some(m) = obj.get("allowed_mentions") {
        let parse_ok = match &m["parse"] {
            Value::Null => true,
            Value::Array(kinds) => {
                kinds.iter().all(|k| matches!(k.as_str(), Some("roles" | "users" | "everyone")))
            }
            _ => false,
        };
        if !m.is_object() || !parse_ok {
            return Some((
                "allowed_mentions",
                invalid_form(
                    "allowed_mentions",
                    "BASE_TYPE_CHOICES",
                    "Value must be one of {'roles', 'users', 'everyone'}.",
                ),
            ));
        }
    }
    None
}
