//! `confirmation_email`: tells the visitor their message arrived, with its reference and
//! nothing they typed (not even their name) unless the form sets `confirmation_echo`.

use std::sync::Arc;

use super::mail::{attach, data, template, visitor, EmailEffect, Envelope};
use super::{Deps, Effect, Kind};
use crate::config::FormConfig;
use crate::domain::EffectKind;
use crate::domain::FieldType;

pub struct ConfirmationEmailKind;

impl Kind for ConfirmationEmailKind {
    fn name(&self) -> EffectKind {
        EffectKind::CONFIRMATION_EMAIL
    }

    fn check(&self, at: &str, form: &FormConfig) -> Vec<String> {
        match form.effects.contains(&self.name()) && !form.has_email_field() {
            true => vec![format!("{at}.effects: confirmation_email needs a field of type email")],
            false => Vec::new(),
        }
    }

    /// Only a submission with an address gets a confirmation.
    fn applies(&self, form: &FormConfig, filled: &dyn Fn(&str) -> bool) -> bool {
        form.fields.iter().any(|f| f.kind == FieldType::Email && filled(&f.name))
    }

    fn effect(&self, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        Ok(Arc::new(EmailEffect {
            kind: self.name(),
            render: |form, job, _| {
                // In the visitor's language: the one they were served on an `auto` form.
                let locale = job.locale.unwrap_or_else(|| form.email_locale());
                // It never carries a file; an echo names the files, nothing more.
                let names = |_: &str, value: &str| attach::names(value);
                template::confirmation(&data(form, job, form.confirmation_echo, locale, &names))
            },
            envelope: |form, job| Envelope { to: visitor(form, job).into_iter().collect(), reply_to: None },
            mailer: deps.mailer.clone(),
            config: deps.config.clone(),
            attach: None,
        }))
    }
}
