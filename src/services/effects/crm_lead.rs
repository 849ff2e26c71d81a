//! `crm_lead`: the submission as a lead in the CRM, with the effect's key as external reference.
//!
//! The form's `crm_fields` maps its fields to the CRM's; `journey_id` in that mapping names
//! the CRM field for the visitor's journey ID, and `received_at` the one for the time the
//! submission was received (RFC 3339, UTC: for a `consent` field, the time of consent);
//! neither is otherwise sent (a vendor refuses a field its object does not have). Without a
//! mapping every field goes under its own name, with the journey as `journey_id` and, on a
//! form with a consent field, the time as `received_at`. `crm_defaults` fills a CRM field
//! the mapping leaves blank or unmapped.
//!
//! The `crm_lead` handler of inbound events is the same effect (`CrmLeadHandler`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;

use super::crm::{file_key, CrmAdapter, Lead, LeadFile};
use super::handler::Handler;
use super::settings::check_table;
use super::{BoxFuture, Deps, Effect, InboundEvent, Job, Kind, Lookup, Outcome, Report};
use crate::base::format::{reference, rfc3339};
use crate::config::hooks::{HandlerConfig, HandlerRules};
use crate::config::{Config, FormConfig, OnDuplicate};
use crate::domain::{EffectKind, FieldType, FileRef, SEVERAL};
use crate::services::files::Files;

pub struct CrmLeadKind;

impl Kind for CrmLeadKind {
    fn name(&self) -> EffectKind {
        EffectKind::CRM_LEAD
    }

    fn check(&self, at: &str, form: &FormConfig) -> Vec<String> {
        let unknown = form
            .crm_fields
            .keys()
            .filter(|f| ![JOURNEY, RECEIVED].contains(&f.as_str()) && form.field(f).is_none());
        unknown.map(|field| format!("{at}.crm_fields: `{field}` is not a field of this form")).collect()
    }

    fn effect(&self, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        Ok(Arc::new(CrmLead::new(deps.crm.clone(), deps.config.clone()).with_files(deps.files.clone())))
    }
}

/// The `crm_lead` handler of inbound events: the same `CrmLead` effect, with the lead's
/// fields picked from the event by JSON pointers (`crm_fields`: CRM field → pointer; none:
/// the event's top-level scalars), the handler key as external reference.
pub struct CrmLeadHandler;

/// A `crm_lead` handler's own keys.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HandlerSettings {
    #[serde(default)]
    crm_fields: BTreeMap<String, String>,
}

impl HandlerRules for CrmLeadHandler {
    fn name(&self) -> &'static str {
        "crm_lead"
    }

    fn check_settings(&self, own: &toml::Value) -> Result<(), String> {
        check_table::<HandlerSettings>(own)
    }

    fn problems(&self, at: &str, h: &HandlerConfig) -> Vec<String> {
        let Ok(s) = h.own::<HandlerSettings>() else { return Vec::new() };
        let bad = s.crm_fields.into_iter().filter(|(_, ptr)| !ptr.is_empty() && !ptr.starts_with('/'));
        bad.map(|(field, _)| format!("{at}.crm_fields.{field}: a JSON pointer starts with /")).collect()
    }
}

impl Handler for CrmLeadHandler {
    fn effect(&self, h: &HandlerConfig, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        let s: HandlerSettings = h.own().map_err(|e| anyhow::anyhow!(e))?;
        let mut lead = CrmLead::new(deps.crm.clone(), deps.config.clone());
        lead.picks = s.crm_fields;
        Ok(Arc::new(lead))
    }
}

/// The key of `crm_fields` that names the CRM field for the journey ID.
const JOURNEY: &str = "journey_id";
/// The key of `crm_fields` that names the CRM field for the time received.
const RECEIVED: &str = "received_at";

pub struct CrmLead {
    crm: Arc<dyn CrmAdapter>,
    config: Arc<Config>,
    /// Where the submission's files are read from; `None`: the lead goes without them.
    files: Option<Files>,
    /// An event's lead: CRM field → JSON pointer into the event (the handler's `crm_fields`).
    picks: BTreeMap<String, String>,
}

impl CrmLead {
    pub fn new(crm: Arc<dyn CrmAdapter>, config: Arc<Config>) -> Self {
        CrmLead { crm, config, files: None, picks: BTreeMap::new() }
    }

    /// Sends the submission's files (read from `files`) with the lead.
    pub fn with_files(mut self, files: Files) -> Self {
        self.files = Some(files);
        self
    }

    /// The submission's files of the form's file fields, each with its step key; a file
    /// no longer stored (purged) is left out.
    async fn files(&self, job: &Job) -> Vec<LeadFile> {
        let (Some(store), Some(form)) = (&self.files, self.config.form(&job.form)) else { return Vec::new() };
        let mut refs: Vec<FileRef> =
            form.files(|name| job.fields.get(name).map(String::as_str)).into_iter().map(|(_, r)| r).collect();
        refs.sort_by(|a, b| a.sha256.cmp(&b.sha256));
        refs.dedup_by(|a, b| a.sha256 == b.sha256);
        if refs.is_empty() {
            return Vec::new();
        }
        let (store, key, owner) = (store.clone(), job.effect_key.clone(), job.submission_id.to_string());
        tokio::task::spawn_blocking(move || {
            refs.into_iter()
                .filter_map(|file| {
                    let bytes = store.store().read(&file.sha256).ok()?;
                    let url = store.link(&owner, &file.sha256);
                    Some(LeadFile { key: file_key(&key, &file.sha256), file, bytes: Arc::new(bytes), url })
                })
                .collect()
        })
        .await
        .unwrap_or_default()
    }

    /// The form's fields under their CRM names (see the module's notes).
    fn lead(&self, job: &Job) -> Lead {
        let form = self.config.form(&job.form);
        let mapping = form.map(|f| &f.crm_fields).filter(|m| !m.is_empty());
        // The journey ties the lead to the visitor's other inquiries in the CRM.
        // Several chosen options go as CRMs take a multi-select: `a;b` (HubSpot, Salesforce).
        // A file field shows its files (name, type, size), never the stored reference.
        let several = |field: &str, v: &String| match form.and_then(|f| f.field(field)) {
            Some(f) if f.kind == FieldType::File => FileRef::shown_all(v, "; "),
            Some(f) if f.takes_several() => v.replace(SEVERAL, ";"),
            _ => v.clone(),
        };
        let value = |field: &str| match (field, &job.journey_id) {
            (JOURNEY, Some(journey)) => Some(journey.clone()),
            (RECEIVED, _) => Some(rfc3339(job.received_at)),
            _ => job.fields.get(field).map(|v| several(field, v)),
        };
        let mut fields: BTreeMap<String, String> = match mapping {
            Some(m) => m.iter().filter_map(|(from, to)| Some((to.clone(), value(from)?))).collect(),
            None => {
                let mut all: BTreeMap<String, String> =
                    job.fields.iter().map(|(k, v)| (k.clone(), several(k, v))).collect();
                all.extend(job.journey_id.clone().map(|j| (JOURNEY.to_string(), j)));
                if form.is_some_and(|f| f.fields.iter().any(|f| f.kind == FieldType::Consent)) {
                    all.entry(RECEIVED.to_string()).or_insert_with(|| rfc3339(job.received_at));
                }
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

impl CrmLead {
    /// An inbound event's lead: the fields `picks` names; with none, the event's top-level
    /// scalars. `None`: the body is not a JSON object (or was purged).
    fn event_lead(&self, job: &Job, event: &InboundEvent) -> Option<Lead> {
        let event: serde_json::Value = serde_json::from_str(event.body.as_deref()?).ok()?;
        let fields: BTreeMap<String, String> = if self.picks.is_empty() {
            event.as_object()?.iter().filter_map(|(k, v)| scalar(v).map(|v| (k.clone(), v))).collect()
        } else {
            self.picks
                .iter()
                .filter_map(|(name, ptr)| scalar(event.pointer(ptr)?).map(|v| (name.clone(), v)))
                .collect()
        };
        Some(Lead { external_ref: job.effect_key.clone(), fields })
    }

    /// A lead of a submission decided a duplicate, on a form with `on_duplicate = "note"`, is
    /// never created after the decision (a retry, or an UNKNOWN found absent): the decision
    /// cancelled it while it waited, and a lead the CRM has gets a note instead (`crm_note`).
    fn decided_duplicate(&self, job: &Job) -> Option<Report> {
        let original = job.duplicate_of.as_deref()?;
        let form = self.config.form(&job.form)?;
        (form.crm.on_duplicate == OnDuplicate::Note).then(|| {
            Report::failed(Outcome::Permanent, "decided_duplicate").with_detail(Some(format!(
                "decided a duplicate of {}: its lead is not created (on_duplicate = \"note\")",
                reference(original)
            )))
        })
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
        Box::pin(async move {
            if let Some(event) = &job.event {
                return match self.event_lead(job, event) {
                    Some(lead) => self.crm.create(&lead).await,
                    None => Report::failed(Outcome::Permanent, "event_not_json"),
                };
            }
            if let Some(refused) = self.decided_duplicate(job) {
                return refused;
            }
            let files = self.files(job).await;
            self.crm.create_with_files(&self.lead(job), &files).await
        })
    }

    fn reconcile<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            if job.event.is_some() {
                return self.crm.lookup(&job.effect_key).await;
            }
            let files = self.files(job).await;
            self.crm.lookup_with_files(&self.lead(job), &files).await
        })
    }
}

/// A JSON scalar as text; `None`: an object, an array or null.
fn scalar(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}
