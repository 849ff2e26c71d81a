//! `crm_lead`: the submission as a lead in the CRM, with the effect's key as external reference.
//!
//! The form's `crm_fields` maps its fields to the CRM's; `journey_id` in that mapping names
//! the CRM field for the visitor's journey ID, which is otherwise not sent (a vendor refuses
//! a field its object does not have). Without a mapping every field goes under its own
//! name, with the journey as `journey_id`. `crm_defaults` fills a CRM field the mapping
//! leaves blank or unmapped.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::crm::{CrmAdapter, Lead};
use super::{BoxFuture, Deps, Effect, Job, Kind, Lookup, Report};
use crate::config::{Config, FormConfig};
use crate::domain::{EffectKind, SEVERAL};

pub struct CrmLeadKind;

impl Kind for CrmLeadKind {
    fn name(&self) -> EffectKind {
        EffectKind::CRM_LEAD
    }

    fn check(&self, at: &str, form: &FormConfig) -> Vec<String> {
        let unknown = form.crm_fields.keys().filter(|field| *field != JOURNEY && form.field(field).is_none());
        unknown.map(|field| format!("{at}.crm_fields: `{field}` is not a field of this form")).collect()
    }

    fn effect(&self, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        Ok(Arc::new(CrmLead::new(deps.crm.clone(), deps.config.clone())))
    }
}

/// The key of `crm_fields` that names the CRM field for the journey ID.
const JOURNEY: &str = "journey_id";

pub struct CrmLead {
    crm: Arc<dyn CrmAdapter>,
    config: Arc<Config>,
}

impl CrmLead {
    pub fn new(crm: Arc<dyn CrmAdapter>, config: Arc<Config>) -> Self {
        CrmLead { crm, config }
    }

    /// The form's fields under their CRM names (see the module's notes).
    fn lead(&self, job: &Job) -> Lead {
        let form = self.config.form(&job.form);
        let mapping = form.map(|f| &f.crm_fields).filter(|m| !m.is_empty());
        // The journey ties the lead to the visitor's other inquiries in the CRM.
        // Several chosen options go as CRMs take a multi-select: `a;b` (HubSpot, Salesforce).
        let several = |field: &str, v: &String| match form.and_then(|f| f.field(field)) {
            Some(f) if f.takes_several() => v.replace(SEVERAL, ";"),
            _ => v.clone(),
        };
        let value = |field: &str| match (field, &job.journey_id) {
            (JOURNEY, Some(journey)) => Some(journey.clone()),
            _ => job.fields.get(field).map(|v| several(field, v)),
        };
        let mut fields: BTreeMap<String, String> = match mapping {
            Some(m) => m.iter().filter_map(|(from, to)| Some((to.clone(), value(from)?))).collect(),
            None => {
                let mut all: BTreeMap<String, String> =
                    job.fields.iter().map(|(k, v)| (k.clone(), several(k, v))).collect();
                all.extend(job.journey_id.clone().map(|j| (JOURNEY.to_string(), j)));
                all
            }
        };
        for (to, default) in form.map(|f| &f.crm_defaults).into_iter().flatten() {
            let blank = fields.get(to).is_none_or(|v| v.trim().is_empty());
            if blank {
                fields.insert(to.clone(), default.clone());
            }
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
