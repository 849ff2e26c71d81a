//! A loopback Feishu / Lark (飞书) custom bot that holds `bot/v2/hook/TOKEN` to Feishu's own
//! guide ("自定义机器人使用指南") and refuses anything else the way Feishu does: a JSON body
//! `{"code": N, "msg": "…", "data": {}}`, mostly with HTTP 200.
//!
//! Where each rule comes from (open.feishu.cn / open.larkoffice.com, 自定义机器人使用指南):
//! - [url] the webhook is `https://open.feishu.cn/open-apis/bot/v2/hook/xxxxxxxxxxxxxxxxx`;
//!   POST a JSON body `{"msg_type": "text", "content": {"text": …}}`.
//! - [size] "发送消息时，请求体的数据大小不能超过 20 KB"; a body out of shape or over it is
//!   `{"code": 9499, "msg": "Bad Request", "data": {}}`.
//! - [sign] with 签名校验, the body also carries `timestamp` ("距当前时间不超过 1 小时(3600
//!   秒)的时间戳，时间单位：s") and `sign`: "把 timestamp + \"\\n\" + 密钥当做签名字符串，使用
//!   HmacSHA256 算法计算签名，再进行 Base64 编码" (the guide's samples key the HMAC with that
//!   string and sign an empty message); a mismatch or an old timestamp is `{"code": 19021,
//!   "msg": "sign match fail or timestamp is not within one hour from current time"}`.
//! - [rate] "单租户单机器人 100 次/分钟，5 次/秒"; over it, code 11232 (限流).
//! - [answer] success is `{"code": 0, "msg": "success", "data": {}}` (with the legacy
//!   `StatusCode`, `StatusMessage`). An unknown token is code 19001 ("param invalid: incoming
//!   webhook access token invalid", as its users quote it).

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

/// The one bot's token (the hook's last path segment).
pub const TOKEN: &str = "5e3d587e-d78e-4a07-bd07-265f269f86fd";
/// Its signing secret.
pub const SECRET: &str = "nIMtb7r3N9pkXyXdtAbx6e";

#[derive(Clone)]
pub struct FakeFeishu {
    /// `…/open-apis/bot/v2/hook`, without the token.
    pub base: String,
    pub state: Arc<Mutex<Log>>,
}

impl FakeFeishu {
    pub async fn start() -> FakeFeishu {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/open-apis/bot/v2/hook", listener.local_addr().unwrap());
        let state: Arc<Mutex<Log>> = Arc::default();
        let s = state.clone();
        serve(listener, move |req| handle(s.clone(), req));
        FakeFeishu { base, state }
    }

    /// The webhook URL of `token`.
    pub fn url(&self, token: &str) -> String {
        format!("{}/{token}", self.base)
    }

    pub fn posted(&self) -> Vec<Posted> {
        self.state.lock().unwrap().posted.clone()
    }

    pub fn refused(&self) -> Vec<String> {
        self.state.lock().unwrap().refused.clone()
    }
}

/// [answer] an error: HTTP 200 with Feishu's code.
fn error(code: i64, msg: &str) -> Reply {
    Some((200, String::new(), json!({"code": code, "msg": msg, "data": {}}).to_string()))
}

fn refuse(state: &Mutex<Log>, rule: &str, reply: Reply) -> Reply {
    state.lock().unwrap().refused.push(rule.to_string());
    reply
}

/// [sign] the signature of `timestamp` with `secret`.
fn expected_sign(timestamp: &str, secret: &str) -> String {
    let mac = Hmac::<Sha256>::new_from_slice(format!("{timestamp}\n{secret}").as_bytes()).unwrap();
    STANDARD.encode(mac.finalize().into_bytes())
}

const SIGN_FAIL: &str = "sign match fail or timestamp is not within one hour from current time";

async fn handle(state: Arc<Mutex<Log>>, req: Request) -> Reply {
    state.lock().unwrap().arrivals.push(Instant::now());
    let path: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    let token = match path.as_slice() {
        ["open-apis", "bot", "v2", "hook", token] if req.method == "POST" => *token,
        _ => return refuse(&state, "route", Some((404, String::new(), "404 page not found".into()))),
    };
    if token != TOKEN {
        return refuse(&state, "token", error(19001, "param invalid: incoming webhook access token invalid"));
    }
    // [size], [url] a JSON body of at most 20 KB.
    if req.body.len() > 20 * 1024 {
        return refuse(&state, "size", error(9499, "Bad Request"));
    }
    let Some(body) = req.is_json().then(|| serde_json::from_slice::<Value>(&req.body).ok()).flatten() else {
        return refuse(&state, "json", error(9499, "Bad Request"));
    };
    // [sign] a timestamp (seconds, a string or a number) within an hour, and its signature.
    let timestamp = match &body["timestamp"] {
        Value::String(t) => t.clone(),
        Value::Number(n) => n.to_string(),
        _ => return refuse(&state, "sign: missing", error(19021, SIGN_FAIL)),
    };
    let now = chrono::Utc::now().timestamp();
    match timestamp.parse::<i64>() {
        Ok(t) if (now - t).abs() <= 3600 => {}
        _ => return refuse(&state, "timestamp", error(19021, SIGN_FAIL)),
    }
    if body["sign"].as_str() != Some(expected_sign(&timestamp, SECRET).as_str()) {
        return refuse(&state, "sign", error(19021, SIGN_FAIL));
    }
    // [url] the text message.
    if body["msg_type"] != "text" {
        return refuse(&state, "msg_type", error(9499, "Bad Request"));
    }
    if body["content"]["text"].as_str().is_none_or(|t| t.trim().is_empty()) {
        return refuse(&state, "text: empty", error(9499, "Bad Request"));
    }
    // [rate] over the bot's rate, or the service failing, before anything is sent.
    let fault = state.lock().unwrap().faults.pop_front();
    match fault {
        Some(Fault::RateLimited(_)) => {
            return error(11232, "frequency limited psm[lark.oapi.app_platform_runtime]")
        }
        Some(Fault::ServerError(status)) => return Some((status, String::new(), String::new())),
        _ => {}
    }
    let id = state.lock().unwrap().posted.len().to_string();
    state.lock().unwrap().posted.push(Posted { body, id });
    if let Some(Fault::SlowAfterPost(d)) = fault {
        tokio::time::sleep(d).await;
    }
    let ok = json!({"code": 0, "msg": "success", "data": {}, "Extra": null,
                    "StatusCode": 0, "StatusMessage": "success"});
    Some((200, String::new(), ok.to_string()))
}
