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
use crate::domain::EffectKind;
pub use outcome::{Lookup, Outcome, Report};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One claimed side-effect record and the submission it belongs to.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: String,
    pub kind: EffectKind,
    /// The effect's own key: sent as Idempotency-Key / external reference / Message-ID.
    pub effect_key: String,
    /// This attempt's number (1 for the first).
    pub attempt: i32,
    pub submission_id: String,
    pub form: String,
    pub fields: BTreeMap<String, String>,
    pub received_at: NaiveDateTime,
    pub journey_id: Option<String>,
}

impl Job {
    /// `None` for a row of an unknown kind (written by a newer version).
    pub fn from_row(row: JobRow) -> Option<Job> {
        let fields =
            row.fields_json.as_deref().and_then(|j| serde_json::from_str(j).ok()).unwrap_or_default();
        Some(Job {
            kind: EffectKind::parse(&row.kind)?,
            id: row.id,
            effect_key: row.effect_key,
            attempt: row.attempts,
            submission_id: row.submission_id,
            form: row.form,
            fields,
            received_at: row.received_at,
            journey_id: row.journey_id,
        })
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
pub trait Effect: Send + Sync {
    fn kind(&self) -> EffectKind;
    /// An UNKNOWN outcome can be looked up (else it waits for an admin).
    fn can_reconcile(&self) -> bool;
    /// Sending again has no further effect (an upsert): ambiguous failures are simply retried.
    fn idempotent(&self) -> bool;
    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report>;
    fn reconcile<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Lookup>;
}

/// The effect kinds this process can deliver.
#[derive(Default, Clone)]
pub struct Registry {
    effects: BTreeMap<EffectKind, Arc<dyn Effect>>,
}

impl Registry {
    pub fn from_config(config: Arc<Config>) -> anyhow::Result<Registry> {
        let timeout = Duration::from_millis(config.worker.call_timeout_ms);
        let crm = crm::adapter(&config.crm, timeout)?;
        let mailer = Arc::new(mail::Mailer::new(&config.smtp, timeout)?);
        let mut registry = Registry::default();
        registry.register(crm_lead::CrmLead::new(crm, config.clone()));
        registry.register(confirmation_email::new(mailer.clone(), config.clone()));
        registry.register(owner_notification::new(mailer, config));
        Ok(registry)
    }

    pub fn register(&mut self, effect: impl Effect + 'static) {
        self.effects.insert(effect.kind(), Arc::new(effect));
    }

    pub fn get(&self, kind: EffectKind) -> Option<Arc<dyn Effect>> {
        self.effects.get(&kind).cloned()
    }

    /// The kinds whose UNKNOWN outcomes can be looked up.
    pub fn reconcilable(&self) -> Vec<&'static str> {
        self.effects.values().filter(|e| e.can_reconcile()).map(|e| e.kind().as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn references_are_short_and_upper_case() {
        assert_eq!(super::reference("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"), "OF-1D2E3-F4A5B");
    }
}
