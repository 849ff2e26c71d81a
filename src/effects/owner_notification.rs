//! `owner_notification`: the inquiry to the form's sales addresses, Reply-To the visitor.

use std::sync::Arc;

use super::mail::{data, template, visitor, EmailEffect, Envelope, Mailer};
use crate::config::Config;
use crate::domain::EffectKind;

pub fn new(mailer: Arc<Mailer>, config: Arc<Config>) -> EmailEffect {
    EmailEffect {
        kind: EffectKind::OwnerNotification,
        render: |form, job| template::owner_notification(&data(form, job, true)),
        envelope: |form, job| Envelope {
            to: form.notify.iter().filter_map(|a| a.parse().ok()).collect(),
            reply_to: visitor(form, job),
        },
        mailer,
        config,
    }
}
