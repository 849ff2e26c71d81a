//! `confirmation_email`: tells the visitor their message arrived, with its reference.

use std::sync::Arc;

use super::mail::{template, vars, visitor, Envelope, Mailer};
use super::{BoxFuture, Effect, Job, Lookup, Outcome, Report};
use crate::config::Config;
use crate::domain::EffectKind;

pub struct ConfirmationEmail {
    mailer: Arc<Mailer>,
    config: Arc<Config>,
}

impl ConfirmationEmail {
    pub fn new(mailer: Arc<Mailer>, config: Arc<Config>) -> Self {
        ConfirmationEmail { mailer, config }
    }
}

impl Effect for ConfirmationEmail {
    fn kind(&self) -> EffectKind {
        EffectKind::ConfirmationEmail
    }

    fn can_reconcile(&self) -> bool {
        false
    }

    fn idempotent(&self) -> bool {
        self.mailer.idempotent()
    }

    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let Some(form) = self.config.form(&job.form) else {
                return Report::failed(Outcome::Permanent, "form_removed");
            };
            let Some(to) = visitor(form, job) else {
                return Report::failed(Outcome::Permanent, "no_recipient");
            };
            let content = template::render("confirmation", &job.form, &vars(form, job));
            self.mailer.send(&job.effect_key, Envelope { to: vec![to], reply_to: None }, content).await
        })
    }

    fn reconcile<'a>(&'a self, _job: &'a Job) -> BoxFuture<'a, Lookup> {
        Box::pin(async { Lookup::Failed { error_class: "no_lookup".into() } })
    }
}
