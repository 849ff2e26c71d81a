//! What the vendor CRM fakes share: a raw HTTP/1.1 loop (so faults can drop connections),
//! the parsed request, faults from `crm::Fault`, the test token, and wiring the app to a vendor.

use std::future::Future;
use std::sync::Once;

use diesel::prelude::*;
use onceform::config::Config;
use onceform::db::schema::{side_effects, submissions};
use onceform::db::DbError;
use onceform::with_conn;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// The environment variable `[crm] token_env` names in these tests, and its value.
pub const TOKEN_ENV: &str = "ONCEFORM_TEST_VENDOR_TOKEN";
pub const TOKEN: &str = "pat-na1-test-token";

/// Sets the token variable once per test process, before the first app reads it (nextest
/// runs each test in its own process; the value never changes, so a second test sees the same).
pub fn set_token() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| std::env::set_var(TOKEN_ENV, TOKEN));
}

/// Points the app's CRM at a vendor fake with its own field mapping.
pub fn wire_vendor(config: &mut Config, adapter: &str, url: &str, fields: &[(&str, &str)]) {
    set_token();
    config.crm.adapter = Some(adapter.into());
    config.crm.url = Some(url.to_string());
    config.crm.token_env = TOKEN_ENV.into();
    let form = config.forms.get_mut("contact").unwrap();
    form.crm_fields = fields.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
}

/// Only the CRM lead: these tests are about the CRM.
pub fn crm_only(config: &mut Config) {
    config.forms.get_mut("contact").unwrap().effects.retain(|k| k.as_str() == "crm_lead");
}

/// A contact inquiry from its own address.
pub fn inquiry_from(email: &str, message: &str) -> Value {
    let mut v = super::inquiry(message);
    v["email"] = Value::String(email.into());
    v
}

/// The CRM lead's effect key (the external reference) of the submission under `key`.
pub async fn lead_ref(app: &super::TestApp, key: &str) -> String {
    let key = key.to_string();
    app.query(move |pool| {
        with_conn!(pool, |c| side_effects::table
            .inner_join(submissions::table)
            .filter(submissions::operation_id.eq(&key))
            .filter(side_effects::kind.eq("crm_lead"))
            .select(side_effects::effect_key)
            .first::<String>(c)
            .map_err(DbError::from))
    })
    .await
}

/// The ID of the submission stored under `key` (for its admin page).
pub async fn submission_id(app: &super::TestApp, key: &str) -> String {
    let key = key.to_string();
    app.query(move |pool| {
        with_conn!(pool, |c| submissions::table
            .filter(submissions::operation_id.eq(&key))
            .select(submissions::id)
            .first::<onceform::domain::SubmissionId>(c)
            .map(|id| id.to_string())
            .map_err(DbError::from))
    })
    .await
}

/// Puts every CRM lead in `state`, due now: as a worker that died after sending leaves it
/// (`UNKNOWN`, once its lease runs out) or as an admin's "mark not sent" does (`PENDING`).
pub async fn force_lead_state(app: &super::TestApp, state: &str) {
    let state = state.to_string();
    app.query(move |pool| {
        with_conn!(pool, |c| diesel::update(side_effects::table.filter(side_effects::kind.eq("crm_lead")))
            .set((
                side_effects::state.eq(&state),
                side_effects::next_attempt_at.eq(onceform::base::clock::now())
            ))
            .execute(c)
            .map_err(DbError::from))
    })
    .await;
}

/// One request as the fake read it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The path's segments, percent-decoded.
    pub segments: Vec<String>,
    /// Query parameters, percent-decoded.
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The bearer token, if the request carries one.
    pub fn bearer(&self) -> Option<&str> {
        self.header("authorization")?.strip_prefix("Bearer ")
    }

    pub fn is_json(&self) -> bool {
        self.header("content-type")
            .is_some_and(|v| v.trim().to_ascii_lowercase().starts_with("application/json"))
    }
}

/// Status, extra header lines (each ending in CRLF) and a JSON body; `None` drops the connection.
pub type Reply = Option<(u16, String, String)>;

/// Serves `handler` on `listener`, one task per connection, keep-alive.
pub fn serve<H, F>(listener: TcpListener, handler: H)
where
    H: Fn(Request) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Reply> + Send + 'static,
{
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(connection(stream, handler.clone()));
        }
    });
}

async fn connection<H, F>(stream: TcpStream, handler: H)
where
    H: Fn(Request) -> F,
    F: Future<Output = Reply>,
{
    let mut reader = BufReader::new(stream);
    while let Some(request) = read_request(&mut reader).await {
        let Some((status, extra, body)) = handler(request).await else { return };
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json;charset=utf-8\r\ncontent-length: {}\r\n{extra}\r\n{body}",
            body.len()
        );
        if reader.get_mut().write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

async fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).await.ok()? == 0 {
            return None;
        }
        if h == "\r\n" {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let length = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .map_or(0, |(_, v)| v.parse().unwrap_or(0));
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let segments = path.split('/').skip(1).map(decode).collect();
    let query = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        // Form encoding: `+` is a space.
        .map(|(k, v)| (decode(&k.replace('+', " ")), decode(&v.replace('+', " "))))
        .collect();
    Some(Request { method, segments, query, headers, body })
}

/// Percent-decoding of one path segment or query component.
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%').then(|| s.get(i + 1..i + 3)).flatten();
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One part of a `multipart/form-data` body.
#[derive(Debug, Clone)]
pub struct Part {
    pub name: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// The parts of a `multipart/form-data` request (RFC 7578), `None` when it is not one or
/// does not parse: a boundary from the content type, each part's `Content-Disposition:
/// form-data; name=…` (and `filename=…`), the closing delimiter.
pub fn multipart(req: &Request) -> Option<Vec<Part>> {
    let content_type = req.header("content-type")?;
    let (kind, params) = content_type.split_once(';')?;
    if !kind.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    let boundary = params.split(';').find_map(|p| p.trim().strip_prefix("boundary="))?.trim_matches('"');
    let delimiter = format!("--{boundary}").into_bytes();
    let body = &req.body;
    let find = |from: usize, needle: &[u8]| {
        body.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|i| i + from)
    };
    let mut at = find(0, &delimiter)? + delimiter.len();
    let mut parts = Vec::new();
    loop {
        if body.get(at..at + 2)? == b"--" {
            return Some(parts); // the closing delimiter
        }
        at += 2; // CRLF after the delimiter
        let head_end = find(at, b"\r\n\r\n")?;
        let head = std::str::from_utf8(&body[at..head_end]).ok()?;
        let next = find(head_end + 4, &[b"\r\n".as_slice(), &delimiter].concat())?;
        let mut part = Part { name: String::new(), filename: None, content_type: None, body: Vec::new() };
        for line in head.split("\r\n") {
            let (k, v) = line.split_once(':')?;
            if k.eq_ignore_ascii_case("content-disposition") {
                let mut params = v.split(';').map(str::trim);
                if params.next()? != "form-data" {
                    return None;
                }
                for p in params {
                    let (pk, pv) = p.split_once('=')?;
                    let pv = pv.trim_matches('"').to_string();
                    match pk {
                        "name" => part.name = pv,
                        "filename" => part.filename = Some(pv),
                        _ => {}
                    }
                }
            } else if k.eq_ignore_ascii_case("content-type") {
                part.content_type = Some(v.trim().to_string());
            }
        }
        if part.name.is_empty() {
            return None;
        }
        part.body = body[head_end + 4..next].to_vec();
        parts.push(part);
        at = next + 2 + delimiter.len();
    }
}
