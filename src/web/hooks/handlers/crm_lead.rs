//! `crm_lead`: a lead in the configured CRM with fields picked from the event by JSON
//! pointers (`crm_fields`), the handler key as external reference.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Deps, Handler};
use crate::services::effects::crm::{CrmAdapter, Lead};
use crate::services::effects::{BoxFuture, Effect, Job, Lookup, Outcome, Report};
use crate::web::hooks::config::{HandlerConfig, HandlerRules};

pub struct HookLeadKind;

impl HandlerRules for HookLeadKind {
    fn name(&self) -> &'static str {
        "crm_lead"
    }

    fn problems(&self, at: &str, h: &HandlerConfig) -> Vec<String> {
        let bad = h.crm_fields.iter().filter(|(_, ptr)| !ptr.is_empty() && !ptr.starts_with('/'));
        bad.map(|(field, _)| format!("{at}.crm_fields.{field}: a JSON pointer starts with /")).collect()
    }
}

impl Handler for HookLeadKind {
    fn effect(&self, h: &HandlerConfig, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        Ok(Arc::new(HookLead::new(h, deps)))
    }
}

pub struct HookLead {
    crm: Arc<dyn CrmAdapter>,
    /// CRM field → JSON pointer.
    fields: BTreeMap<String, String>,
}

impl HookLead {
    pub fn new(h: &HandlerConfig, deps: &Deps<'_>) -> HookLead {
        HookLead { crm: deps.crm.clone(), fields: h.crm_fields.clone() }
    }

    /// The picked fields; with no `crm_fields`, the event's top-level scalars.
    fn lead(&self, job: &Job) -> Option<Lead> {
        let event: serde_json::Value = serde_json::from_str(job.fields.get("body")?).ok()?;
        let fields: BTreeMap<String, String> = if self.fields.is_empty() {
            event.as_object()?.iter().filter_map(|(k, v)| scalar(v).map(|v| (k.clone(), v))).collect()
        } else {
            self.fields
                .iter()
                .filter_map(|(name, ptr)| scalar(event.pointer(ptr)?).map(|v| (name.clone(), v)))
                .collect()
        };
        Some(Lead { external_ref: job.effect_key.clone(), fields })
    }
}

fn scalar(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl Effect for HookLead {
    fn can_reconcile(&self) -> bool {
        self.crm.capabilities().lookup
    }

    fn idempotent(&self) -> bool {
        self.crm.capabilities().idempotent_upsert
    }

    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            match self.lead(job) {
                Some(lead) => self.crm.create(&lead).await,
                None => Report::failed(Outcome::Permanent, "event_not_json"),
            }
        })
    }

    fn reconcile<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Lookup> {
        self.crm.lookup(&job.effect_key)
    }
}
