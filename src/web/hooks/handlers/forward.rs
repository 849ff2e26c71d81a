//! `forward`: POST the verified body (WeCom: decrypted) to a URL with `Idempotency-Key` = the
//! handler key; an UNKNOWN outcome is looked up at `lookup_url` when one is configured.

use reqwest::header::CONTENT_TYPE;
use reqwest::StatusCode;

use std::sync::Arc;

use super::{needs_url, Deps, Handler};
use crate::services::effects::http::url_policy::{check, check_template};
use crate::services::effects::http::{client, fill, lookup_failed, reach, status_error, Client, Reach};
use crate::services::effects::{BoxFuture, Effect, Job, Lookup, Report};
use crate::web::hooks::config::{HandlerConfig, HandlerRules};

pub struct ForwardKind;

impl HandlerRules for ForwardKind {
    /// `url` and `lookup_url` as the URL policy allows (`allow_http`: `http://` beyond
    /// loopback), at addresses the reach admits (`allow_private`).
    fn problems(&self, at: &str, h: &HandlerConfig) -> Vec<String> {
        let mut out = needs_url(at, h);
        let reach = Reach::allowing_private(h.allow_private);
        if let Some(u) = &h.url {
            let at = format!("{at}.url");
            out.extend(check(&at, u, h.allow_http).err().or_else(|| reach::problem(&at, u, reach)));
        }
        if let Some(l) = &h.lookup_url {
            let at = format!("{at}.lookup_url");
            match l.contains("{key}") {
                false => out.push(format!("{at}: must contain {{key}}")),
                true => out.extend(
                    check_template(&at, l, "{key}", h.allow_http)
                        .err()
                        .or_else(|| reach::problem(&at, l, reach)),
                ),
            }
        }
        out
    }

    fn name(&self) -> &'static str {
        "forward"
    }
}

impl Handler for ForwardKind {
    fn effect(&self, h: &HandlerConfig, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        Ok(Arc::new(Forward::new(h, deps)?))
    }
}

pub struct Forward {
    client: Client,
    url: String,
    lookup_url: Option<String>,
}

impl Forward {
    pub fn new(h: &HandlerConfig, deps: &Deps<'_>) -> anyhow::Result<Forward> {
        let url = h.url.clone().ok_or_else(|| anyhow::anyhow!("a forward handler needs a url"))?;
        if let Some(problem) = ForwardKind.problems("", h).into_iter().next() {
            anyhow::bail!(problem.trim_start_matches('.').to_string());
        }
        let reach = Reach::allowing_private(h.allow_private);
        Ok(Forward { client: client(deps.timeout, reach)?, url, lookup_url: h.lookup_url.clone() })
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
            let req = self
                .client
                .post(&self.url)
                .header("Idempotency-Key", &job.effect_key)
                .header(CONTENT_TYPE, ct);
            match self.client.send(req.body(body)).await {
                Err(report) => report,
                Ok(resp) if resp.status().is_success() => {
                    Report::sent(job.effect_key.clone()).with_http(resp.status().as_u16())
                }
                Ok(resp) => status_error(resp).await,
            }
        })
    }

    fn reconcile<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            let Some(template) = &self.lookup_url else { return lookup_failed("no_lookup") };
            let Some(url) = fill(template, "{key}", &job.effect_key) else {
                return lookup_failed("bad_reference");
            };
            match self.client.send(self.client.get(url)).await {
                Ok(r) if r.status().is_success() => Lookup::Found { provider_ref: job.effect_key.clone() },
                Ok(r) if r.status() == StatusCode::NOT_FOUND => Lookup::Absent,
                Ok(r) => lookup_failed(format!("http_{}", r.status().as_u16())),
                Err(report) => match report.error_class.as_deref() {
                    Some(class @ ("timeout" | "private_address")) => lookup_failed(class),
                    _ => lookup_failed("connect"),
                },
            }
        })
    }
}
