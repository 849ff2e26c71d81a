//! A loopback DingTalk (钉钉) custom robot that holds `robot/send` to DingTalk's own
//! description ("自定义机器人发送群消息", "自定义机器人安全设置: 加签") and refuses anything else
//! the way DingTalk does: HTTP 200 with `{"errcode": N, "errmsg": "…"}`.
//!
//! Where each rule comes from (open.dingtalk.com, as its users quote it):
//! - [url] the webhook is `https://oapi.dingtalk.com/robot/send?access_token=XXXXXX`; POST a
//!   JSON body (`Content-Type: application/json`).
//! - [sign] with 加签, the request also carries `timestamp` ("当前时间戳，单位是毫秒，与请求
//!   调用时间误差不能超过1小时") and `sign`: "把timestamp+\"\\n\"+密钥当做签名字符串，使用
//!   HmacSHA256算法计算签名，然后进行Base64 encode，最后再把签名参数再进行urlEncode" (the key
//!   is the `SEC…` secret).
//! - [text] `{"msgtype": "text", "text": {"content": …}}`, `content` required.
//! - [answer] `{"errcode": 0, "errmsg": "ok"}`; errors keep HTTP 200 with a non-zero
//!   `errcode`: 300001 for an unknown token, 310000 for a signature or timestamp refused,
//!   130101 for a robot sending too fast ("每个机器人每分钟最多发送20条消息").
//!
//! This fake also refuses content over `CONTENT_MAX` bytes (DingTalk's exact text limit was
//! not found in its documentation; this is onceform's own cap, checked here).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;
use tokio::net::TcpListener;

use super::chat::{Fault, Log, Posted};
use super::vendor::{serve, Reply, Request};

/// The one robot's token.
pub const TOKEN: &str = "b2d6a5c3e8f14f0c9a7b2e1d3c4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f";
/// Its signing secret.
pub const SECRET: &str = "SEC1f3b5d7e9a0c2e4f6a8b0d2f4a6c8e0b2d4f6a8c0e2a4b6d8f0a2c4e6b8d0f2";
/// This fake's cap on a text's content, in bytes.
pub const CONTENT_MAX: usize = 4000;

#[derive(Clone)]
pub struct FakeDingtalk {
    /// `…/robot/send`, without its token.
    pub base: String,
    pub state: Arc<Mutex<Log>>,
}

impl FakeDingtalk {
    pub async fn start() -> FakeDingtalk {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/robot/send", listener.local_addr().unwrap());
        let state: Arc<Mutex<Log>> = Arc::default();
        let s = state.clone();
        serve(listener, move |req| handle(s.clone(), req));
        FakeDingtalk { base, state }
    }

    /// The webhook URL with `token`.
    pub fn url(&self, token: &str) -> String {
        format!("{}?access_token={token}", self.base)
    }

    pub fn posted(&self) -> Vec<Posted> {
        self.state.lock().unwrap().posted.clone()
    }

    pub fn refused(&self) -> Vec<String> {
        self.state.lock().unwrap().refused.clone()
    }
}

/// [answer] an error: HTTP 200 with DingTalk's errcode.
fn error(errcode: i64, errmsg: &str) -> Reply {
    Some((200, String::new(), json!({"errcode": errcode, "errmsg": errmsg}).to_string()))
}

fn refuse(state: &Mutex<Log>, rule: &str, reply: Reply) -> Reply {
    state.lock().unwrap().refused.push(rule.to_string());
    reply
}

/// [sign] the signature of `timestamp` with `secret` (before URL encoding).
fn expected_sign(timestamp: &str, secret: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{timestamp}\n{secret}").as_bytes());
    STANDARD.encode(mac.finalize().into_bytes())
}

async fn handle(state: Arc<Mutex<Log>>, req: Request) -> Reply {
    state.lock().unwrap().arrivals.push(Instant::now());
    let path: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    if path != ["robot", "send"] || req.method != "POST" {
        return refuse(&state, "route", Some((404, String::new(), String::new())));
    }
    // [url] the token names the robot.
    if req.query("access_token") != Some(TOKEN) {
        return refuse(&state, "token", error(300001, "token is not exist"));
    }
    // [sign] a timestamp within an hour, and its signature (the query is percent-decoded).
    let (Some(timestamp), Some(sign)) = (req.query("timestamp"), req.query("sign")) else {
        return refuse(&state, "sign: missing", error(310000, "sign not match"));
    };
    let now = chrono::Utc::now().timestamp_millis();
    match timestamp.parse::<i64>() {
        Ok(t) if (now - t).abs() <= 3_600_000 => {}
        _ => return refuse(&state, "timestamp", error(310000, "invalid timestamp")),
    }
    if sign != expected_sign(timestamp, SECRET) {
        return refuse(&state, "sign", error(310000, "sign not match"));
    }
    let Some(body) = req.is_json().then(|| serde_json::from_slice::<Value>(&req.body).ok()).flatten() else {
        return refuse(&state, "json", error(40035, "缺少参数 json"));
    };
    // [text] the message type and its content.
    if body["msgtype"] != "text" {
        return refuse(&state, "msgtype", error(40035, "不合法的参数 msgtype"));
    }
    let Some(content) = body["text"]["content"].as_str().filter(|c| !c.trim().is_empty()) else {
        return refuse(&state, "content: empty", error(40035, "缺少参数 text.content"));
    };
    if content.len() > CONTENT_MAX {
        return refuse(&state, "content: too long", error(460101, "message too long"));
    }
    // [answer] too fast, or the service failing, before anything is sent.
    let fault = state.lock().unwrap().faults.pop_front();
    match fault {
        Some(Fault::RateLimited(_)) => {
            return error(130101, "send too fast, exceed 20 times per minute");
        }
        Some(Fault::ServerError(status)) => return Some((status, String::new(), String::new())),
        _ => {}
    }
    let id = state.lock().unwrap().posted.len().to_string();
    state.lock().unwrap().posted.push(Posted { body, id });
    if let Some(Fault::SlowAfterPost(d)) = fault {
        tokio::time::sleep(d).await;
    }
    Some((200, String::new(), json!({"errcode": 0, "errmsg": "ok"}).to_string()))
}
