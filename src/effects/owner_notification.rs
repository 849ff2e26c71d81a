//! `owner_notification`: the inquiry to the form's sales addresses, Reply-To the visitor.

use std::sync::Arc;

use lettre::message::Mailbox;

use super::mail::{template, vars, visitor, Envelope, Mailer};
use super::{BoxFuture, Effect, Job, Lookup, Outcome, Report};
use crate::config::Config;
use crate::domain::EffectKind;

pub struct OwnerNotification {
    mailer: Arc<Mailer>,
    config: Arc<Config>,
}

impl OwnerNotification {
    pub fn new(mailer: Arc<Mailer>, config: Arc<Config>) -> Self {
        OwnerNotification { mailer, config }
    }
}

impl Effect for OwnerNotification {
    fn kind(&self) -> EffectKind {
        EffectKind::OwnerNotification
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
            let to: Vec<Mailbox> = form.notify.iter().filter_map(|a| a.parse().ok()).collect();
            let envelope = Envelope { to, reply_to: visitor(form, job) };
            let content = template::render("owner_notification", &job.form, &vars(form, job));
            self.mailer.send(&job.effect_key, envelope, content).await
        })
    }

    fn reconcile<'a>(&'a self, _job: &'a Job) -> BoxFuture<'a, Lookup> {
        Box::pin(async { Lookup::Failed { error_class: "no_lookup".into() } })
    }
}
