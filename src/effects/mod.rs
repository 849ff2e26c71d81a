//! Side effects as types: one `Effect` trait, one file per kind, one registration line each.

mod confirmation_email;
pub mod crm;
mod crm_lead;
pub mod mail;
mod outcome;
mod owner_notification;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use chrono::NaiveDateTime;

use crate::config::Config;
use crate::db::models::JobRow;
use crate::domain::{EffectId, EffectKind, SubmissionId};
pub use outcome::{Lookup, Outcome, Report};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One claimed side-effect record and the submission it belongs to.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: EffectId,
    /// The record's kind as stored: an `EffectKind`, or `hook:SOURCE:HANDLER`.
    pub kind: String,
    /// The effect's own key: sent as Idempotency-Key / external reference / Message-ID.
    pub effect_key: String,
    /// This attempt's number (1 for the first).
    pub attempt: i32,
    pub submission_id: SubmissionId,
    pub form: String,
    pub fields: BTreeMap<String, String>,
    pub received_at: NaiveDateTime,
    pub journey_id: Option<String>,
}

impl Job {
    pub fn from_row(row: JobRow) -> Job {
        let fields =
            row.fields_json.as_deref().and_then(|j| serde_json::from_str(j).ok()).unwrap_or_default();
        Job {
            kind: row.kind,
            id: row.id,
            effect_key: row.effect_key,
            attempt: row.attempts,
            submission_id: row.submission_id,
            form: row.form,
            fields,
            received_at: row.received_at,
            journey_id: row.journey_id,
        }
    }

    /// The reference people see (receipt page, emails): the random tail of the submission ID.
    pub fn reference(&self) -> String {
        reference(&self.submission_id)
    }
}

/// A short reference for people: the random tail of a submission ID.
pub fn reference(submission_id: &str) -> String {
    let hex: String = submission_id.chars().filter(char::is_ascii_hexdigit).collect();
    let tail = &hex[hex.len().saturating_sub(10)..];
    format!("OF-{}-{}", &tail[..tail.len() / 2], &tail[tail.len() / 2..]).to_uppercase()
}

/// A kind of side effect and how to deliver and reconcile it.
/// Registered under the record kind it delivers (see `Registry`).
pub trait Effect: Send + Sync {
    /// An UNKNOWN outcome can be looked up (else it waits for an admin).
    fn can_reconcile(&self) -> bool;
    /// Sending again has no further effect (an upsert): ambiguous failures are simply retried.
    fn idempotent(&self) -> bool;
    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report>;
    fn reconcile<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Lookup>;
}

/// The record kinds this process can deliver: the form effect kinds and each inbound
/// webhook handler (`hook:SOURCE:HANDLER`).
#[derive(Default, Clone)]
pub struct Registry {
    effects: BTreeMap<String, Arc<dyn Effect>>,
}

impl Registry {
    pub fn from_config(config: Arc<Config>) -> anyhow::Result<Registry> {
        let timeout = Duration::from_millis(config.worker.call_timeout_ms);
        let crm = crm::adapter(&config.crm, timeout)?;
        let mailer = Arc::new(mail::Mailer::new(&config.smtp, timeout)?);
        mail::template::warn_stale_overrides(config.forms.keys());
        let mut registry = Registry::default();
        crate::hooks::handlers::register(&mut registry, &config, &crm, &mailer, timeout)?;
        registry.register(EffectKind::CrmLead, crm_lead::CrmLead::new(crm, config.clone()));
        registry
            .register(EffectKind::ConfirmationEmail, confirmation_email::new(mailer.clone(), config.clone()));
        registry.register(EffectKind::OwnerNotification, owner_notification::new(mailer, config));
        Ok(registry)
    }

    pub fn register(&mut self, kind: EffectKind, effect: impl Effect + 'static) {
        self.register_as(kind.as_str().to_string(), Arc::new(effect));
    }

    /// Registers `effect` for records of kind `kind` (inbound webhook handlers).
    pub fn register_as(&mut self, kind: String, effect: Arc<dyn Effect>) {
        self.effects.insert(kind, effect);
    }

    pub fn get(&self, kind: &str) -> Option<Arc<dyn Effect>> {
        self.effects.get(kind).cloned()
    }

    /// The kinds whose UNKNOWN outcomes can be looked up.
    pub fn reconcilable(&self) -> Vec<String> {
        self.effects.iter().filter(|(_, e)| e.can_reconcile()).map(|(k, _)| k.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn references_are_short_and_upper_case() {
        assert_eq!(super::reference("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"), "OF-1D2E3-F4A5B");
    }
}
