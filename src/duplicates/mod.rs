//! The duplicate detector. On the accept path: one indexed look-up for the earliest
//! submission of the same form with the same email (else phone, else, without a key, the
//! same content) within `window_hours`, and one pair linking the new submission to it: a
//! cluster of repeats is one original and its members, never every pair among them. Off
//! the accept path, the screener (`screen`) scores each linked pair (choice fields, the
//! free text's word overlap) and, under `policy = "hold"`, releases the effects it held
//! unless the score reaches `hold_score`.

mod score;
pub mod screen;

use std::collections::BTreeMap;

use chrono::{Duration, NaiveDateTime};
use uuid::Uuid;

use crate::config::{DuplicatePolicy, FormConfig};
use crate::db::duplicates::{DuplicateStore, LinkKey, Lookup, NewPair, SCREENING};
use crate::db::models::NewSubmission;
pub use score::{score, Shared, MIN_SCORE};
pub use screen::Screener;

/// The key the new submission is linked by, if any (spam is never linked).
pub fn link_key(new: &NewSubmission) -> Option<LinkKey<'_>> {
    if new.spam {
        return None;
    }
    match (&new.email_digest, &new.phone_digest) {
        (Some(d), _) => Some(LinkKey::Email(d)),
        (None, Some(d)) => Some(LinkKey::Phone(d)),
        (None, None) if new.keyless => Some(LinkKey::Content(&new.fingerprint)),
        (None, None) => None,
    }
}

/// The start of the window a repeat is looked for in.
pub fn since(form: &FormConfig, now: NaiveDateTime) -> NaiveDateTime {
    now - Duration::hours(i64::from(form.duplicates.window_hours))
}

/// Whether a linked submission's effects wait for the screening.
pub fn holds(form: &FormConfig) -> bool {
    form.duplicates.policy == DuplicatePolicy::Hold
}

/// Links the new submission to its cluster's first submission (a pair to be screened);
/// true when its side effects must be held (linked, and the form's policy is `hold`).
pub fn link<C: DuplicateStore>(
    c: &mut C,
    form: &FormConfig,
    new: &NewSubmission,
    now: NaiveDateTime,
) -> diesel::QueryResult<bool> {
    let Some(key) = link_key(new) else { return Ok(false) };
    // Imported history is compared with what came before and after it, within the window.
    let until = now + Duration::hours(i64::from(form.duplicates.window_hours));
    let lookup = Lookup { form: &new.form, exclude_id: &new.id, since: since(form, now), until, key };
    let Some(original_id) = c.cluster_first(&lookup)? else { return Ok(false) };
    c.insert_pair(&pending_pair(&new.form, original_id, new.id.to_string(), now))?;
    Ok(holds(form))
}

/// A pair as the accept path writes it: linked, not yet scored.
pub fn pending_pair(form: &str, original_id: String, duplicate_id: String, now: NaiveDateTime) -> NewPair {
    NewPair {
        id: Uuid::now_v7().to_string(),
        form: form.into(),
        original_id,
        duplicate_id,
        score: 0.0,
        reasons: "[]".into(),
        status: SCREENING,
        created_at: now,
    }
}

fn parse(json: Option<&str>) -> BTreeMap<String, String> {
    json.and_then(|j| serde_json::from_str(j).ok()).unwrap_or_default()
}
