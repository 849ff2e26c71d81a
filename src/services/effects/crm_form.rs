//! `pipedrive`, `zoho`: a CRM as a form's own effect kind (`effects = ["zoho"]`, its settings
//! in `[forms.F.zoho]`, see `crm::form_table`). Each form's records go to the adapter built
//! from its own table and are delivered by the same `CrmLead` as `crm_lead` (the same
//! mapping `crm_fields`, retries, UNKNOWN and reconciliation by lookup).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::crm::{self, form_problems, FormCrm};
use super::crm_lead::CrmLead;
use super::{BoxFuture, Deps, Effect, Job, Kind, Lookup, Outcome, Report, Settings};
use crate::config::FormConfig;
use crate::domain::EffectKind;

/// A CRM adapter registered as a form effect kind of the same name.
pub struct CrmFormKind {
    adapter: &'static str,
}

pub static PIPEDRIVE: CrmFormKind = CrmFormKind { adapter: "pipedrive" };
pub static ZOHO: CrmFormKind = CrmFormKind { adapter: "zoho" };

impl Kind for CrmFormKind {
    fn name(&self) -> EffectKind {
        EffectKind::named(self.adapter)
    }

    fn settings(&self, table: toml::Value) -> Option<Result<Settings, String>> {
        Some(crm::form_table(self.adapter, table).map(|c| Arc::new(c) as Settings))
    }

    fn check(&self, at: &str, form: &FormConfig) -> Vec<String> {
        let (kind, name) = (self.name(), self.adapter);
        let listed = form.lists(kind);
        match form.settings.get::<FormCrm>(kind) {
            None if listed => vec![format!("{at}.{name}: the {name} effect needs its table [{at}.{name}]")],
            None => Vec::new(),
            Some(FormCrm(crm)) => {
                let mut out = form_problems(&format!("{at}.{name}"), crm);
                if !listed {
                    out.insert(0, format!("{at}.{name}: set, but `{name}` is not in {at}.effects"));
                }
                out
            }
        }
    }

    fn effect(&self, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        let kind = self.name();
        let mut forms = BTreeMap::new();
        for (name, form) in &deps.config.forms {
            let Some(FormCrm(crm)) = form.settings.get::<FormCrm>(kind).filter(|_| form.lists(kind)) else {
                continue;
            };
            let at = format!("forms.{name}.{}", self.adapter);
            let adapter = crm::adapter(crm, deps.timeout).map_err(|e| anyhow::anyhow!("{at}: {e}"))?;
            let lead = CrmLead::new(adapter, deps.config.clone()).with_files(deps.files.clone());
            forms.insert(name.clone(), lead);
        }
        Ok(Arc::new(ByForm { kind, forms }))
    }
}

/// Each form's `CrmLead`, by form name.
struct ByForm {
    kind: EffectKind,
    forms: BTreeMap<String, CrmLead>,
}

impl Effect for ByForm {
    fn can_reconcile(&self) -> bool {
        self.forms.values().any(|l| l.can_reconcile())
    }

    fn idempotent(&self) -> bool {
        self.forms.values().all(|l| l.idempotent())
    }

    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report> {
        match self.forms.get(&job.form) {
            Some(lead) => lead.deliver(job),
            None => {
                let class = format!("{}_not_configured", self.kind.as_str());
                Box::pin(async move { Report::failed(Outcome::Permanent, class) })
            }
        }
    }

    fn reconcile<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Lookup> {
        match self.forms.get(&job.form) {
            Some(lead) => lead.reconcile(job),
            None => Box::pin(async { Lookup::Failed { error_class: "not_configured".into() } }),
        }
    }
}
