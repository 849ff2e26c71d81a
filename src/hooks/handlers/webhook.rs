//! `webhook`: the verified event, signed per Standard Webhooks like the form kind `webhook`
//! (`effects::webhook`): `{"type": "event.received", "source", "event_id", "content_type",
//! "body"}` with `webhook-id` = the handler key with batch 0, so retries and replays are one
//! event for the receiver, which deduplicates by it.

use std::collections::BTreeMap;

use serde_json::json;

use super::Deps;
use crate::effects::webhook::Endpoint;
use crate::effects::{BoxFuture, Effect, Job, Lookup, Report};
use crate::hooks::config::HandlerConfig;

pub struct HookWebhook {
    endpoint: Endpoint,
}

impl HookWebhook {
    pub fn new(h: &HandlerConfig, deps: &Deps<'_>) -> anyhow::Result<HookWebhook> {
        let url = h.url.as_deref().ok_or_else(|| anyhow::anyhow!("a webhook handler needs a url"))?;
        let env =
            h.secret_env.as_deref().ok_or_else(|| anyhow::anyhow!("a webhook handler needs secret_env"))?;
        Ok(HookWebhook {
            endpoint: Endpoint::new("secret_env", url, env, BTreeMap::new(), false, deps.timeout)?,
        })
    }
}

impl Effect for HookWebhook {
    fn can_reconcile(&self) -> bool {
        false
    }

    fn idempotent(&self) -> bool {
        true
    }

    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let field = |name: &str| job.fields.get(name).cloned().unwrap_or_default();
            let body = json!({
                "type": "event.received",
                "source": field("source"),
                "event_id": field("event_id"),
                "content_type": field("content_type"),
                "body": field("body"),
            });
            self.endpoint.post(&job.effect_key, body.to_string()).await
        })
    }

    fn reconcile<'a>(&'a self, _job: &'a Job) -> BoxFuture<'a, Lookup> {
        Box::pin(async { Lookup::Failed { error_class: "no_lookup".into() } })
    }
}
