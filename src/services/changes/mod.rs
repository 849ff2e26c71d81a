//! The change feed (`GET /api/v1/changes?cursor=`): every change of a submission, in one
//! order, with a cursor a consumer stores; resuming from it never skips or repeats a change,
//! across restarts of either side and across several processes on one database.
//!
//! A change is written in the transaction that makes it (`db::changes`): an acceptance, a
//! conflicting retry, each state a side-effect record of a submission moves to (a worker's
//! claim and result, a lookup, a lease that ran out, an admin's action, a cancellation by
//! retention, erasure, the recipient cap or a duplicate decision, a replay's new record), a
//! duplicate decision or its undoing, the content's erasure (a tombstone remains) and the
//! submission's deletion. It carries no field value: what changed, of which submission and
//! form, and when.
//!
//! **The order is transaction order, and a served change is final.**
//! - SQLite: one writer at a time; each row takes the next position under the write lock,
//!   so positions are commit order.
//! - PostgreSQL: transactions commit in any order, so a sequence number could be taken by a
//!   transaction that commits after a reader passed it. Each row carries its transaction's
//!   ID instead, and a reader serves only rows of transactions below the oldest one still
//!   running (`pg_snapshot_xmin`): every transaction that could still add a row there has
//!   ended. Rows are served by (transaction ID, row of the transaction), so nothing
//!   committed later can sort before a served cursor. The price: the feed waits for the
//!   oldest open writing transaction of the server (a long one delays it, never reorders
//!   it). The changes of one transaction are served together, in the order written.
//!
//! Retention (`[purge] changes_days`) deletes the feed's front; a cursor from before it is
//! `ReadError::Expired` (the consumer starts over from a full copy).

mod cursor;

use chrono::NaiveDateTime;
use serde::Serialize;

pub use cursor::{BadCursor, Cursor};

use crate::db::changes::{self, Row};
use crate::db::{DbConnection, DbError, Pool};
use crate::domain::{ChangeKind, EffectId, EffectState, PairStatus, RecordKind, SubmissionId};

/// The most changes one read returns.
pub const MAX_LIMIT: u32 = 500;

/// What changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum What {
    /// The submission was accepted (its effect records start PENDING, or CANCELLED when the
    /// recipient cap rules the confirmation out).
    Accepted,
    /// A retry with other content under its key was refused; the submission is unchanged.
    Conflict,
    /// A side-effect record of the submission is now in `state` (a replay's new record
    /// appears here first, PENDING).
    EffectState {
        effect_id: EffectId,
        #[serde(serialize_with = "record_kind")]
        kind: RecordKind,
        state: EffectState,
    },
    /// A duplicate pair naming the submission as the later one was decided, or reopened
    /// (`status` open).
    Decision {
        pair_id: String,
        #[serde(serialize_with = "pair_status")]
        status: PairStatus,
    },
    /// The submission's content is gone (retention or erasure); its tombstone remains.
    Erased,
    /// The submission is gone altogether (retention of its key).
    Deleted,
}

/// One change, in feed order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The position just after this change: resuming from it reads what follows.
    pub cursor: Cursor,
    pub submission_id: SubmissionId,
    pub form: String,
    /// When the change was made (the acceptance's time for `accepted`).
    pub at: NaiveDateTime,
    #[serde(flatten)]
    pub what: What,
}

/// One read: the changes after the cursor, and the cursor to read on from (the last
/// change's, or the one given when there was none yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub changes: Vec<Change>,
    pub next: Cursor,
}

/// Why a read did not return changes.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The cursor is not one this feed gave (altered, truncated): 400.
    #[error(transparent)]
    BadCursor(#[from] BadCursor),
    /// Retention purged changes after the cursor: resuming would skip them (410).
    #[error("the cursor is older than the oldest change kept")]
    Expired,
    #[error(transparent)]
    Db(#[from] DbError),
}

/// The changes after `cursor` (from the start of the feed without one), at most `limit`
/// (1 to `MAX_LIMIT`). Blocks: call it from a blocking thread.
pub fn read(pool: &Pool, cursor: Option<&Cursor>, limit: u32) -> Result<Page, ReadError> {
    let mut c = pool.get()?;
    read_on(&mut c, cursor, limit)
}

/// `read` on a connection.
pub fn read_on(c: &mut DbConnection, cursor: Option<&Cursor>, limit: u32) -> Result<Page, ReadError> {
    let limit = i64::from(limit.clamp(1, MAX_LIMIT));
    let from = match cursor {
        Some(cursor) => cursor.position(),
        None => changes::start(c).map_err(DbError::from)?,
    };
    let rows = changes::after(c, from, limit).map_err(DbError::from)?;
    // Read after the rows: a purge that deleted rows after `from` before they were read
    // has moved the start past it by now (it commits both at once).
    if cursor.is_some() && from < changes::start(c).map_err(DbError::from)? {
        return Err(ReadError::Expired);
    }
    let changes = rows.into_iter().map(change).collect::<Result<Vec<_>, _>>()?;
    let next = changes.last().map_or_else(|| Cursor::at(from), |c| c.cursor.clone());
    Ok(Page { changes, next })
}

/// Deletes the feed's changes made before `before`, from its front, in batches of `batch`
/// (each its own transaction); how many went. A cursor from before them is then expired.
pub fn purge(writes: &crate::db::Writes, before: NaiveDateTime, batch: i64) -> Result<i64, DbError> {
    let mut total = 0;
    loop {
        let n = writes.run(move |c| Ok(changes::purge_front(c, before, batch)?))?;
        total += i64::try_from(n).unwrap_or(i64::MAX);
        if i64::try_from(n).unwrap_or(i64::MAX) < batch {
            return Ok(total);
        }
    }
}

fn change(row: Row) -> Result<Change, DbError> {
    let bad =
        |what: &str| DbError::Query(diesel::result::Error::DeserializationError(what.to_string().into()));
    let what = match row.kind {
        ChangeKind::Accepted => What::Accepted,
        ChangeKind::Conflict => What::Conflict,
        ChangeKind::Erased => What::Erased,
        ChangeKind::Deleted => What::Deleted,
        ChangeKind::EffectState => What::EffectState {
            effect_id: row.subject_id.clone().ok_or_else(|| bad("a change of state names no record"))?.into(),
            kind: RecordKind::parse(row.subject_kind.as_deref().unwrap_or_default()).map_err(|e| bad(&e))?,
            state: row
                .state
                .as_deref()
                .and_then(EffectState::parse)
                .ok_or_else(|| bad("an unknown state"))?,
        },
        ChangeKind::Decision => What::Decision {
            pair_id: row.subject_id.clone().ok_or_else(|| bad("a decision names no pair"))?,
            status: row
                .state
                .as_deref()
                .and_then(PairStatus::parse)
                .ok_or_else(|| bad("an unknown status"))?,
        },
    };
    Ok(Change {
        cursor: Cursor::at(row.position()),
        submission_id: row.submission_id.into(),
        form: row.form,
        at: row.at,
        what,
    })
}

fn record_kind<S: serde::Serializer>(kind: &RecordKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind.as_str())
}

fn pair_status<S: serde::Serializer>(status: &PairStatus, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(status.as_str())
}
