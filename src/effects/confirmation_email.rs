//! `confirmation_email`: tells the visitor their message arrived, with its reference and
//! their name, and nothing else they typed unless the form sets `confirmation_echo`.

use std::sync::Arc;

use super::mail::{data, template, visitor, EmailEffect, Envelope, Mailer};
use crate::config::Config;
use crate::domain::EffectKind;

pub fn new(mailer: Arc<Mailer>, config: Arc<Config>) -> EmailEffect {
    EmailEffect {
        kind: EffectKind::ConfirmationEmail,
        render: |form, job| template::confirmation(&data(form, job, form.confirmation_echo)),
        envelope: |form, job| Envelope { to: visitor(form, job).into_iter().collect(), reply_to: None },
        mailer,
        config,
    }
}
