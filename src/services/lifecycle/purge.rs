//! Retention: after a form's `content` window a submission becomes a tombstone (fields,
//! email and phone digests, the content of its conflicts gone; key, fingerprint, result body
//! and effect records kept); after `keys` the tombstone goes too. A webhook source's events
//! go the same way (counted under `RecordKind::source_scope`): after `content` their
//! bodies and their conflicts' go and the quarantine's deliveries are deleted; after `keys`
//! the events go with their handlers' records and delivery rows. Batches of bounded size,
//! each its own short transaction, so the accept path never waits for more than one; rows
//! are claimed with `FOR NO KEY UPDATE SKIP LOCKED` (PostgreSQL) and changed only while still
//! due, so several processes purging at once purge each row once.
//!
//! The same pass deletes the change feed's oldest rows (`[purge] changes_days`,
//! `services::changes::purge`) and the confirmation cap's rows (a recipient's keyed digest and when
//! they were last sent a confirmation: personal data) once their window has passed and they
//! no longer cap anything.

use std::time::Instant;

use chrono::NaiveDateTime;

use crate::config::retention::scopes;
use crate::config::Config;
use crate::db::hooks::HookStore;
use crate::db::purge::{
    delete_cap_rows, delete_events, delete_submissions, pick_caps, pick_content, pick_event_content,
    pick_events, pick_quarantined, pick_tombstones, record_pass, relax_commit, tombstone, tombstone_events,
    ConsentFields, TotalStore,
};
use crate::db::{DbError, Pool, Writes, LOCK_POLL};
use crate::services::files::{release, Files, IN_FLIGHT};

/// The kind under which deleted confirmation-cap rows are counted (`/metrics`).
pub const CAPS: &str = "confirmation_caps";

/// What one pass purged: (form, kind, rows) with kind `content`, `keys` or (a webhook
/// source's, under its `RecordKind::source_scope`) `quarantine`; and apart, as they are not submissions, the
/// confirmation-cap rows deleted by form.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PurgeReport {
    pub purged: Vec<(String, &'static str, i64)>,
    pub caps: Vec<(String, i64)>,
    /// Rows of the change feed deleted (`[purge] changes_days`).
    pub changes: i64,
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

/// One retention pass over every form and webhook source with a window; recorded for `/metrics`.
pub fn run_pass(writes: &Writes, config: &Config, now: NaiveDateTime) -> Result<PurgeReport, DbError> {
    let started = Instant::now();
    let mut report = PurgeReport::default();
    let batch = config.purge.batch;
    let blobs = Files::stored(&config.server, &config.database);
    let consent = config.consent_fields();
    for scope in scopes(config) {
        let name = &scope.form;
        if let Some(content) = scope.retention.content {
            let before = now - content.duration();
            let n = match scope.hook_source {
                Some(source) => {
                    drain(writes, || purge_event_content(writes, source, before, now, batch), batch)?
                }
                None => drain(
                    writes,
                    || purge_content(writes, &blobs, &consent, name, before, now, batch),
                    batch,
                )?,
            };
            report.purged.push((name.clone(), "content", n));
            if let Some(source) = scope.hook_source {
                let n = drain(writes, || purge_quarantined(writes, source, before, batch), batch)?;
                report.purged.push((name.clone(), "quarantine", n));
            }
        }
        if let Some(keys) = scope.retention.keys {
            let before = now - keys.duration();
            let n = match scope.hook_source {
                Some(source) => drain(writes, || delete_old_events(writes, source, before, batch), batch)?,
                None => drain(writes, || delete_tombstones(writes, name, before, batch), batch)?,
            };
            report.purged.push((name.clone(), "keys", n));
        }
        if let Some(form) = config.forms.get(name) {
            let window = chrono::Duration::minutes(i64::from(form.confirmation_window_minutes));
            let n = drain(writes, || delete_caps(writes, name, now - window, batch), batch)?;
            report.caps.push((name.clone(), n));
        }
    }
    // The change feed's front, older than `changes_days` (counted apart: not submissions).
    let before = now - chrono::Duration::days(i64::from(config.purge.changes_days));
    report.changes = crate::services::changes::purge(writes, before, batch)?;
    // Uploads past their hour, and blobs nothing names (a refused post's, a crash's).
    crate::services::files::sweep(&writes.pool, &blobs, now)?;
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

/// One batch of content purges, their files deleted unless still in use, their consent
/// answers kept; the rows this call purged.
pub fn purge_content(
    writes: &Writes,
    blobs: &Files,
    consent: &ConsentFields,
    form: &str,
    before: NaiveDateTime,
    now: NaiveDateTime,
    batch: i64,
) -> Result<i64, DbError> {
    let form = form.to_string();
    let consent: ConsentFields = consent.get(&form).map(|f| (form.clone(), f.clone())).into_iter().collect();
    let done = writes.run(move |c| {
        relax_commit(c)?;
        let ids = pick_content(c, &form, before, batch)?;
        if ids.is_empty() {
            return Ok(None);
        }
        Ok(Some(tombstone(c, &ids, &consent, now)?))
    })?;
    let Some(done) = done else { return Ok(0) };
    release(&writes.pool, blobs, done.blobs, IN_FLIGHT)?;
    Ok(done.submissions as i64)
}

/// One batch of a webhook source's event bodies purged; the events this call purged.
pub fn purge_event_content(
    writes: &Writes,
    source: &str,
    before: NaiveDateTime,
    now: NaiveDateTime,
    batch: i64,
) -> Result<i64, DbError> {
    let source = source.to_string();
    writes.run(move |c| {
        relax_commit(c)?;
        let ids = pick_event_content(c, &source, before, batch)?;
        if ids.is_empty() {
            return Ok(0);
        }
        Ok(tombstone_events(c, &ids, now)? as i64)
    })
}

/// One batch of a webhook source's events deleted after `keys`, with everything naming them.
pub fn delete_old_events(
    writes: &Writes,
    source: &str,
    before: NaiveDateTime,
    batch: i64,
) -> Result<i64, DbError> {
    let source = source.to_string();
    writes.run(move |c| {
        relax_commit(c)?;
        let ids = pick_events(c, &source, before, batch)?;
        if ids.is_empty() {
            return Ok(0);
        }
        Ok(delete_events(c, &ids)?)
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
        let n = delete_submissions(c, &ids)?;
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
        let n = delete_cap_rows(c, &form, &digests, before)?;
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
        record_pass(c, now, report.duration_ms, report.total())?;
        Ok(())
    })
}
