//! A loopback WeCom (企业微信) group robot that holds `webhook/send` to WeCom's own
//! description and refuses anything else the way WeCom does: HTTP 200 with
//! `{"errcode": N, "errmsg": "…"}`.
//!
//! Where each rule comes from (developer.work.weixin.qq.com/document/path/91770, "群机器人配置说明",
//! as its users quote it):
//! - [url] a robot's webhook is `https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=KEY`,
//!   the key unique to the robot; POST a JSON body (`Content-Type: application/json`).
//! - [text] `{"msgtype": "text", "text": {"content": …}}`: `content` required, "最长不超过
//!   2048个字节，必须是utf8编码"; `markdown` content at most 4096 bytes.
//! - [answer] `{"errcode": 0, "errmsg": "ok"}` on success; errors keep HTTP 200 and a
//!   non-zero `errcode` (93000 for a webhook URL whose key is not a robot's, 40008 for an
//!   unknown message type, 44004 for empty content, 40058 for a parameter out of range).
//! - [rate] "每个机器人发送的消息不能超过20条/分钟": over it, errcode 45009.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};
use tokio::net::TcpListener;

use super::chat::{Fault, Log, Posted};
use super::vendor::{serve, Reply, Request};

/// The one robot's key.
pub const KEY: &str = "693a91f6-7aaa-4bc4-97a0-0ec2sifa5aaa";

#[derive(Clone)]
pub struct FakeWecom {
    /// The robot's base (`…/cgi-bin/webhook/send`), without its key.
    pub base: String,
    pub state: Arc<Mutex<Log>>,
}

impl FakeWecom {
    pub async fn start() -> FakeWecom {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/cgi-bin/webhook/send", listener.local_addr().unwrap());
        let state: Arc<Mutex<Log>> = Arc::default();
        let s = state.clone();
        serve(listener, move |req| handle(s.clone(), req));
        FakeWecom { base, state }
    }

    /// The webhook URL with `key`.
    pub fn url(&self, key: &str) -> String {
        format!("{}?key={key}", self.base)
    }

    pub fn posted(&self) -> Vec<Posted> {
        self.state.lock().unwrap().posted.clone()
    }

    pub fn refused(&self) -> Vec<String> {
        self.state.lock().unwrap().refused.clone()
    }
}

/// [answer] an error: HTTP 200 with WeCom's errcode.
fn error(errcode: i64, errmsg: &str) -> Reply {
    Some((200, String::new(), json!({"errcode": errcode, "errmsg": errmsg}).to_string()))
}

fn refuse(state: &Mutex<Log>, rule: &str, reply: Reply) -> Reply {
    state.lock().unwrap().refused.push(rule.to_string());
    reply
}

async fn handle(state: Arc<Mutex<Log>>, req: Request) -> Reply {
    state.lock().unwrap().arrivals.push(Instant::now());
    let path: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    if path != ["cgi-bin", "webhook", "send"] || req.method != "POST" {
        return refuse(&state, "route", Some((404, String::new(), String::new())));
    }
    // [url] the key names the robot.
    if req.query("key") != Some(KEY) {
        return refuse(
            &state,
            "key",
            error(93000, "invalid webhook url, hint: [1796083200_1] from ip: 127.0.0.1"),
        );
    }
    let Some(body) = req.is_json().then(|| serde_json::from_slice::<Value>(&req.body).ok()).flatten() else {
        return refuse(&state, "json", error(40008, "invalid message type"));
    };
    // [text] the message type and its content.
    let (content, max) = match body["msgtype"].as_str() {
        Some("text") => (&body["text"]["content"], 2048),
        Some("markdown") => (&body["markdown"]["content"], 4096),
        _ => return refuse(&state, "msgtype", error(40008, "invalid message type")),
    };
    let Some(content) = content.as_str().filter(|c| !c.trim().is_empty()) else {
        return refuse(&state, "content: empty", error(44004, "empty content"));
    };
    if content.len() > max {
        return refuse(&state, "content: too long", error(40058, "invalid Request Parameter"));
    }
    // [rate] over the robot's rate, or the service failing, before anything is sent.
    let fault = state.lock().unwrap().faults.pop_front();
    match fault {
        Some(Fault::RateLimited(_)) => return error(45009, "api freq out of limit"),
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
