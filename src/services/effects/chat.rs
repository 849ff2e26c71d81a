//! What the chat kinds (`teams`, `discord`, `telegram`, `line`, `wecom`, `dingtalk`, `feishu`)
//! share; not a kind itself, and the kinds never use each other. Each message says the same
//! things in the form's locale: the form's title, the reference, the route the submission
//! took (if any), the fields the kind's `fields = [...]` names (nothing else the visitor
//! typed) and, with `[server] public_url`, a link to the submission in the admin.
//! A refusal keeps the vendor's own words and waits as long as the vendor asks.

use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::Response;
use serde_json::Value;

use super::http::{excerpt, read_head, status_report, ServerErrors};
use super::{Job, Outcome, Report};
use crate::base::i18n::{Arg, Locale};
use crate::config::{Config, FormConfig, Secrets};
use crate::domain::{is_invisible, FieldType, FileRef};

/// Characters of one field's value a message shows at most.
const VALUE_MAX: usize = 1000;

/// The longest wait a vendor's answer can impose before the next attempt.
const WAIT_MAX: Duration = Duration::from_secs(24 * 3600);

/// One message, in the form's locale, before a vendor's formatting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub locale: Locale,
    /// `New inquiry: TITLE`.
    pub title: String,
    /// `Reference: OF-…`.
    pub reference: String,
    /// `Route: support-tw`: the route the submission took (`[[forms.F.routes]]`), if any.
    pub route: Option<String>,
    /// (label, value) of each named field the submission filled, in the order named.
    pub fields: Vec<(String, String)>,
    /// (the link's text, the submission's admin URL), with `[server] public_url`.
    pub link: Option<(String, String)>,
}

impl Message {
    /// The message of `job` (a submission of `form`): `fields` names the fields shown;
    /// `admin` is the admin's submission URL without the ID (`admin_base`).
    pub fn of(form: &FormConfig, job: &Job, fields: &[String], admin: Option<&str>) -> Message {
        let locale = form.email_locale();
        let title = one_line(form.title_in(locale));
        let shown = fields.iter().filter_map(|name| {
            let field = form.field(name)?;
            let value = job.fields.get(name).filter(|v| !v.trim().is_empty())?;
            let value = match field.kind {
                FieldType::File => FileRef::shown_all(value, ", "),
                _ => value.clone(),
            };
            Some((one_line(form.label_in(field, locale)), clip(&plain(&value), VALUE_MAX)))
        });
        Message {
            locale,
            title: locale.format("chat-title", &[("form", Arg::Str(&title))]),
            reference: locale.format("chat-reference", &[("reference", Arg::Str(&job.reference()))]),
            route: job
                .route
                .as_deref()
                .map(|r| locale.format("chat-route", &[("route", Arg::Str(&one_line(r)))])),
            fields: shown.collect(),
            link: admin.map(|base| (locale.text("chat-open"), format!("{base}{}", job.submission_id))),
        }
    }

    /// The title, the reference and the route (when there is one), a line each.
    pub fn head(&self) -> String {
        match &self.route {
            Some(route) => format!("{}\n{}\n{route}", self.title, self.reference),
            None => format!("{}\n{}", self.title, self.reference),
        }
    }

    /// `label: value` as the locale writes it.
    pub fn field_line(&self, label: &str, value: &str) -> String {
        self.locale.format("chat-field", &[("label", Arg::Str(label)), ("value", Arg::Str(value))])
    }
}

/// `{public_url}/admin/submissions/` (`[server] public_url` set).
pub fn admin_base(config: &Config) -> Option<String> {
    let url = config.server.public_url.as_deref()?.trim().trim_end_matches('/');
    (!url.is_empty()).then(|| format!("{url}/admin/submissions/"))
}

/// Check-config: each name in `fields` (of `at`) is a field of the form.
pub fn field_problems(at: &str, form: &FormConfig, fields: &[String]) -> Vec<String> {
    fields
        .iter()
        .filter(|name| form.field(name).is_none())
        .map(|name| format!("{at}.fields: `{name}` is not a field of this form"))
        .collect()
}

/// The value of the environment variable `var` that the setting `at` names (in `secrets`),
/// or why not.
pub fn secret_var(secrets: &Secrets, at: &str, var: &str) -> anyhow::Result<String> {
    secrets
        .get(var)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| anyhow::anyhow!("{at}: the environment variable {var} is not set"))
}

/// `s` on one line: whitespace runs (line breaks included) become one space.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What a visitor typed as plain text: line breaks kept (at most two in a row), every other
/// control or invisible character (ESC, bidirectional overrides, zero-width marks) a space.
fn plain(s: &str) -> String {
    let cleaned: String = s
        .replace("\r\n", "\n")
        .chars()
        .map(|c| if c != '\n' && (c.is_control() || is_invisible(c)) { ' ' } else { c })
        .collect();
    let lines: Vec<String> = cleaned.lines().map(one_line).collect();
    let mut out: Vec<&str> = Vec::new();
    for line in &lines {
        if !(line.is_empty() && out.last().is_none_or(|l| l.is_empty())) {
            out.push(line);
        }
    }
    out.join("\n").trim().to_string()
}

/// At most `max` characters, `…` marking a cut.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// At most `max` UTF-16 code units (how Telegram counts), `…` marking a cut.
pub fn clip_utf16(s: &str, max: usize) -> String {
    if s.encode_utf16().count() <= max {
        return s.to_string();
    }
    let mut out = String::new();
    let mut units = 0;
    for c in s.chars() {
        if units + c.len_utf16() > max.saturating_sub(1) {
            break;
        }
        units += c.len_utf16();
        out.push(c);
    }
    out.push('…');
    out
}

/// A wait in seconds as a vendor writes it (`1`, `64.57`); `None` when it is no such number.
pub fn seconds(v: &Value) -> Option<Duration> {
    let s = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s.min(WAIT_MAX.as_secs_f64())))
}

/// A header's wait in seconds (`X-RateLimit-Reset-After: 64.57`).
pub fn header_seconds(headers: &HeaderMap, name: &str) -> Option<Duration> {
    seconds(&Value::String(headers.get(name)?.to_str().ok()?.to_string()))
}

/// What a vendor's answer says of a refused request.
pub struct Refusal<'a> {
    /// The answer's headers.
    pub headers: &'a HeaderMap,
    /// Its JSON body (`Null` when it is none).
    pub body: &'a Value,
}

/// A non-success answer: classified as Slack's is (a 5xx did not post, so it is retried; 429
/// and 503 wait), its detail the vendor's words (`words`, else the start of the body), and
/// the wait before the next attempt the longest of `Retry-After` and what `wait` reads.
pub async fn refused(
    resp: Response,
    words: fn(&Value) -> Option<String>,
    wait: fn(&Refusal<'_>) -> Option<Duration>,
) -> Report {
    let report = status_report(&resp, ServerErrors::DidNotAct);
    let headers = resp.headers().clone();
    let head = read_head(resp).await;
    let body: Value = serde_json::from_slice(&head).unwrap_or(Value::Null);
    let detail = words(&body).and_then(|w| excerpt(w.as_bytes())).or_else(|| excerpt(&head));
    let said = wait(&Refusal { headers: &headers, body: &body });
    let outcome = match report.outcome {
        Outcome::Transient { retry_after } => Outcome::Transient { retry_after: retry_after.max(said) },
        other => other,
    };
    Report { outcome, ..report }.with_detail(detail)
}

/// At most `max` bytes of UTF-8, cut at a character, `…` marking a cut.
pub fn clip_bytes(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let room = max.saturating_sub('…'.len_utf8());
    let mut end = room.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The message as plain text of at most `max` bytes (the fields are cut first): what the
/// robots that take text alone (WeCom, DingTalk, Feishu) post.
pub fn plain_text(m: &Message, max: usize) -> String {
    plain_text_in(m, max, str::len, clip_bytes)
}

/// The message as plain text of at most `max` UTF-16 code units (the fields are cut
/// first): what Telegram and LINE post, both counting text in UTF-16 code units.
pub fn plain_text_utf16(m: &Message, max: usize) -> String {
    plain_text_in(m, max, |s| s.encode_utf16().count(), clip_utf16)
}

/// The message as plain text of at most `max` units as `len` counts them, `clip` cutting
/// a text to that many (the fields are cut first, so the head and the link remain).
fn plain_text_in(m: &Message, max: usize, len: fn(&str) -> usize, clip: fn(&str, usize) -> String) -> String {
    let head = m.head();
    let foot = match &m.link {
        Some((label, url)) => format!("\n{}", m.field_line(label, url)),
        None => String::new(),
    };
    let fields: Vec<String> = m.fields.iter().map(|(l, v)| m.field_line(l, v)).collect();
    if fields.is_empty() {
        return clip(&format!("{head}{foot}"), max);
    }
    let room = max.saturating_sub(len(&head) + len(&foot) + 1);
    clip(&format!("{head}\n{}{foot}", clip(&fields.join("\n"), room)), max)
}

/// How a robot that answers 200 with a code in its body (WeCom, DingTalk, Feishu) says what
/// became of a message: the members holding the code and its message, and its rate-limit code.
#[derive(Debug, Clone, Copy)]
pub struct RobotCodes {
    /// `errcode` (WeCom, DingTalk) or `code` (Feishu).
    pub code: &'static str,
    /// `errmsg` (WeCom, DingTalk) or `msg` (Feishu).
    pub message: &'static str,
    /// The code of a robot over its rate.
    pub rate_limited: i64,
}

impl RobotCodes {
    /// The robot's words on an answer: `code: message`.
    pub fn words(&self, body: &Value) -> Option<String> {
        match (body[self.code].as_i64(), body[self.message].as_str()) {
            (Some(code), Some(msg)) => Some(format!("{code}: {msg}")),
            (Some(code), None) => Some(code.to_string()),
            (None, Some(msg)) => Some(msg.to_string()),
            (None, None) => None,
        }
    }

    /// What a 2xx answer means: code 0 sent, the rate-limit code retried, another code final
    /// (`errcode_N` / `code_N`), no code at all (a proxy's page) not known to have sent.
    pub fn answered(&self, status: u16, head: &[u8], key: &str) -> Report {
        let body: Value = serde_json::from_slice(head).unwrap_or(Value::Null);
        let detail = self.words(&body).and_then(|w| excerpt(w.as_bytes())).or_else(|| excerpt(head));
        let failed =
            |outcome, class: String| Report::failed(outcome, class).with_http(status).with_detail(detail);
        match body[self.code].as_i64() {
            Some(0) => Report::sent(key).with_http(status),
            Some(c) if c == self.rate_limited => {
                failed(Outcome::Transient { retry_after: None }, "http_429".into())
            }
            Some(c) => failed(Outcome::Permanent, format!("{}_{c}", self.code)),
            None => failed(Outcome::Ambiguous, "unreadable_answer".into()),
        }
    }
}

/// The robots name no wait in a refusal: the worker's backoff applies.
pub fn no_wait(_: &Refusal<'_>) -> Option<Duration> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visitor_text_keeps_its_lines_and_loses_what_hides_or_moves_text() {
        assert_eq!(plain("Hello\r\n\r\n\r\n  world\u{1b}[2J \u{202E}x\u{200B}y"), "Hello\n\nworld [2J x y");
        assert_eq!(plain(" \n \n"), "");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip_utf16("a😀b", 3), "a…");
        assert_eq!(clip_utf16("a😀", 3), "a😀");
    }

    #[test]
    fn waits_are_read_as_vendors_write_them() {
        assert_eq!(seconds(&serde_json::json!(64.57)), Some(Duration::from_secs_f64(64.57)));
        assert_eq!(seconds(&serde_json::json!(3)), Some(Duration::from_secs(3)));
        assert_eq!(seconds(&serde_json::json!("1.5")), Some(Duration::from_millis(1500)));
        assert_eq!(seconds(&serde_json::json!(-1)), None);
        assert_eq!(seconds(&serde_json::json!(1e300)), Some(WAIT_MAX));
        assert_eq!(seconds(&serde_json::json!({})), None);
    }
}
