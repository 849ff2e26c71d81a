//! What every HTTP effect shares (CRM adapters, `slack`, the webhook `forward` handler): the
//! client, the token, and how an answer is classified into an `Outcome`.

use std::fmt;
use std::time::Duration;

use reqwest::header::RETRY_AFTER;
use reqwest::{RequestBuilder, Response, StatusCode};

use crate::effects::{Lookup, Outcome, Report};

/// An API token: never printed, never logged.
#[derive(Clone)]
pub struct Secret(pub String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

pub fn client(timeout: Duration) -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .user_agent(concat!("onceform/", env!("CARGO_PKG_VERSION")))
        // A redirect would carry the lead and the token somewhere the operator never named;
        // a 3xx answer is a permanent failure instead.
        .redirect(reqwest::redirect::Policy::none())
        .build()?)
}

pub fn authorize(req: RequestBuilder, token: &Option<Secret>) -> RequestBuilder {
    match token {
        Some(Secret(t)) => req.bearer_auth(t),
        None => req,
    }
}

/// A request that never got an answer: refused before sending is transient; a timeout or a
/// connection dropped after the request went out is ambiguous.
pub fn transport_error(e: &reqwest::Error) -> Report {
    if e.is_timeout() {
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

/// A sent request: `Ok` with a 2xx answer, else the report of the failure (see
/// `transport_error` and `status_report`).
pub fn answered(
    sent: Result<Response, reqwest::Error>,
    server_errors: ServerErrors,
) -> Result<Response, Report> {
    match sent {
        Ok(resp) if resp.status().is_success() => Ok(resp),
        Ok(resp) => Err(status_report(&resp, server_errors)),
        Err(e) => Err(transport_error(&e)),
    }
}

/// A non-success status of a target that may have acted before failing.
pub fn status_error(resp: &Response) -> Report {
    status_report(resp, ServerErrors::MayHaveActed)
}

/// A non-success status: 429/503 transient (honouring Retry-After); other 5xx and 408
/// ambiguous when the target may have acted, else transient; other 4xx and 3xx permanent.
pub fn status_report(resp: &Response, server_errors: ServerErrors) -> Report {
    let status = resp.status();
    let class = format!("http_{}", status.as_u16());
    let may_have_acted = server_errors == ServerErrors::MayHaveActed;
    let outcome = match status {
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => {
            Outcome::Transient { retry_after: retry_after(resp) }
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
