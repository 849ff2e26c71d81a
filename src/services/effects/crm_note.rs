//! `crm_note`: a note in the CRM on a decided duplicate's lead, naming its original's lead
//! (`[forms.F.crm] on_duplicate = "note"`). The "duplicate of" decision adds the record
//! (`services::duplicates::decide`); no form lists it in `effects`.
//!
//! Its key names the pair (`domain::duplicate_note_key`) and is kept with the note at the
//! vendor, so an unknown outcome is looked up by it (`CrmAdapter::find_note`) before any
//! resend. The note goes on the lead sent under the duplicate's first `crm_lead` record
//! (`domain::first_lead_ref`) and names the original's first lead; while the CRM does not
//! have the duplicate's lead yet (its attempt may still be under way) it is tried again
//! later. It is not sent once the decision is undone (the duplicate no longer names that
//! original), nor by an adapter without notes: both end FAILED_FINAL, saying why.

use std::sync::Arc;

use super::chat::admin_base;
use super::crm::{CrmAdapter, LeadNote};
use super::{BoxFuture, Deps, Effect, Job, Kind, Lookup, Outcome, Report};
use crate::base::format::reference;
use crate::config::{Config, FormConfig, OnDuplicate};
use crate::domain::{first_lead_ref, original_of_note_key, EffectKind};

pub struct CrmNoteKind;

impl Kind for CrmNoteKind {
    fn name(&self) -> EffectKind {
        EffectKind::CRM_NOTE
    }

    fn check(&self, at: &str, form: &FormConfig) -> Vec<String> {
        let mut out = Vec::new();
        if form.lists(&EffectKind::CRM_NOTE) {
            out.push(format!(
                "{at}.effects: `crm_note` is not listed; set [{at}.crm] on_duplicate = \"note\" instead"
            ));
        }
        if form.crm.on_duplicate == OnDuplicate::Note && !form.lists(&EffectKind::CRM_LEAD) {
            out.push(format!("{at}.crm.on_duplicate: \"note\" needs `crm_lead` in {at}.effects"));
        }
        out
    }

    /// Only a duplicate decision makes one.
    fn applies(&self, _form: &FormConfig, _filled: &dyn Fn(&str) -> bool) -> bool {
        false
    }

    fn effect(&self, deps: &Deps<'_>) -> anyhow::Result<Arc<dyn Effect>> {
        Ok(Arc::new(CrmNote { crm: deps.crm.clone(), config: deps.config.clone() }))
    }
}

pub struct CrmNote {
    crm: Arc<dyn CrmAdapter>,
    config: Arc<Config>,
}

impl CrmNote {
    /// The note of `job` (`None`: its key names no original, so it was never sent).
    fn note(&self, job: &Job) -> Option<LeadNote> {
        let original = original_of_note_key(&job.effect_key)?;
        let duplicate = job.submission_id.as_str();
        let mut text = format!(
            "Duplicate of onceform submission {} (lead {}); this lead is submission {}, decided a duplicate in onceform.",
            reference(original),
            first_lead_ref(original),
            reference(duplicate),
        );
        if let Some(base) = admin_base(&self.config) {
            text.push_str(&format!(" {base}{duplicate}"));
        }
        Some(LeadNote {
            key: job.effect_key.clone(),
            on: first_lead_ref(duplicate),
            about: first_lead_ref(original),
            text,
        })
    }
}

/// Why `job`'s note is not to be sent: its key names no original, or the decision naming
/// that original was undone.
fn refusal(job: &Job) -> Option<Report> {
    let refused =
        |class: &str, why: &str| Report::failed(Outcome::Permanent, class).with_detail(Some(why.into()));
    match original_of_note_key(&job.effect_key) {
        None => Some(refused("note_key", "the record's key names no original")),
        Some(original) if job.duplicate_of.as_deref() != Some(original) => Some(refused(
            "decision_undone",
            "the submission is no longer decided a duplicate of that original",
        )),
        Some(_) => None,
    }
}

impl Effect for CrmNote {
    fn can_reconcile(&self) -> bool {
        self.crm.capabilities().notes
    }

    fn idempotent(&self) -> bool {
        false
    }

    fn deliver<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            match (refusal(job), self.note(job)) {
                (None, Some(note)) => self.crm.add_note(&note).await,
                (refused, _) => refused.unwrap_or_else(|| Report::failed(Outcome::Permanent, "note_key")),
            }
        })
    }

    /// Looked up even once the decision is undone: an unknown outcome may have reached the CRM.
    fn reconcile<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Lookup> {
        Box::pin(async move {
            match self.note(job) {
                Some(note) => self.crm.find_note(&note).await,
                None => Lookup::Absent,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(toml: &str) -> FormConfig {
        toml::from_str(&format!("title = 'x'\n{toml}")).unwrap()
    }

    #[test]
    fn check_config_wants_crm_lead_and_never_crm_note_in_effects() {
        let ok = form("effects = ['crm_lead']\n[crm]\non_duplicate = 'note'");
        assert_eq!(CrmNoteKind.check("forms.f", &ok), Vec::<String>::new());
        let no_lead = form("effects = ['owner_notification']\n[crm]\non_duplicate = 'note'");
        assert_eq!(
            CrmNoteKind.check("forms.f", &no_lead),
            ["forms.f.crm.on_duplicate: \"note\" needs `crm_lead` in forms.f.effects"]
        );
        let listed = form("effects = ['crm_lead', 'crm_note']");
        assert!(CrmNoteKind.check("forms.f", &listed)[0].contains("`crm_note` is not listed"));
        assert!(!CrmNoteKind.applies(&listed, &|_| true), "only a decision makes one");
        let ignore = form("effects = ['owner_notification']");
        assert_eq!(CrmNoteKind.check("forms.f", &ignore), Vec::<String>::new(), "the default asks nothing");
    }
}
