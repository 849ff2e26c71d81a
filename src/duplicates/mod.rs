//! The duplicate detector, run inside the accept transaction: an indexed look for earlier
//! submissions of the same form with the same email or phone (or, without a key, the same
//! content), scored for likeness and stored as pairs for review.

mod score;

use std::collections::BTreeMap;

use chrono::{Duration, NaiveDateTime};
use uuid::Uuid;

use crate::config::{DuplicatePolicy, FormConfig};
use crate::db::duplicates::{DuplicateStore, Lookup, NewPair};
use crate::db::models::NewSubmission;
pub use score::{score, Shared, MIN_SCORE};

/// Pairs the new submission with likely earlier duplicates; true when its side effects
/// should wait for a decision (policy `hold` and a pair scoring at least `hold_score`).
pub fn detect<C: DuplicateStore>(
    c: &mut C,
    form: &FormConfig,
    new: &NewSubmission,
    now: NaiveDateTime,
) -> diesel::QueryResult<bool> {
    if new.spam || (new.email_digest.is_none() && new.phone_digest.is_none() && !new.keyless) {
        return Ok(false);
    }
    let lookup = Lookup {
        form: &new.form,
        exclude_id: &new.id,
        since: now - Duration::hours(i64::from(form.duplicates.window_hours)),
        // Imported history is compared with what came before and after it, within the window.
        until: now + Duration::hours(i64::from(form.duplicates.window_hours)),
        email_digest: new.email_digest.as_deref(),
        phone_digest: new.phone_digest.as_deref(),
        keyless_fingerprint: new.keyless.then_some(new.fingerprint.as_str()),
    };
    let fields = parse(new.fields_json.as_deref());
    let mut hold = false;
    for candidate in c.duplicate_candidates(&lookup)? {
        let shared = Shared {
            email: new.email_digest.is_some() && candidate.email_digest == new.email_digest,
            phone: new.phone_digest.is_some() && candidate.phone_digest == new.phone_digest,
            content: new.keyless && candidate.fingerprint == new.fingerprint,
        };
        let Some((score, reasons)) = score(form, &fields, &parse(candidate.fields_json.as_deref()), shared)
        else {
            continue;
        };
        hold |= form.duplicates.policy == DuplicatePolicy::Hold && score >= form.duplicates.hold_score;
        c.insert_pair(&NewPair {
            id: Uuid::now_v7().to_string(),
            form: new.form.clone(),
            original_id: candidate.id,
            duplicate_id: new.id.clone(),
            score,
            reasons: serde_json::to_string(&reasons).unwrap_or_else(|_| "[]".into()),
            status: "open".into(),
            created_at: now,
        })?;
    }
    Ok(hold)
}

fn parse(json: Option<&str>) -> BTreeMap<String, String> {
    json.and_then(|j| serde_json::from_str(j).ok()).unwrap_or_default()
}
