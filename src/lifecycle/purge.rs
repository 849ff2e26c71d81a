//! Retention: after a form's `content` window a submission becomes a tombstone (fields,
//! email and phone digests, the content of its conflicts gone; key, fingerprint, result body
//! and effect records kept); after `keys` the tombstone goes too. A webhook source's events
//! go the same way through their anchor rows (form `hook:SOURCE`): after `content` their
//! bodies and their conflicts' go and the quarantine's deliveries are deleted; after `keys`
//! the events and their delivery rows go with the anchors. Batches of bounded size,
//! each its own short transaction, so the accept path never waits for more than one; rows
//! are claimed with `FOR NO KEY UPDATE SKIP LOCKED` (PostgreSQL) and changed only while still
//! due, so several processes purging at once purge each row once.
//!
//! The same pass deletes the confirmation cap's rows (a recipient's keyed digest and when
//! they were last sent a confirmation: personal data) once their window has passed and they
//! no longer cap anything.

use std::time::Instant;

use chrono::NaiveDateTime;
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use uuid::Uuid;

use crate::config::retention::scopes;
use crate::config::Config;
use crate::db::hooks::HookStore;
use crate::db::schema::{
    confirmation_caps, conflicts, deliveries, duplicate_pairs, effect_attempts, inbound_quarantine,
    purge_passes, purge_totals, side_effects, submissions,
};
use crate::db::{DbConnection, DbError, Pool, Writes, LOCK_POLL};
use crate::domain::EffectState;

/// The kind under which deleted confirmation-cap rows are counted (`/metrics`).
pub const CAPS: &str = "confirmation_caps";

/// What one pass purged: (form, kind, rows) with kind `content`, `keys` or (a webhook
/// source's, form `hook:SOURCE`) `quarantine`; and apart, as they are not submissions, the
/// confirmation-cap rows deleted by form.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PurgeReport {
    pub purged: Vec<(String, &'static str, i64)>,
    pub caps: Vec<(String, i64)>,
    pub duration_ms: i64,
}

impl PurgeReport {
    /// Submissions purged (content) or deleted (tombstones).
    pub fn total(&self) -> i64 {
        self.purged.iter().map(|(_, _, n)| n).sum()
    }

    /// Confirmation-cap rows deleted.
    pub fn caps_total(&self) -> i64 {
        self.caps.iter().map(|(_, n)| n).sum()
    }
}

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
fn pick_content(
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
fn pick_tombstones(
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
fn pick_caps(
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
fn pick_quarantined(
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
fn relax_commit(c: &mut DbConnection) -> QueryResult<()> {
    match c {
        DbConnection::Pg(pg) => pg.batch_execute("SET LOCAL synchronous_commit = off"),
        DbConnection::Sqlite(_) => Ok(()),
    }
}

/// One retention pass over every form and webhook source with a window; recorded for `/metrics`.
pub fn run_pass(writes: &Writes, config: &Config, now: NaiveDateTime) -> Result<PurgeReport, DbError> {
    let started = Instant::now();
    let mut report = PurgeReport::default();
    let batch = config.purge.batch;
    for scope in scopes(config) {
        let name = &scope.form;
        if let Some(content) = scope.retention.content {
            let before = now - content.duration();
            let n = drain(writes, || purge_content(writes, name, before, now, batch), batch)?;
            report.purged.push((name.clone(), "content", n));
            if let Some(source) = scope.hook_source {
                let n = drain(writes, || purge_quarantined(writes, source, before, batch), batch)?;
                report.purged.push((name.clone(), "quarantine", n));
            }
        }
        if let Some(keys) = scope.retention.keys {
            let n = drain(writes, || delete_tombstones(writes, name, now - keys.duration(), batch), batch)?;
            report.purged.push((name.clone(), "keys", n));
        }
        if let Some(form) = config.forms.get(name) {
            let window = chrono::Duration::minutes(i64::from(form.confirmation_window_minutes));
            let n = drain(writes, || delete_caps(writes, name, now - window, batch), batch)?;
            report.caps.push((name.clone(), n));
        }
    }
    report.duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    record(writes, &report, now)?;
    Ok(report)
}

/// Batches until one comes back short. In transactions of their own on SQLite (a process
/// of its own), each followed by a pause in which a writer waiting for the lock (it tries
/// every millisecond) takes it: without one, the next batch took the lock again at once.
fn drain(
    writes: &Writes,
    mut batch_fn: impl FnMut() -> Result<i64, DbError>,
    batch: i64,
) -> Result<i64, DbError> {
    let pause = matches!((&writes.pool, &writes.writer), (Pool::Sqlite(_), None));
    let mut total = 0;
    loop {
        let n = batch_fn()?;
        total += n;
        if n < batch {
            return Ok(total);
        }
        if pause {
            std::thread::sleep(4 * LOCK_POLL);
        }
    }
}

/// One batch of content purges; the rows this call purged.
pub fn purge_content(
    writes: &Writes,
    form: &str,
    before: NaiveDateTime,
    now: NaiveDateTime,
    batch: i64,
) -> Result<i64, DbError> {
    let form = form.to_string();
    writes.run(move |c| {
        relax_commit(c)?;
        let ids = pick_content(c, &form, before, batch)?;
        if ids.is_empty() {
            return Ok(0);
        }
        Ok(tombstone(c, &ids, now)? as i64)
    })
}

/// One batch of a webhook source's quarantined deliveries received before `before`, deleted:
/// with no event ID there is no tombstone to keep.
pub fn purge_quarantined(
    writes: &Writes,
    source: &str,
    before: NaiveDateTime,
    batch: i64,
) -> Result<i64, DbError> {
    let source = source.to_string();
    writes.run(move |c| {
        relax_commit(c)?;
        let ids = pick_quarantined(c, &source, before, batch)?;
        if ids.is_empty() {
            return Ok(0);
        }
        Ok(c.delete_quarantined(&ids)? as i64)
    })
}

/// Makes tombstones of `ids` (those not purged yet): the content and its copies go (an
/// inbound event's body and its conflicts' bodies included).
/// Returns the number of submissions purged.
pub(crate) fn tombstone(c: &mut DbConnection, ids: &[String], now: NaiveDateTime) -> QueryResult<usize> {
    let n = diesel::update(
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
    .execute(c)?;
    diesel::update(conflicts::table.filter(conflicts::submission_id.eq_any(ids)))
        .set(conflicts::fields_json.eq(None::<String>))
        .execute(c)?;
    c.forget_bodies(ids)?;
    // Nothing is left to send: effects still waiting are cancelled, their records kept.
    // The state is compared as `state || ''`, which no index serves: the batch's ids pick the
    // rows (unique index by submission). With `state = 'PENDING'`, statistics taken before a
    // backlog built up (workers stopped, a CRM down) made PostgreSQL walk every PENDING
    // record through `side_effects_due` instead: 340 ms a batch at 900,000 of them.
    diesel::update(
        side_effects::table
            .filter(side_effects::submission_id.eq_any(ids))
            .filter(side_effects::state.concat("").eq(EffectState::Pending.as_str())),
    )
    .set((
        side_effects::state.eq(EffectState::Cancelled),
        side_effects::last_error.eq(Some("content purged before delivery")),
        side_effects::updated_at.eq(now),
    ))
    .execute(c)?;
    Ok(n)
}

/// One batch of tombstone deletions (after `keys`): the submission and everything naming it.
pub fn delete_tombstones(
    writes: &Writes,
    form: &str,
    before: NaiveDateTime,
    batch: i64,
) -> Result<i64, DbError> {
    let form = form.to_string();
    writes.run(move |c| {
        relax_commit(c)?;
        let ids = pick_tombstones(c, &form, before, batch)?;
        if ids.is_empty() {
            return Ok(0);
        }
        let effects =
            side_effects::table.filter(side_effects::submission_id.eq_any(&ids)).select(side_effects::id);
        diesel::delete(effect_attempts::table.filter(effect_attempts::effect_id.eq_any(effects)))
            .execute(c)?;
        diesel::delete(side_effects::table.filter(side_effects::submission_id.eq_any(&ids))).execute(c)?;
        diesel::delete(conflicts::table.filter(conflicts::submission_id.eq_any(&ids))).execute(c)?;
        diesel::delete(duplicate_pairs::table.filter(
            duplicate_pairs::original_id.eq_any(&ids).or(duplicate_pairs::duplicate_id.eq_any(&ids)),
        ))
        .execute(c)?;
        diesel::update(submissions::table.filter(submissions::duplicate_of.eq_any(&ids)))
            .set(submissions::duplicate_of.eq(None::<String>))
            .execute(c)?;
        diesel::delete(deliveries::table.filter(deliveries::submission_id.eq_any(&ids))).execute(c)?;
        c.delete_events(&ids)?;
        let n = diesel::delete(submissions::table.filter(submissions::id.eq_any(&ids))).execute(c)?;
        Ok(n as i64)
    })
}

/// One batch of confirmation caps whose window has passed (taken at or before `before`):
/// deleted, unless an accept took the slot again meanwhile.
pub fn delete_caps(writes: &Writes, form: &str, before: NaiveDateTime, batch: i64) -> Result<i64, DbError> {
    let form = form.to_string();
    writes.run(move |c| {
        relax_commit(c)?;
        let digests = pick_caps(c, &form, before, batch)?;
        if digests.is_empty() {
            return Ok(0);
        }
        let n = diesel::delete(
            confirmation_caps::table
                .filter(confirmation_caps::form.eq(&form))
                .filter(confirmation_caps::email_digest.eq_any(&digests))
                .filter(confirmation_caps::last_at.le(before)),
        )
        .execute(c)?;
        Ok(n as i64)
    })
}

/// Adds a pass's rows to the totals by form and kind, and records the pass.
fn record(writes: &Writes, report: &PurgeReport, now: NaiveDateTime) -> Result<(), DbError> {
    let report = report.clone();
    writes.run(move |c| {
        for (form, kind, n) in report.purged.iter().filter(|(_, _, n)| *n > 0) {
            c.add_total(form, kind, *n)?;
        }
        for (form, n) in report.caps.iter().filter(|(_, n)| *n > 0) {
            c.add_total(form, CAPS, *n)?;
        }
        diesel::insert_into(purge_passes::table)
            .values((
                purge_passes::id.eq(Uuid::now_v7().to_string()),
                purge_passes::started_at.eq(now),
                purge_passes::duration_ms.eq(report.duration_ms),
                purge_passes::purged_rows.eq(report.total()),
            ))
            .execute(c)?;
        Ok(())
    })
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
