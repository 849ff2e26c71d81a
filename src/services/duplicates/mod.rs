//! The duplicate detector. On the accept path: one bounded look-up of the most recent
//! submissions of the form's group within `window_hours` sharing the new one's canonical
//! email, phone, or name plus company (keyless without any of them: its whole content),
//! each key through its own index, and one pair row naming its candidates (at most
//! `db::duplicates::CANDIDATES`). A key shared by `db::duplicates::FLOOD` submissions in the
//! window is a flood and links nothing more (one cluster per identity, not a pair per
//! submission). Off the accept path, the screener (`screen`) scores each
//! submission's candidates (`score`): the best repeat of one request is opened for review;
//! the same sender's new request is listed apart and never held; anything else is dropped.
//! Under `policy = "hold"` the effects wait for the screening, and for a decision when the
//! repeat scores at least `hold_score`.

pub mod canonical;
pub mod decide;
pub mod evidence;
pub mod queue;
pub mod reason;
pub mod rescreen;
mod score;
pub mod screen;
mod text;

use std::collections::BTreeMap;

use chrono::{Duration, NaiveDateTime};
use uuid::Uuid;

use crate::config::{DuplicatePolicy, FormConfig};
use crate::db::duplicates::{DuplicateStore, LinkKeys, Lookup, NewPair, CANDIDATE_SEPARATOR, SCREENING};
use crate::db::models::NewSubmission;
pub use score::{judge, Judged, Verdict};
pub use screen::Screener;

/// The keys the new submission is looked up by, if any (spam is never linked).
pub fn link_keys(new: &NewSubmission) -> Option<LinkKeys<'_>> {
    // Neither spam nor a test from the admin is screened for duplicates.
    if new.spam || new.test {
        return None;
    }
    let keys = LinkKeys {
        email: new.email_digest.as_deref(),
        phone: new.phone_digest.as_deref(),
        name: new.name_digest.as_deref(),
        content: None,
    };
    match keys {
        LinkKeys { email: None, phone: None, name: None, .. } if new.keyless => {
            Some(LinkKeys { content: Some(&new.fingerprint), ..keys })
        }
        LinkKeys { email: None, phone: None, name: None, .. } => None,
        keys => Some(keys),
    }
}

/// The forms a submission of `form_name` is screened against: its group, else itself.
pub fn screened_forms(form_name: &str, form: &FormConfig) -> Vec<String> {
    match form.duplicates.group_forms.is_empty() {
        true => vec![form_name.to_string()],
        false => form.duplicates.group_forms.clone(),
    }
}

/// The start of the window a repeat is looked for in.
pub fn since(form: &FormConfig, now: NaiveDateTime) -> NaiveDateTime {
    now - Duration::hours(i64::from(form.duplicates.window_hours))
}

/// The end of it: imported history is compared with what came before and after it.
pub fn until(form: &FormConfig, now: NaiveDateTime) -> NaiveDateTime {
    now + Duration::hours(i64::from(form.duplicates.window_hours))
}

/// Whether a linked submission's effects wait for the screening.
pub fn holds(form: &FormConfig) -> bool {
    form.duplicates.policy == DuplicatePolicy::Hold
}

/// Links the new submission to its candidates (one pair row to be screened); true when its
/// side effects must be held (linked, and the form's policy is `hold`).
pub fn link<C: DuplicateStore>(
    c: &mut C,
    form: &FormConfig,
    new: &NewSubmission,
    now: NaiveDateTime,
) -> diesel::QueryResult<bool> {
    let Some(keys) = link_keys(new) else { return Ok(false) };
    let forms = screened_forms(&new.form, form);
    let lookup =
        Lookup { forms: &forms, exclude_id: &new.id, since: since(form, now), until: until(form, now), keys };
    let found = c.candidates(&lookup)?;
    let Some(pair) = pending_pair(&new.form, &found, new.id.to_string(), now) else { return Ok(false) };
    c.insert_pair(&pair)?;
    Ok(holds(form))
}

/// The pair the accept path writes for `duplicate_id` and its `candidates` (most recent
/// first): linked to the first, the others listed with it, not yet scored. None without
/// candidates.
pub fn pending_pair(
    form: &str,
    candidates: &[String],
    duplicate_id: String,
    now: NaiveDateTime,
) -> Option<NewPair> {
    let (first, others) = candidates.split_first()?;
    Some(NewPair {
        id: Uuid::now_v7().to_string(),
        form: form.into(),
        original_id: first.clone(),
        duplicate_id,
        score: 0.0,
        reasons: "[]".into(),
        status: SCREENING,
        created_at: now,
        candidates: (!others.is_empty()).then(|| others.join(CANDIDATE_SEPARATOR)),
    })
}

fn parse(json: Option<&str>) -> BTreeMap<String, String> {
    crate::domain::stored_fields::shown(json)
}
