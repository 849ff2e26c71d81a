//! `forward`, a handler of inbound events only: POST the verified body (WeCom: decrypted) to
//! a URL with `Idempotency-Key` = the handler key; an UNKNOWN outcome is looked up at
//! `lookup_url` when one is configured.

use std::sync::Arc;

use reqwest::header::CONTENT_TYPE;
use reqwest::StatusCode;
use serde::Deserialize;

use super::handler::Handler;
use super::http::url_policy::{check, check_template};
use super::http::{client, fill, lookup_failed, reach, status_error, Client, Reach};
use super::settings::check_table;
use super::{BoxFuture, Deps, Effect, Job, Lookup, Report};
use crate::config::hooks::{HandlerConfig, HandlerRules};

pub struct ForwardHandler;

/// A `forward` handler's own keys.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForwardSettings {
    /// Where the verified body is POSTed.
    #[serde(default)]
    url: Option<String>,
    /// `GET` with `{key}` replaced: 200 found, 404 absent (reconciles UNKNOWN).
    #[serde(default)]
    lookup_url: Option<String>,
    /// Allow `http://` to hosts other than loopback (else only `https://`).
    #[serde(default)]
    allow_http: bool,
    /// Allow a target at a private or reserved address, written in the URL or resolved from
    /// its host name (`http::reach`).
    #[serde(default)]
    allow_private: bool,
}

impl ForwardSettings {
    /// `url` and `lookup_url` as the URL policy allows (`allow_http`: `http://` beyond
    /// loopback), at addresses the reach admits (`allow_private`).
    fn problems(&self, at: &str) -> Vec<String> {
        let mut out = Vec::new();
        let reach = Reach::allowing_private(self.allow_private);
        match &self.url {
            None => out.push(format!("{at}.url: a forward handler needs a URL")),
            Some(u) => {
                let at = format!("{at}.url");
                out.extend(check(&at, u, self.allow_http).err().or_else(|| reach::problem(&at, u, reach)));
            }
        }
        if let Some(l) = &self.lookup_url {
            let at = format!("{at}.lookup_url");
            match l.contains("{key}") {
                false => out.push(format!("{at}: must contain {{key}}")),
                true => out.extend(
                    check_template(&at, l, "{key}", self.allow_http)
                        .err()
                        .or_else(|| reach::problem(&at, l, reach)),
                ),
            }
        }
        out
    }
}

impl HandlerRules for ForwardHandler {
    fn name(&self) -> &'static str {
        "forward"
    }

    fn check_settings(&self, own: &toml::Value) -> Result<(), String> {
        check_table::<ForwardSettings>(own)
    }

    fn problems(&self, at: &str, h: &HandlerConfig) -> Vec<String> {
        h.own::<ForwardSettings>().map(|s| s.problems(at)).unwrap_or_default()
    }
}

impl Handler for ForwardHandler {
    fn effect(&self, h: &HandlerConfig, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        let s: ForwardSettings = h.own().map_err(|e| anyhow::anyhow!(e))?;
        if let Some(problem) = s.problems("").into_iter().next() {
            anyhow::bail!(problem.trim_start_matches('.').to_string());
        }
        let reach = Reach::allowing_private(s.allow_private);
        let url = s.url.unwrap_or_default();
        Ok(Arc::new(Forward { client: client(deps.timeout, reach)?, url, lookup_url: s.lookup_url }))
    }
}

struct Forward {
    client: Client,
    url: String,
    lookup_url: Option<String>,
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
            let event = job.event.as_ref();
            let body = event.and_then(|e| e.body.clone()).unwrap_or_default();
            let ct = event.map_or("application/json", |e| e.content_type.as_str());
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
