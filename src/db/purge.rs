//! The queries of retention (`lifecycle::purge`) and erasure (`lifecycle::erase`): picking
//! due rows (PostgreSQL skips rows another purge, or a conflict insert, holds), making
//! tombstones, deleting them and everything naming them, and the purge totals.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use uuid::Uuid;

use super::changes::{self, Noted};
use super::files::FileRefs;
use super::hooks::HookStore;
use super::queue::cancel_pending;
use super::schema::{
    confirmation_caps, conflicts, deliveries, duplicate_pairs, effect_attempts, inbound_events,
    inbound_quarantine, purge_passes, purge_totals, side_effects, submissions,
};
use super::DbConnection;
use crate::domain::ChangeKind;

/// The submissions of `form` received before `before`, oldest first.
#[diesel::dsl::auto_type(no_type_alias)]
fn received_before<'a>(form: &'a str, before: NaiveDateTime, limit: i64) -> _ {
    submissions::table
        .filter(submissions::form.eq(form))
        .filter(submissions::received_at.lt(before))
        .order(submissions::received_at)
        .limit(limit)
        .select(submissions::id)
}

/// Up to `limit` submissions whose content is due; PostgreSQL skips rows another purge (or
/// a conflict insert) holds.
pub fn pick_content(
    c: &mut DbConnection,
    form: &str,
    before: NaiveDateTime,
    limit: i64,
) -> QueryResult<Vec<String>> {
    let due = received_before(form, before, limit).filter(submissions::content_purged_at.is_null());
    match c {
        DbConnection::Pg(pg) => due.for_no_key_update().skip_locked().load(pg),
        DbConnection::Sqlite(sqlite) => due.load(sqlite),
    }
}

/// Up to `limit` tombstones (or submissions) whose key is due.
pub fn pick_tombstones(
    c: &mut DbConnection,
    form: &str,
    before: NaiveDateTime,
    limit: i64,
) -> QueryResult<Vec<String>> {
    let due = received_before(form, before, limit);
    match c {
        DbConnection::Pg(pg) => due.for_update().skip_locked().load(pg),
        DbConnection::Sqlite(sqlite) => due.load(sqlite),
    }
}

/// Up to `limit` recipient digests of `form`'s confirmation caps last taken at or before `before`.
pub fn pick_caps(
    c: &mut DbConnection,
    form: &str,
    before: NaiveDateTime,
    limit: i64,
) -> QueryResult<Vec<String>> {
    let due = confirmation_caps::table
        .filter(confirmation_caps::form.eq(form))
        .filter(confirmation_caps::last_at.le(before))
        .limit(limit)
        .select(confirmation_caps::email_digest);
    match c {
        DbConnection::Pg(pg) => due.for_update().skip_locked().load(pg),
        DbConnection::Sqlite(sqlite) => due.load(sqlite),
    }
}

/// Up to `limit` of a webhook source's quarantined deliveries received before `before`.
pub fn pick_quarantined(
    c: &mut DbConnection,
    source: &str,
    before: NaiveDateTime,
    limit: i64,
) -> QueryResult<Vec<String>> {
    let due = inbound_quarantine::table
        .filter(inbound_quarantine::source.eq(source))
        .filter(inbound_quarantine::received_at.lt(before))
        .order(inbound_quarantine::received_at)
        .limit(limit)
        .select(inbound_quarantine::id);
    match c {
        DbConnection::Pg(pg) => due.for_update().skip_locked().load(pg),
        DbConnection::Sqlite(sqlite) => due.load(sqlite),
    }
}

/// A purge batch need not wait for the disk: a crash loses at most the last batches, which
/// the next pass purges again (PostgreSQL `synchronous_commit = off`).
pub fn relax_commit(c: &mut DbConnection) -> QueryResult<()> {
    match c {
        DbConnection::Pg(pg) => pg.batch_execute("SET LOCAL synchronous_commit = off"),
        DbConnection::Sqlite(_) => Ok(()),
    }
}

/// What `tombstone` did.
pub struct Tombstoned {
    /// The submissions purged.
    pub submissions: usize,
    /// The blobs their file fields named (the file store deletes those nothing else uses).
    pub blobs: Vec<String>,
}

/// The `consent` fields of each form (form → field names; `Config::consent_fields`).
pub type ConsentFields = BTreeMap<String, Vec<String>>;

/// Makes tombstones of `ids` (those not purged yet): the content and its copies go (of an
/// inbound event among them, erased: its body and its conflicts' bodies), and their files'
/// references. The fingerprint stays, so a late retry still replays; so do the answers to
/// the `consent` fields (the versions agreed to, in `consent_json`), the proof of consent.
pub fn tombstone(
    c: &mut DbConnection,
    ids: &[String],
    consent: &ConsentFields,
    now: NaiveDateTime,
) -> QueryResult<Tombstoned> {
    for (id, kept) in consent_of(c, ids, consent)? {
        diesel::update(submissions::table.find(id)).set(submissions::consent_json.eq(kept)).execute(c)?;
    }
    let erased: Vec<String> = diesel::update(
        submissions::table
            .filter(submissions::id.eq_any(ids))
            .filter(submissions::content_purged_at.is_null()),
    )
    .set((
        submissions::fields_json.eq(None::<String>),
        submissions::email_digest.eq(None::<String>),
        submissions::phone_digest.eq(None::<String>),
        submissions::name_digest.eq(None::<String>),
        submissions::content_purged_at.eq(Some(now)),
    ))
    .returning(submissions::id)
    .get_results(c)?;
    let n = erased.len();
    let noted: Vec<Noted<'_>> = erased.iter().map(|id| Noted::of(ChangeKind::Erased, id)).collect();
    changes::record(c, &noted, now)?;
    diesel::update(conflicts::table.filter(conflicts::submission_id.eq_any(ids)))
        .set(conflicts::fields_json.eq(None::<String>))
        .execute(c)?;
    c.forget_bodies(ids)?;
    cancel_pending(c, ids, now, "content purged before delivery")?;
    let blobs = c.forget_files_of(ids)?;
    Ok(Tombstoned { submissions: n, blobs })
}

/// The consent answers of those of `ids` (not purged yet) whose form has a consent field,
/// as (id, JSON object of field → version); a submission without an answer is left out.
fn consent_of(
    c: &mut DbConnection,
    ids: &[String],
    consent: &ConsentFields,
) -> QueryResult<Vec<(String, String)>> {
    if consent.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<(String, String, Option<String>)> = submissions::table
        .filter(submissions::id.eq_any(ids))
        .filter(submissions::form.eq_any(consent.keys()))
        .filter(submissions::content_purged_at.is_null())
        .select((submissions::id, submissions::form, submissions::fields_json))
        .load(c)?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, form, json)| {
            let fields = crate::domain::stored_fields::parse(json.as_deref()?).ok()?;
            let names = consent.get(&form)?;
            let kept: BTreeMap<&String, &String> = fields.iter().filter(|(k, _)| names.contains(k)).collect();
            let json = serde_json::to_string(&kept).ok()?;
            (!kept.is_empty()).then_some((id, json))
        })
        .collect())
}

/// Makes tombstones of a webhook source's events `ids` (those not purged yet): their bodies
/// and their conflicts' go, their handlers' records still waiting are cancelled. Returns the
/// number of events purged.
pub fn tombstone_events(c: &mut DbConnection, ids: &[String], now: NaiveDateTime) -> QueryResult<usize> {
    let n = c.forget_bodies(ids)?;
    cancel_pending(c, ids, now, "content purged before delivery")?;
    Ok(n)
}

/// Deletes the submissions `ids` and everything naming them: effect records and their
/// attempts, conflicts, pairs, delivery rows. The submissions deleted; each is the feed's
/// `deleted` change, written while it still exists (its form is read from it).
pub fn delete_submissions(c: &mut DbConnection, ids: &[String]) -> QueryResult<i64> {
    let noted: Vec<Noted<'_>> = ids.iter().map(|id| Noted::of(ChangeKind::Deleted, id)).collect();
    changes::record(c, &noted, crate::base::clock::now())?;
    let effects =
        side_effects::table.filter(side_effects::submission_id.eq_any(ids)).select(side_effects::id);
    diesel::delete(effect_attempts::table.filter(effect_attempts::effect_id.eq_any(effects))).execute(c)?;
    diesel::delete(side_effects::table.filter(side_effects::submission_id.eq_any(ids))).execute(c)?;
    diesel::delete(conflicts::table.filter(conflicts::submission_id.eq_any(ids))).execute(c)?;
    diesel::delete(
        duplicate_pairs::table
            .filter(duplicate_pairs::original_id.eq_any(ids).or(duplicate_pairs::duplicate_id.eq_any(ids))),
    )
    .execute(c)?;
    diesel::update(submissions::table.filter(submissions::duplicate_of.eq_any(ids)))
        .set(submissions::duplicate_of.eq(None::<String>))
        .execute(c)?;
    diesel::delete(deliveries::table.filter(deliveries::submission_id.eq_any(ids))).execute(c)?;
    let n = diesel::delete(submissions::table.filter(submissions::id.eq_any(ids))).execute(c)?;
    Ok(n as i64)
}

/// Deletes the events `ids` and everything naming them: their handlers' records and their
/// attempts, conflicts, delivery rows. The events deleted.
pub fn delete_events(c: &mut DbConnection, ids: &[String]) -> QueryResult<i64> {
    let effects =
        side_effects::table.filter(side_effects::inbound_event_id.eq_any(ids)).select(side_effects::id);
    diesel::delete(effect_attempts::table.filter(effect_attempts::effect_id.eq_any(effects))).execute(c)?;
    diesel::delete(side_effects::table.filter(side_effects::inbound_event_id.eq_any(ids))).execute(c)?;
    Ok(c.delete_events(ids)? as i64)
}

/// Up to `limit` of `source`'s events received before `before` whose body is kept.
pub fn pick_event_content(
    c: &mut DbConnection,
    source: &str,
    before: NaiveDateTime,
    limit: i64,
) -> QueryResult<Vec<String>> {
    let due = events_received_before(source, before, limit).filter(inbound_events::body.is_not_null());
    match c {
        DbConnection::Pg(pg) => due.for_no_key_update().skip_locked().load(pg),
        DbConnection::Sqlite(sqlite) => due.load(sqlite),
    }
}

/// Up to `limit` of `source`'s events (tombstones or not) received before `before`.
pub fn pick_events(
    c: &mut DbConnection,
    source: &str,
    before: NaiveDateTime,
    limit: i64,
) -> QueryResult<Vec<String>> {
    let due = events_received_before(source, before, limit);
    match c {
        DbConnection::Pg(pg) => due.for_update().skip_locked().load(pg),
        DbConnection::Sqlite(sqlite) => due.load(sqlite),
    }
}

/// The events of `source` first received before `before`, oldest first.
#[diesel::dsl::auto_type(no_type_alias)]
fn events_received_before<'a>(source: &'a str, before: NaiveDateTime, limit: i64) -> _ {
    inbound_events::table
        .filter(inbound_events::source.eq(source))
        .filter(inbound_events::first_received_at.lt(before))
        .order(inbound_events::first_received_at)
        .limit(limit)
        .select(inbound_events::id)
}

/// Deletes `form`'s confirmation caps of `digests` still last taken at or before `before`
/// (an accept may have taken the slot again meanwhile).
pub fn delete_cap_rows(
    c: &mut DbConnection,
    form: &str,
    digests: &[String],
    before: NaiveDateTime,
) -> QueryResult<i64> {
    let n = diesel::delete(
        confirmation_caps::table
            .filter(confirmation_caps::form.eq(form))
            .filter(confirmation_caps::email_digest.eq_any(digests))
            .filter(confirmation_caps::last_at.le(before)),
    )
    .execute(c)?;
    Ok(n as i64)
}

/// Records a pass (for `/metrics`).
pub fn record_pass(
    c: &mut DbConnection,
    started_at: NaiveDateTime,
    duration_ms: i64,
    rows: i64,
) -> QueryResult<()> {
    diesel::insert_into(purge_passes::table)
        .values((
            purge_passes::id.eq(Uuid::now_v7().to_string()),
            purge_passes::started_at.eq(started_at),
            purge_passes::duration_ms.eq(duration_ms),
            purge_passes::purged_rows.eq(rows),
        ))
        .execute(c)
        .map(|_| ())
}

/// Counts rows purged of a form by kind (`content`, `keys`, `erasure`).
pub trait TotalStore {
    fn add_total(&mut self, form: &str, kind: &str, n: i64) -> QueryResult<()>;
}

impl TotalStore for DbConnection {
    fn add_total(&mut self, form: &str, kind: &str, n: i64) -> QueryResult<()> {
        self.execute_native(
            diesel::insert_into(purge_totals::table)
                .values((
                    purge_totals::form.eq(form),
                    purge_totals::kind.eq(kind),
                    purge_totals::purged_rows.eq(n),
                ))
                .on_conflict((purge_totals::form, purge_totals::kind))
                .do_update()
                .set(purge_totals::purged_rows.eq(purge_totals::purged_rows + n)),
        )
        .map(|_| ())
    }
}
