//! Releasing spam: an admin's word that a submission set aside (honeypot, fill time, captcha,
//! an unverified captcha above all) is a real inquiry. In one transaction it is unmarked, takes
//! the route it matches as a real inquiry (spam no longer), gets the side-effect records the
//! accept transaction would have written for that route, and is audited.

use std::collections::BTreeMap;

use crate::base::clock::now;
use crate::config::{Config, FormConfig};
use crate::db::admin::spam::SpamStore;
use crate::db::files::FileRefs;
use crate::db::models::NewEffect;
use crate::db::{DbError, Pool, Store};
use crate::domain::{EffectId, EffectKind, EffectState};
use crate::services::accept::route::{self, Facts};
use crate::services::audit::{self, Actor};
use crate::with_conn;

/// Why a submission was not released.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    #[error("No such submission.")]
    NotFound,
    #[error("This submission is not marked as spam (or its form is gone); reload the page.")]
    NotSpam,
    #[error("A file of this submission is malware: it is never released, so nothing delivers it.")]
    Malware,
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for ReleaseError {
    fn from(e: diesel::result::Error) -> Self {
        ReleaseError::Db(e.into())
    }
}

/// Releases submission `id` (a form of `config`) on `actor`'s word; how many side-effect
/// records it got.
pub fn release(
    pool: &Pool,
    config: &Config,
    actor: &Actor,
    id: &str,
    note: &str,
) -> Result<usize, ReleaseError> {
    with_conn!(pool, |c| Ok(c.write_tx(|c| {
        let Some(found) = c.spam_candidate(id)? else { return Err(ReleaseError::NotFound) };
        let Some(form) = config.form(&found.form).filter(|_| found.spam) else {
            return Err(ReleaseError::NotSpam);
        };
        // Judged again as a real inquiry: the route it takes now that it is not spam.
        let fields = crate::domain::stored_fields::shown(found.fields_json.as_deref());
        let values = fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let facts = Facts::of_values(form, values, found.locale.as_deref(), false);
        let routed = route::first(form, &facts);
        let label = routed.map(|(i, r)| r.label(i));
        // The store refuses malware; its reason read above says which refusal this is.
        if !c.release_spam(id, label.as_deref())? {
            return Err(if found.is_malware() { ReleaseError::Malware } else { ReleaseError::NotSpam });
        }
        // A file waiting for a scan, or one clamd could not scan, keeps them held.
        let held = c.files_of(id)?.iter().any(|f| f.scan.holds());
        let listed = routed.and_then(|(_, r)| r.effects.as_ref()).unwrap_or(&form.effects);
        let effects = effects_for(id, form, listed, &fields, held);
        c.insert_effects(&effects)?;
        audit::record(c, actor, "submission.release", ("submission", id), Some(note))?;
        Ok(effects.len())
    })))?
}

/// The records the accept transaction would have written (batch 0 was never used: spam gets
/// none): each kind `listed` (the route's, else the form's) where it applies to the stored
/// `fields`; `held` while a file holds them.
fn effects_for(
    submission_id: &str,
    form: &FormConfig,
    listed: &[EffectKind],
    fields: &BTreeMap<String, String>,
    held: bool,
) -> Vec<NewEffect> {
    let at = now();
    listed
        .iter()
        .filter(|k| crate::services::effects::applies(k, form, &|name| fields.contains_key(name)))
        .map(|kind| NewEffect {
            id: EffectId::generate(),
            submission_id: submission_id.into(),
            kind: kind.clone().into(),
            batch: 0,
            effect_key: format!("{submission_id}:{}:0", kind.as_str()),
            state: EffectState::Pending,
            held,
            last_error: None,
            next_attempt_at: at,
            created_at: at,
            updated_at: at,
        })
        .collect()
}
