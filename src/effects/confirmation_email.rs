//! `confirmation_email`: tells the visitor their message arrived, with its reference.

use std::sync::Arc;

use super::mail::{visitor, EmailEffect, Envelope, Mailer};
use crate::config::Config;
use crate::domain::EffectKind;

pub fn new(mailer: Arc<Mailer>, config: Arc<Config>) -> EmailEffect {
    EmailEffect {
        kind: EffectKind::ConfirmationEmail,
        template: "confirmation",
        envelope: |form, job| Envelope { to: visitor(form, job).into_iter().collect(), reply_to: None },
        mailer,
        config,
    }
}
