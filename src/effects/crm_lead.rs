//! `crm_lead`: the submission as a lead in the CRM, with the effect's key as external reference.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::crm::{CrmAdapter, Lead};
use super::{BoxFuture, Deps, Effect, Job, Kind, Lookup, Report};
use crate::config::{Config, FormConfig};
use crate::domain::EffectKind;

pub struct CrmLeadKind;

impl Kind for CrmLeadKind {
    fn name(&self) -> EffectKind {
        EffectKind::CRM_LEAD
    }

    fn check(&self, at: &str, form: &FormConfig) -> Vec<String> {
        let unknown = form.crm_fields.keys().filter(|field| form.field(field).is_none());
        unknown.map(|field| format!("{at}.crm_fields: `{field}` is not a field of this form")).collect()
    }

    fn effect(&self, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        Ok(Arc::new(CrmLead::new(deps.crm.clone(), deps.config.clone())))
    }
}

pub struct CrmLead {
    crm: Arc<dyn CrmAdapter>,
    config: Arc<Config>,
}

impl CrmLead {
    pub fn new(crm: Arc<dyn CrmAdapter>, config: Arc<Config>) -> Self {
        CrmLead { crm, config }
    }

    /// The form's fields under their CRM names (all fields when no mapping is configured).
    fn lead(&self, job: &Job) -> Lead {
        let mapping = self.config.form(&job.form).map(|f| &f.crm_fields).filter(|m| !m.is_empty());
        let mut fields: BTreeMap<String, String> = match mapping {
            Some(m) => {
                job.fields.iter().filter_map(|(k, v)| m.get(k).map(|to| (to.clone(), v.clone()))).collect()
            }
            None => job.fields.clone(),
        };
        // The journey ties the lead to the visitor's other inquiries in the CRM.
        if let Some(journey) = &job.journey_id {
            fields.insert("journey_id".into(), journey.clone());
        }
        Lead { external_ref: job.effect_key.clone(), fields }
    }
}

impl Effect for CrmLead {
    fn can_reconcile(&self) -> bool {
        self.crm.capabilities().lookup
    }

    fn idempotent(&self) -> bool {
        self.crm.capabilities().idempotent_upsert
    }

    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report> {
        Box::pin(async move { self.crm.create(&self.lead(job)).await })
    }

    fn reconcile<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Lookup> {
        self.crm.lookup(&job.effect_key)
    }
}
