//! `owner_notification`: the inquiry to the form's sales addresses (or its route's),
//! Reply-To the visitor; the `owner_notification` handler of inbound events is the same
//! effect (`OwnerNotificationHandler`).

use std::sync::Arc;

use serde::Deserialize;
use validator::ValidateEmail;

use super::handler::Handler;
use super::mail::template::Rendered;
use super::mail::{data, template, visitor, Attach, EmailEffect, Envelope};
use super::settings::check_table;
use super::{BoxFuture, Deps, Effect, InboundEvent, Job, Kind, Lookup, Report};
use crate::config::hooks::{HandlerConfig, HandlerRules};
use crate::config::FormConfig;
use crate::domain::{EffectKind, FileRef};

pub struct OwnerNotificationKind;

impl Kind for OwnerNotificationKind {
    fn name(&self) -> EffectKind {
        EffectKind::OWNER_NOTIFICATION
    }

    fn check(&self, at: &str, form: &FormConfig) -> Vec<String> {
        let mut out = Vec::new();
        if form.effects.contains(&self.name()) && form.notify.is_empty() {
            out.push(format!("{at}.notify: owner_notification needs at least one address"));
        }
        for address in form.notify.iter().filter(|a| !a.validate_email()) {
            out.push(format!("{at}.notify: `{address}` is not an email address"));
        }
        out
    }

    fn effect(&self, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        Ok(Arc::new(OwnerNotification { email: email(deps), event_to: Vec::new() }))
    }
}

/// The form kind's message: the kind's template, to the form's (or route's) addresses.
fn email(deps: &Deps<'_>) -> EmailEffect {
    EmailEffect {
        kind: EffectKind::OWNER_NOTIFICATION,
        render: |form, job, attached| {
            // Each file field as its files' lines: attached, linked, or no longer stored.
            let files = |field: &str, value: &str| {
                attached.lines.get(field).cloned().unwrap_or_else(|| FileRef::shown_all(value, "\n"))
            };
            template::owner_notification(&data(form, job, true, form.email_locale(), &files))
        },
        envelope: |form, job| Envelope {
            to: recipients(form, job).iter().filter_map(|a| a.parse().ok()).collect(),
            reply_to: visitor(form, job),
        },
        mailer: deps.mailer.clone(),
        config: deps.config.clone(),
        attach: Some(Attach { files: deps.files.clone(), max_bytes: deps.config.smtp.attach_max_bytes }),
    }
}

/// The `owner_notification` effect: a submission to the form's sales addresses (the form
/// kind), or an inbound event to the handler's `notify` (source, event ID, the first part of
/// the body), Message-ID from the record's key either way.
struct OwnerNotification {
    email: EmailEffect,
    /// A handler's addresses (the form kind's: none, it reads the form's).
    event_to: Vec<String>,
}

/// How much of an event's body goes into the message.
const EXCERPT: usize = 2000;

impl OwnerNotification {
    fn event_message(job: &Job, event: &InboundEvent) -> Rendered {
        let excerpt: String = event.body.as_deref().unwrap_or_default().chars().take(EXCERPT).collect();
        let (source, event_id) = (&event.source, &event.event_id);
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

impl Effect for OwnerNotification {
    fn can_reconcile(&self) -> bool {
        false
    }

    fn idempotent(&self) -> bool {
        self.email.idempotent()
    }

    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report> {
        let Some(event) = &job.event else { return self.email.deliver(job) };
        Box::pin(async move {
            let to = self.event_to.iter().filter_map(|a| a.parse().ok()).collect();
            let envelope = Envelope { to, reply_to: None };
            self.email.mailer.send(&job.effect_key, envelope, Self::event_message(job, event)).await
        })
    }

    fn reconcile<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Lookup> {
        self.email.reconcile(job)
    }
}

/// The `owner_notification` handler of inbound events: the same effect, to its `notify`.
pub struct OwnerNotificationHandler;

/// An `owner_notification` handler's own keys.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HandlerSettings {
    /// Who is told.
    #[serde(default)]
    notify: Vec<String>,
}

impl HandlerRules for OwnerNotificationHandler {
    fn name(&self) -> &'static str {
        "owner_notification"
    }

    fn check_settings(&self, own: &toml::Value) -> Result<(), String> {
        check_table::<HandlerSettings>(own)
    }

    fn problems(&self, at: &str, h: &HandlerConfig) -> Vec<String> {
        let Ok(s) = h.own::<HandlerSettings>() else { return Vec::new() };
        let mut out = Vec::new();
        if s.notify.is_empty() {
            out.push(format!("{at}.notify: an owner_notification handler needs addresses"));
        }
        for address in s.notify.iter().filter(|a| !a.validate_email()) {
            out.push(format!("{at}.notify: `{address}` is not an email address"));
        }
        out
    }
}

impl Handler for OwnerNotificationHandler {
    fn effect(&self, h: &HandlerConfig, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        let s: HandlerSettings = h.own().map_err(|e| anyhow::anyhow!(e))?;
        Ok(Arc::new(OwnerNotification { email: email(deps), event_to: s.notify }))
    }
}

/// Who gets the notification: the `notify` of the route the submission took, when the form
/// still has that route and it names addresses; else the form's `notify`. Read at delivery,
/// so a changed address list applies to what is still queued.
fn recipients<'f>(form: &'f FormConfig, job: &Job) -> &'f [String] {
    job.route
        .as_deref()
        .and_then(|label| form.route(label))
        .and_then(|r| r.notify.as_deref())
        .filter(|n| !n.is_empty())
        .unwrap_or(&form.notify)
}
