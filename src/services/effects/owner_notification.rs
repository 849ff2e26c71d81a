//! `owner_notification`: the inquiry to the form's sales addresses (or its route's),
//! Reply-To the visitor.

use std::sync::Arc;

use validator::ValidateEmail;

use super::mail::{data, template, visitor, Attach, EmailEffect, Envelope};
use super::{Deps, Effect, Job, Kind};
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
        Ok(Arc::new(EmailEffect {
            kind: self.name(),
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
        }))
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
