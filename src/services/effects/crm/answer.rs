//! A vendor's answer read once (status, JSON body, rate-limit wait), for the adapters whose
//! outcome depends on what the body says as much as on the status (Pipedrive, Zoho).

use std::time::Duration;

use reqwest::{Response, StatusCode};
use serde_json::Value;

use crate::services::effects::http::{classify, excerpt, rate_limit_wait, read_head, ServerErrors};
use crate::services::effects::{Outcome, Report};

/// One answer: a 2xx body read whole (within the client's timeout), any other's first bytes.
pub struct Answer {
    pub status: StatusCode,
    /// The body as JSON (`Null` when empty or not JSON).
    pub body: Value,
    /// A refusal's first bytes, for the excerpt when the body is not the vendor's JSON.
    raw: Vec<u8>,
    /// What `Retry-After` / `X-RateLimit-Reset` ask for.
    wait: Option<Duration>,
}

impl Answer {
    /// Reads `resp`; a 2xx body that cannot be read in time is ambiguous (`unreadable`).
    pub async fn read(resp: Response, unreadable: &'static str) -> Result<Answer, Report> {
        let (status, wait) = (resp.status(), rate_limit_wait(&resp));
        if status.is_success() {
            let bytes = resp
                .bytes()
                .await
                .map_err(|_| Report::failed(Outcome::Ambiguous, unreadable).with_http(status.as_u16()))?;
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            return Ok(Answer { status, body, raw: Vec::new(), wait });
        }
        let raw = read_head(resp).await;
        let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        Ok(Answer { status, body, raw, wait })
    }

    pub fn ok(&self) -> bool {
        self.status.is_success()
    }

    pub fn code(&self) -> u16 {
        self.status.as_u16()
    }

    /// The refusal as the status classifies it, with the vendor's words (`said`), else the
    /// start of the body (a proxy's page).
    pub fn refused(&self, server_errors: ServerErrors, said: Option<String>) -> Report {
        let detail = said.and_then(|s| excerpt(s.as_bytes())).or_else(|| excerpt(&self.raw));
        classify(self.status, self.wait, server_errors).with_detail(detail)
    }
}
