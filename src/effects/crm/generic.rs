//! `generic`: POST the lead as JSON with an `Idempotency-Key`; optional lookup URL.

use std::time::Duration;

use serde_json::json;

use super::{Capabilities, CrmAdapter, Lead};
use crate::effects::http::{authorize, client, id_of, lookup_failed, status_error, transport_error, Secret};
use crate::effects::{BoxFuture, Lookup, Report};

pub struct GenericCrm {
    client: reqwest::Client,
    url: String,
    /// With `{external_ref}` where the reference goes.
    lookup_url: Option<String>,
    token: Option<Secret>,
}

impl GenericCrm {
    pub fn new(
        url: String,
        lookup_url: Option<String>,
        token: Option<Secret>,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        Ok(GenericCrm { client: client(timeout)?, url, lookup_url, token })
    }
}

impl CrmAdapter for GenericCrm {
    fn capabilities(&self) -> Capabilities {
        Capabilities { idempotent_upsert: false, lookup: self.lookup_url.is_some() }
    }

    fn create<'a>(&'a self, lead: &'a Lead) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let req = self
                .client
                .post(&self.url)
                .header("Idempotency-Key", &lead.external_ref)
                .json(&json!({"external_ref": lead.external_ref, "fields": lead.fields}));
            let resp = match authorize(req, &self.token).send().await {
                Ok(r) => r,
                Err(e) => return transport_error(&e),
            };
            let status = resp.status();
            if !status.is_success() {
                return status_error(&resp);
            }
            let body: serde_json::Value = resp.json().await.unwrap_or_default();
            Report::sent(id_of(&body, "id").unwrap_or_else(|| lead.external_ref.clone()))
                .with_http(status.as_u16())
        })
    }

    fn lookup<'a>(&'a self, external_ref: &'a str) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            let Some(template) = &self.lookup_url else { return lookup_failed("no_lookup") };
            let url = template.replace("{external_ref}", external_ref);
            let resp = match authorize(self.client.get(url), &self.token).send().await {
                Ok(r) => r,
                Err(_) => return lookup_failed("lookup_transport"),
            };
            match resp.status().as_u16() {
                404 => Lookup::Absent,
                200 => {
                    let body: serde_json::Value = resp.json().await.unwrap_or_default();
                    match id_of(&body, "id") {
                        Some(provider_ref) => Lookup::Found { provider_ref },
                        None => lookup_failed("lookup_body"),
                    }
                }
                s => lookup_failed(format!("lookup_http_{s}")),
            }
        })
    }
}
