//! `owner_notification`: tells the integration's owners that an event arrived (source,
//! event ID, the first part of the body), Message-ID from the handler key.

use std::sync::Arc;

use crate::services::effects::mail::template::Rendered;
use crate::services::effects::mail::{Envelope, Mailer};
use crate::services::effects::{BoxFuture, Effect, Job, Lookup, Report};
use crate::web::hooks::config::{HandlerConfig, HandlerRules};

use super::{Deps, Handler};

pub struct NotifyKind;

impl HandlerRules for NotifyKind {
    fn name(&self) -> &'static str {
        "owner_notification"
    }

    fn problems(&self, at: &str, h: &HandlerConfig) -> Vec<String> {
        match h.notify.is_empty() {
            true => vec![format!("{at}.notify: an owner_notification handler needs addresses")],
            false => Vec::new(),
        }
    }
}

impl Handler for NotifyKind {
    fn effect(&self, h: &HandlerConfig, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        Ok(Arc::new(Notify::new(h, deps)))
    }
}

/// How much of the body goes into the message.
const EXCERPT: usize = 2000;

pub struct Notify {
    mailer: Arc<Mailer>,
    to: Vec<String>,
}

impl Notify {
    pub fn new(h: &HandlerConfig, deps: &Deps<'_>) -> Notify {
        Notify { mailer: deps.mailer.clone(), to: h.notify.clone() }
    }

    fn render(job: &Job) -> Rendered {
        let get = |k: &str| job.fields.get(k).cloned().unwrap_or_default();
        let (source, event_id, body) = (get("source"), get("event_id"), get("body"));
        let excerpt: String = body.chars().take(EXCERPT).collect();
        let text = format!("Source: {source}\nEvent ID: {event_id}\nKey: {}\n\n{excerpt}\n", job.effect_key);
        Rendered {
            language: crate::base::i18n::Locale::En,
            subject: format!("Inbound event from {source}"),
            html: format!("<pre>{}</pre>", escape(&text)),
            text,
        }
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

impl Effect for Notify {
    fn can_reconcile(&self) -> bool {
        false
    }

    fn idempotent(&self) -> bool {
        self.mailer.idempotent()
    }

    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let envelope =
                Envelope { to: self.to.iter().filter_map(|a| a.parse().ok()).collect(), reply_to: None };
            self.mailer.send(&job.effect_key, envelope, Self::render(job)).await
        })
    }

    fn reconcile<'a>(&'a self, _job: &'a Job) -> BoxFuture<'a, Lookup> {
        Box::pin(async { Lookup::Failed { error_class: "no_lookup".into() } })
    }
}
