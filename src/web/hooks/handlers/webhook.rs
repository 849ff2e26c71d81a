//! `webhook`: the verified event, signed per Standard Webhooks like the form kind `webhook`
//! (`effects::webhook`): `{"type": "event.received", "source", "event_id", "content_type",
//! "body"}` with `webhook-id` = the handler key with batch 0, so retries and replays are one
//! event for the receiver, which deduplicates by it.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;

use super::{needs_url, Deps, Handler};
use crate::services::effects::http::Reach;
use crate::services::effects::webhook::{read_secrets, url_problems, Endpoint};
use crate::services::effects::{BoxFuture, Effect, Job, Lookup, Report};
use crate::web::hooks::config::{HandlerConfig, HandlerRules};

pub struct HookWebhookKind;

impl HandlerRules for HookWebhookKind {
    fn name(&self) -> &'static str {
        "webhook"
    }

    fn problems(&self, at: &str, h: &HandlerConfig) -> Vec<String> {
        let mut out = needs_url(at, h);
        if let Some(url) = &h.url {
            out.extend(url_problems(&format!("{at}.url"), url, h.allow_private));
        }
        if h.secret_env.is_none() {
            out.push(format!(
                "{at}.secret_env: a webhook handler needs the variable holding its whsec_ secret"
            ));
        }
        out
    }

    /// The `whsec_` secrets of `secret_env`, as `HookWebhook::new` reads them at start.
    fn secret_problems(
        &self,
        at: &str,
        h: &HandlerConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<String> {
        let Some(var) = h.secret_env.as_deref() else { return Vec::new() };
        read_secrets(var, env(var)).err().map(|e| format!("{at}.secret_env: {e}")).into_iter().collect()
    }
}

impl Handler for HookWebhookKind {
    fn effect(&self, h: &HandlerConfig, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        Ok(Arc::new(HookWebhook::new(h, deps)?))
    }
}

pub struct HookWebhook {
    endpoint: Endpoint,
}

impl HookWebhook {
    pub fn new(h: &HandlerConfig, deps: &Deps<'_>) -> anyhow::Result<HookWebhook> {
        let url = h.url.as_deref().ok_or_else(|| anyhow::anyhow!("a webhook handler needs a url"))?;
        let env =
            h.secret_env.as_deref().ok_or_else(|| anyhow::anyhow!("a webhook handler needs secret_env"))?;
        Ok(HookWebhook {
            endpoint: Endpoint::new(
                "secret_env",
                url,
                (env, deps.secrets),
                BTreeMap::new(),
                false,
                Reach::allowing_private(h.allow_private),
                deps.timeout,
            )?,
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
