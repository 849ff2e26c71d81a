//! What every HTTP effect shares (CRM adapters, `slack`, `webhook`, the inbound `forward`
//! and `webhook` handlers): the client, the token, which URLs may be called and how values
//! go into them (`url_policy`), which addresses a request may reach (`reach`), how an answer
//! is classified into an `Outcome`, and the bounded excerpt of a refusal's body that the
//! attempts log keeps (`excerpt`).

pub mod reach;
pub mod url_policy;

pub use reach::Reach;
pub use url_policy::{encode_segment, fill};

use std::fmt;
use std::time::Duration;

use reqwest::header::RETRY_AFTER;
use reqwest::{IntoUrl, RequestBuilder, Response, StatusCode};

use crate::services::effects::{Lookup, Outcome, Report};

/// An API token: never printed, never logged.
#[derive(Clone)]
pub struct Secret(pub String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// An HTTP effect's client: no redirects, timeouts, and the addresses its target may have
/// (`Reach`) held when each connection is made. Requests go out through `send`.
#[derive(Clone)]
pub struct Client {
    inner: reqwest::Client,
    reach: Reach,
}

/// The client of a target that may be reached as `reach` says (`Reach::Public` unless the
/// operator set `allow_private`).
pub fn client(timeout: Duration, reach: Reach) -> anyhow::Result<Client> {
    let mut builder = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .user_agent(concat!("onceform/", env!("CARGO_PKG_VERSION")))
        // A redirect would carry the lead and the token somewhere the operator never named;
        // a 3xx answer is a permanent failure instead.
        .redirect(reqwest::redirect::Policy::none());
    if reach == Reach::Public {
        builder = builder.dns_resolver(std::sync::Arc::new(reach::Resolver));
    }
    Ok(Client { inner: builder.build()?, reach })
}

impl Client {
    pub fn get(&self, url: impl IntoUrl) -> RequestBuilder {
        self.inner.get(url)
    }

    pub fn post(&self, url: impl IntoUrl) -> RequestBuilder {
        self.inner.post(url)
    }

    pub fn patch(&self, url: impl IntoUrl) -> RequestBuilder {
        self.inner.patch(url)
    }

    /// Sends `req` (made by this client): the answer, or the report of a request that got
    /// none (`transport_error`). A URL whose host is an address the reach does not admit is
    /// refused before anything is sent (`private_address`, permanent); a host name is held to
    /// it by the resolver as the connection is made.
    pub async fn send(&self, req: RequestBuilder) -> Result<Response, Report> {
        let req = req.build().map_err(|e| transport_error(&e))?;
        if !self.reach.admits_url(req.url()) {
            return Err(private_address());
        }
        self.inner.execute(req).await.map_err(|e| transport_error(&e))
    }
}

/// A target refused for its address: permanent (the configuration or the name's DNS must
/// change; an admin can retry the record then).
fn private_address() -> Report {
    Report::failed(Outcome::Permanent, "private_address")
}

pub fn authorize(req: RequestBuilder, token: &Option<Secret>) -> RequestBuilder {
    match token {
        Some(Secret(t)) => req.bearer_auth(t),
        None => req,
    }
}

/// A request that never got an answer: a host name that resolved only to private addresses
/// is permanent (`private_address`), another refusal before sending transient; a timeout or
/// a connection dropped after the request went out is ambiguous.
pub fn transport_error(e: &reqwest::Error) -> Report {
    if reach::is_private_refusal(e) {
        private_address()
    } else if e.is_timeout() {
        Report::failed(Outcome::Ambiguous, "timeout")
    } else if e.is_connect() {
        Report::failed(Outcome::Transient { retry_after: None }, "connect")
    } else {
        Report::failed(Outcome::Ambiguous, "connection_dropped")
    }
}

/// What a target's 5xx answer says about the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerErrors {
    /// The target may have acted before failing (an API that writes, then answers).
    MayHaveActed,
    /// The target answers 5xx only when it did not act (Slack's incoming webhooks).
    DidNotAct,
}

/// A sent request (`Client::send`): `Ok` with a 2xx answer, else the report of the failure
/// (see `transport_error` and `refused`).
pub async fn answered(
    sent: Result<Response, Report>,
    server_errors: ServerErrors,
) -> Result<Response, Report> {
    match sent {
        Ok(resp) if resp.status().is_success() => Ok(resp),
        Ok(resp) => Err(refused(resp, server_errors).await),
        Err(report) => Err(report),
    }
}

/// A non-success answer of a target that may have acted before failing, with the excerpt of
/// its body.
pub async fn status_error(resp: Response) -> Report {
    refused(resp, ServerErrors::MayHaveActed).await
}

/// A non-success answer classified by `status_report`, with the excerpt of its body.
/// Sends `req` with `token`: the JSON of a 2xx answer, else the report of the failure (an
/// unreadable 2xx body is ambiguous: `unreadable` names it).
pub async fn json_call(
    client: &Client,
    req: RequestBuilder,
    token: &Option<Secret>,
    unreadable: &'static str,
) -> Result<serde_json::Value, Report> {
    let resp = client.send(authorize(req, token)).await?;
    let status = resp.status().as_u16();
    if !resp.status().is_success() {
        return Err(refused(resp, ServerErrors::MayHaveActed).await);
    }
    resp.json().await.map_err(|_| Report::failed(Outcome::Ambiguous, unreadable).with_http(status))
}

pub async fn refused(resp: Response, server_errors: ServerErrors) -> Report {
    let report = status_report(&resp, server_errors);
    report.with_detail(excerpt(&read_head(resp).await))
}

/// How much of a refusal's body is read: enough for the excerpt, never the whole of a large one.
const READ_AT_MOST: usize = 4 * 1024;

/// How long the excerpt kept in the attempts log may be, in bytes.
pub const EXCERPT_BYTES: usize = 500;

/// The first `READ_AT_MOST` bytes of the body (within the client's timeout).
pub async fn read_head(mut resp: Response) -> Vec<u8> {
    let mut head = Vec::new();
    while head.len() < READ_AT_MOST {
        match resp.chunk().await {
            Ok(Some(chunk)) => head.extend_from_slice(&chunk[..chunk.len().min(READ_AT_MOST - head.len())]),
            _ => break,
        }
    }
    head
}

/// What a vendor's answer says, for the attempts log and the admin: at most `EXCERPT_BYTES`
/// (cut at a character boundary, `…` marking the cut), every control character (new lines
/// included) replaced by a space, runs of spaces collapsed; `None` when nothing is left.
/// Pages escape it like every other value.
pub fn excerpt(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len().min(EXCERPT_BYTES + 4));
    for c in text.chars() {
        let c = if c.is_control() { ' ' } else { c };
        if c == ' ' && (out.is_empty() || out.ends_with(' ')) {
            continue;
        }
        if out.len() + c.len_utf8() > EXCERPT_BYTES {
            let mut cut = out.trim_end().len().min(EXCERPT_BYTES - '…'.len_utf8());
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            out.push('…');
            return Some(out);
        }
        out.push(c);
    }
    let trimmed = out.trim_end();
    (!trimmed.is_empty()).then(|| trimmed.to_string())
}

/// A non-success status: 429/503 transient (honouring Retry-After); other 5xx and 408
/// ambiguous when the target may have acted, else transient; other 4xx and 3xx permanent.
pub fn status_report(resp: &Response, server_errors: ServerErrors) -> Report {
    classify(resp.status(), retry_after(resp), server_errors)
}

/// `status_report` of a status already read: `wait` is what the answer's headers ask for.
pub fn classify(status: StatusCode, wait: Option<Duration>, server_errors: ServerErrors) -> Report {
    let class = format!("http_{}", status.as_u16());
    let may_have_acted = server_errors == ServerErrors::MayHaveActed;
    let outcome = match status {
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => {
            Outcome::Transient { retry_after: wait }
        }
        StatusCode::REQUEST_TIMEOUT if may_have_acted => Outcome::Ambiguous,
        s if s.is_server_error() && may_have_acted => Outcome::Ambiguous,
        s if s.is_server_error() || s == StatusCode::REQUEST_TIMEOUT => {
            Outcome::Transient { retry_after: None }
        }
        _ => Outcome::Permanent,
    };
    Report::failed(outcome, class).with_http(status.as_u16())
}

/// `Retry-After` in seconds (HTTP dates are rare from APIs and treated as absent).
pub fn retry_after(resp: &Response) -> Option<Duration> {
    let v = resp.headers().get(RETRY_AFTER)?.to_str().ok()?;
    v.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// How long a refusal asks to wait: `Retry-After`, else `X-RateLimit-Reset` (sent by
/// Pipedrive as the seconds left in the window, by Zoho as the time the window ends, in epoch
/// milliseconds; an epoch in seconds is read too). At most an hour.
pub fn rate_limit_wait(resp: &Response) -> Option<Duration> {
    if let Some(wait) = retry_after(resp) {
        return Some(wait);
    }
    let v = resp.headers().get("x-ratelimit-reset")?.to_str().ok()?.trim().parse::<u64>().ok()?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?;
    let wait = match v {
        v if v >= 1_000_000_000_000 => Duration::from_millis(v).saturating_sub(now),
        v if v >= 1_000_000_000 => Duration::from_secs(v).saturating_sub(now),
        v => Duration::from_secs(v),
    };
    Some(wait.min(Duration::from_secs(3600)))
}

/// A lookup that got no usable answer.
pub fn lookup_failed(class: impl Into<String>) -> Lookup {
    Lookup::Failed { error_class: class.into() }
}

/// The `id` member of a JSON body (string or number).
pub fn id_of(body: &serde_json::Value, key: &str) -> Option<String> {
    match &body[key] {
        serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{excerpt, EXCERPT_BYTES};

    #[test]
    fn an_excerpt_is_bounded_one_line_and_cut_at_a_character() {
        assert_eq!(excerpt(b"  \r\n "), None);
        assert_eq!(excerpt(b"bad\r\n\tvalue\x1b[31m  here\n").as_deref(), Some("bad value [31m here"));
        let long = "\u{e9}".repeat(400);
        let cut = excerpt(long.as_bytes()).unwrap();
        assert!(cut.len() <= EXCERPT_BYTES && cut.ends_with('\u{2026}'), "{} bytes", cut.len());
        assert!(cut.trim_end_matches('\u{2026}').chars().all(|c| c == '\u{e9}'));
        assert_eq!(excerpt(&[0xff, b'o', b'k']).as_deref(), Some("\u{fffd}ok"));
    }
}
