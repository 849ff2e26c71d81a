//! The queries of one person's erasure (`lifecycle::erase`): where they are found, and what
//! is redacted. The caller owns the transaction. Text the person may hide in (inbound
//! bodies, quarantined deliveries, attempt logs) is found by `lower(column) LIKE pattern`,
//! the patterns being `browse::like_pattern`s (lower-cased, JSON-escaped, `%_\` escaped).

use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel::sql_types::{Nullable, Text};

use crate::db::schema::{
    confirmation_caps, conflicts, deliveries, duplicate_pairs, effect_attempts, inbound_conflicts,
    inbound_events, inbound_quarantine, side_effects, submissions,
};
use crate::db::DbConnection;
use crate::domain::{phone_digits, EffectState, QuarantineStatus, RecordKind};

diesel::define_sql_function! {
    /// SQL `lower(text)`, the same on both backends.
    fn lower(x: Nullable<Text>) -> Nullable<Text>;
}

/// What replaces a redacted text: the row stays, the person's text goes.
pub const ERASED: &str = "[erased]";

/// One submission of the person: (id, form, operation ID).
pub type Found = (String, String, String);

/// The person's submissions by keyed email or phone digest.
pub fn submissions_of(c: &mut DbConnection, email: &[String], phone: &[String]) -> QueryResult<Vec<Found>> {
    submissions::table
        .filter(submissions::email_digest.eq_any(email).or(submissions::phone_digest.eq_any(phone)))
        .select((submissions::id, submissions::form, submissions::operation_id))
        .load(c)
}

/// Inbound events whose body holds any of `patterns` (a scan), as (event row, source scope,
/// event ID).
pub fn events_holding(c: &mut DbConnection, patterns: &[String]) -> QueryResult<Vec<Found>> {
    let mut out: Vec<Found> = Vec::new();
    for p in patterns {
        let rows: Vec<(String, String, String)> = inbound_events::table
            .filter(lower(inbound_events::body).like(p).escape('\\'))
            .select((inbound_events::id, inbound_events::source, inbound_events::event_id))
            .load(c)?;
        for (id, source, event_id) in rows {
            if !out.iter().any(|(known, _, _)| *known == id) {
                out.push((id, RecordKind::source_scope(&source), event_id));
            }
        }
    }
    Ok(out)
}

/// Conflicts of these submissions that still have content.
pub fn conflicts_of(c: &mut DbConnection, ids: &[String]) -> QueryResult<Vec<String>> {
    conflicts::table
        .filter(conflicts::fields_json.is_not_null())
        .filter(conflicts::submission_id.eq_any(ids))
        .select(conflicts::id)
        .load(c)
}

/// Conflicts whose content holds any of `patterns` (a scan).
pub fn conflicts_holding(c: &mut DbConnection, patterns: &[String]) -> QueryResult<Vec<String>> {
    let mut out = Vec::new();
    for p in patterns {
        let more: Vec<String> = conflicts::table
            .filter(lower(conflicts::fields_json).like(p).escape('\\'))
            .select(conflicts::id)
            .load(c)?;
        out.extend(more);
    }
    Ok(out)
}

/// Conflicts whose content holds the phone number `digits` (`domain::phone_digits`) however
/// it was typed: scanned by its digits in order (`%0%9%1%…%`), each row kept only when its
/// text without separators holds `digits`.
pub fn conflicts_holding_phone(c: &mut DbConnection, digits: &str) -> QueryResult<Vec<String>> {
    let loose: Vec<String> = digits.chars().filter(char::is_ascii_digit).map(String::from).collect();
    // Fewer digits than any phone number would match unrelated text.
    if loose.len() < 7 {
        return Ok(Vec::new());
    }
    let rows: Vec<(String, Option<String>)> = conflicts::table
        .filter(lower(conflicts::fields_json).like(format!("%{}%", loose.join("%"))))
        .select((conflicts::id, conflicts::fields_json))
        .load(c)?;
    let holds = |text: &str| phone_digits(text).contains(digits);
    Ok(rows.into_iter().filter(|(_, t)| t.as_deref().is_some_and(holds)).map(|(id, _)| id).collect())
}

/// Inbound conflicts of these events that still have a body.
pub fn inbound_conflicts_of(c: &mut DbConnection, events: &[String]) -> QueryResult<Vec<String>> {
    inbound_conflicts::table
        .filter(inbound_conflicts::body.is_not_null())
        .filter(inbound_conflicts::event_row_id.eq_any(events))
        .select(inbound_conflicts::id)
        .load(c)
}

/// Inbound conflicts whose body holds any of `patterns` (a scan).
pub fn inbound_conflicts_holding(c: &mut DbConnection, patterns: &[String]) -> QueryResult<Vec<String>> {
    let mut out = Vec::new();
    for p in patterns {
        let more: Vec<String> = inbound_conflicts::table
            .filter(lower(inbound_conflicts::body).like(p).escape('\\'))
            .select(inbound_conflicts::id)
            .load(c)?;
        out.extend(more);
    }
    Ok(out)
}

/// Quarantined deliveries whose body holds any of `patterns` (a scan).
pub fn quarantine_holding(c: &mut DbConnection, patterns: &[String]) -> QueryResult<Vec<String>> {
    let mut out = Vec::new();
    for p in patterns {
        let more: Vec<String> = inbound_quarantine::table
            .filter(lower(inbound_quarantine::body).like(p).escape('\\'))
            .select(inbound_quarantine::id)
            .load(c)?;
        out.extend(more);
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Duplicate pairs naming these submissions.
pub fn pairs_of(c: &mut DbConnection, ids: &[String]) -> QueryResult<i64> {
    duplicate_pairs::table
        .filter(duplicate_pairs::original_id.eq_any(ids).or(duplicate_pairs::duplicate_id.eq_any(ids)))
        .count()
        .get_result(c)
}

/// The confirmation cap's slots of an email digest (a digest and a time each).
pub fn forget_caps(c: &mut DbConnection, email_digests: &[String]) -> QueryResult<usize> {
    diesel::delete(confirmation_caps::table.filter(confirmation_caps::email_digest.eq_any(email_digests)))
        .execute(c)
}

/// One side-effect record of the person's submissions or events.
#[derive(Debug, Clone, PartialEq, Eq, Queryable)]
pub struct ErasedEffect {
    pub kind: RecordKind,
    pub effect_key: String,
    pub provider_ref: Option<String>,
    pub state: EffectState,
}

/// Every side-effect record of these submissions and inbound events.
pub fn effects_of(c: &mut DbConnection, ids: &[String]) -> QueryResult<Vec<ErasedEffect>> {
    side_effects::table
        .filter(crate::db::owned_by(ids))
        .order((side_effects::kind, side_effects::effect_key))
        .select((
            side_effects::kind,
            side_effects::effect_key,
            side_effects::provider_ref,
            side_effects::state,
        ))
        .load(c)
}

/// Conflicts and inbound conflicts lose their content.
pub fn forget_conflicts(c: &mut DbConnection, ids: &[String], inbound: &[String]) -> QueryResult<()> {
    diesel::update(conflicts::table.filter(conflicts::id.eq_any(ids)))
        .set(conflicts::fields_json.eq(None::<String>))
        .execute(c)?;
    diesel::update(inbound_conflicts::table.filter(inbound_conflicts::id.eq_any(inbound)))
        .set(inbound_conflicts::body.eq(None::<String>))
        .execute(c)?;
    Ok(())
}

/// Quarantined deliveries lose their body; an open one is discarded by `by`.
pub fn forget_quarantined(
    c: &mut DbConnection,
    ids: &[String],
    by: &str,
    now: NaiveDateTime,
) -> QueryResult<()> {
    diesel::update(
        inbound_quarantine::table
            .filter(inbound_quarantine::id.eq_any(ids))
            .filter(inbound_quarantine::status.eq(QuarantineStatus::Open)),
    )
    .set((
        inbound_quarantine::status.eq(QuarantineStatus::Discarded),
        inbound_quarantine::decided_by.eq(by),
        inbound_quarantine::decided_at.eq(now),
    ))
    .execute(c)?;
    diesel::update(inbound_quarantine::table.filter(inbound_quarantine::id.eq_any(ids)))
        .set(inbound_quarantine::body.eq(None::<String>))
        .execute(c)?;
    Ok(())
}

/// Tombstones drop their journey ID (it ties the person's inquiries together).
pub fn forget_journeys(c: &mut DbConnection, ids: &[String]) -> QueryResult<usize> {
    diesel::update(
        submissions::table.filter(submissions::id.eq_any(ids)).filter(submissions::journey_id.is_not_null()),
    )
    .set(submissions::journey_id.eq(None::<String>))
    .execute(c)
}

/// The delivery log's rows of these submissions, and of their (form, operation ID)s (a
/// retry or refusal that named no submission); how many went.
pub fn delete_deliveries(c: &mut DbConnection, found: &[Found]) -> QueryResult<usize> {
    let ids: Vec<&str> = found.iter().map(|(id, _, _)| id.as_str()).collect();
    let mut n =
        diesel::delete(deliveries::table.filter(deliveries::submission_id.eq_any(&ids))).execute(c)?;
    for (_, form, operation_id) in found {
        n += diesel::delete(
            deliveries::table
                .filter(deliveries::form.eq(form))
                .filter(deliveries::operation_id.eq(operation_id)),
        )
        .execute(c)?;
    }
    Ok(n)
}

/// The attempt logs and records of these submissions' effects: a provider's answer or an
/// error text holding any of `patterns` (an SMTP server echoing the address, an admin's
/// note) becomes `ERASED`; how many texts changed.
pub fn redact_attempts(c: &mut DbConnection, ids: &[String], patterns: &[String]) -> QueryResult<usize> {
    let effects = || side_effects::table.filter(crate::db::owned_by(ids)).select(side_effects::id);
    let mut n = 0;
    for p in patterns {
        n += diesel::update(
            side_effects::table
                .filter(crate::db::owned_by(ids))
                .filter(lower(side_effects::provider_ref).like(p).escape('\\')),
        )
        .set(side_effects::provider_ref.eq(ERASED))
        .execute(c)?;
        n += diesel::update(
            side_effects::table
                .filter(crate::db::owned_by(ids))
                .filter(lower(side_effects::last_error).like(p).escape('\\')),
        )
        .set(side_effects::last_error.eq(ERASED))
        .execute(c)?;
        n += diesel::update(
            effect_attempts::table
                .filter(effect_attempts::effect_id.eq_any(effects()))
                .filter(lower(effect_attempts::provider_ref).like(p).escape('\\')),
        )
        .set(effect_attempts::provider_ref.eq(ERASED))
        .execute(c)?;
        n += diesel::update(
            effect_attempts::table
                .filter(effect_attempts::effect_id.eq_any(effects()))
                .filter(lower(effect_attempts::error_class).like(p).escape('\\')),
        )
        .set(effect_attempts::error_class.eq(ERASED))
        .execute(c)?;
        n += diesel::update(
            effect_attempts::table
                .filter(effect_attempts::effect_id.eq_any(effects()))
                .filter(lower(effect_attempts::detail).like(p).escape('\\')),
        )
        .set(effect_attempts::detail.eq(ERASED))
        .execute(c)?;
    }
    Ok(n)
}
