//! What both email kinds share: render the kind's template, send under the effect's key.
//! SMTP has no lookup, so an UNKNOWN email waits for an admin.

use std::sync::Arc;

use super::attach::{Attach, Attached};
use super::template::Rendered;
use super::{Envelope, Mailer};
use crate::config::{Config, FormConfig};
use crate::domain::EffectKind;
use crate::services::effects::{BoxFuture, Effect, Job, Lookup, Outcome, Report};

/// One email kind: how it is rendered, who gets it, and whether it carries the files.
pub struct EmailEffect {
    pub kind: EffectKind,
    /// Renders the message; `Attached` says what it carries of the submission's files.
    pub render: fn(&FormConfig, &Job, &Attached) -> Result<Rendered, askama::Error>,
    pub envelope: fn(&FormConfig, &Job) -> Envelope,
    pub mailer: Arc<Mailer>,
    pub config: Arc<Config>,
    /// `None`: the message never carries a file (the confirmation).
    pub attach: Option<Attach>,
}

impl Effect for EmailEffect {
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
            let attached = match &self.attach {
                Some(attach) => attach.gather(form, job, form.email_locale()).await,
                None => Attached::default(),
            };
            let content = match (self.render)(form, job, &attached) {
                Ok(c) => c,
                Err(_) => return Report::failed(Outcome::Permanent, "template"),
            };
            self.mailer.send_with(&job.effect_key, (self.envelope)(form, job), content, attached.files).await
        })
    }

    fn reconcile<'a>(&'a self, _job: &'a Job) -> BoxFuture<'a, Lookup> {
        Box::pin(async { Lookup::Failed { error_class: "no_lookup".into() } })
    }
}
