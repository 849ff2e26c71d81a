//! `forward`: POST the verified body (WeCom: decrypted) to a URL with `Idempotency-Key` = the
//! handler key; an UNKNOWN outcome is looked up at `lookup_url` when one is configured.

use reqwest::header::CONTENT_TYPE;
use reqwest::StatusCode;

use super::Deps;
use crate::effects::crm::url_policy::{self, fill};
use crate::effects::http::{client, lookup_failed, status_error, transport_error};
use crate::effects::{BoxFuture, Effect, Job, Lookup, Report};
use crate::hooks::config::HandlerConfig;

pub struct Forward {
    client: reqwest::Client,
    url: String,
    lookup_url: Option<String>,
}

impl Forward {
    pub fn new(h: &HandlerConfig, deps: &Deps<'_>) -> anyhow::Result<Forward> {
        let url = h.url.clone().ok_or_else(|| anyhow::anyhow!("a forward handler needs a url"))?;
        url_policy::check_handler(h, "").map_err(anyhow::Error::msg)?;
        Ok(Forward { client: client(deps.timeout)?, url, lookup_url: h.lookup_url.clone() })
    }
}

impl Effect for Forward {
    fn can_reconcile(&self) -> bool {
        self.lookup_url.is_some()
    }

    fn idempotent(&self) -> bool {
        false
    }

    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let body = job.fields.get("body").cloned().unwrap_or_default();
            let ct = job.fields.get("content_type").cloned().unwrap_or_else(|| "application/json".into());
            let sent = self
                .client
                .post(&self.url)
                .header("Idempotency-Key", &job.effect_key)
                .header(CONTENT_TYPE, ct)
                .body(body)
                .send()
                .await;
            match sent {
                Err(e) => transport_error(&e),
                Ok(resp) if resp.status().is_success() => {
                    Report::sent(job.effect_key.clone()).with_http(resp.status().as_u16())
                }
                Ok(resp) => status_error(&resp),
            }
        })
    }

    fn reconcile<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            let Some(template) = &self.lookup_url else { return lookup_failed("no_lookup") };
            let Some(url) = fill(template, "{key}", &job.effect_key) else {
                return lookup_failed("bad_reference");
            };
            match self.client.get(url).send().await {
                Ok(r) if r.status().is_success() => Lookup::Found { provider_ref: job.effect_key.clone() },
                Ok(r) if r.status() == StatusCode::NOT_FOUND => Lookup::Absent,
                Ok(r) => lookup_failed(format!("http_{}", r.status().as_u16())),
                Err(e) if e.is_timeout() => lookup_failed("timeout"),
                Err(_) => lookup_failed("connect"),
            }
        })
    }
}
