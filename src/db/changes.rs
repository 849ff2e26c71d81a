//! The change feed's rows (`changes`): written in the transaction that makes each change,
//! read in feed order, purged from the front. `services::changes` says what the order means
//! and what a reader may rely on.
//!
//! Each row's position is (`xid`, `seq`):
//! - SQLite: `xid` is 0 and `seq` is the last position plus one, taken under the write lock
//!   (one writer at a time commits, so positions are commit order and have no gaps);
//! - PostgreSQL: `xid` is the writing transaction's ID (`pg_current_xact_id()`, 64 bits, never
//!   reused) and `seq` orders the rows of that transaction (this process's counter: a
//!   transaction runs on one connection of one process). A reader serves only rows whose
//!   transaction is below the oldest one still running (`HORIZON`).
//!
//! The form of a change is its submission's, looked up in the same statement; a change of a
//! submission that does not exist (an inbound event's record) writes nothing.

use std::sync::atomic::{AtomicI64, Ordering};

use chrono::NaiveDateTime;
use diesel::connection::{Connection, TransactionManager};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Nullable, Text, Timestamp};
use diesel::sqlite::Sqlite;

use super::prepared::Prepared;
use super::schema::side_effects;
use super::DbConnection;
use crate::domain::{ChangeKind, EffectState};

/// A position in the feed: rows are read in (`xid`, `seq`) order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    pub xid: i64,
    pub seq: i64,
}

/// The writing transaction's ID on PostgreSQL, as `BIGINT`.
pub const PG_XID: &str = "pg_current_xact_id()::text::bigint";

/// PostgreSQL: the oldest transaction ID still running when the statement's snapshot was
/// taken. Every transaction below it has ended, so no row can appear below it any more.
pub const HORIZON: &str = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint";

/// SQLite: the next `seq` (under the write lock). Never below the feed's start, even when
/// retention emptied the table.
const SQLITE_NEXT: &str = "SELECT COALESCE((SELECT MAX(seq) FROM changes WHERE xid = 0), \
     (SELECT seq FROM changes_start WHERE id = 'feed'), 0) + 1 AS seq";

/// SQLite: one row at position (0, `$1`); none when its submission does not exist.
const SQLITE_INSERT: &str =
    "INSERT INTO changes (xid, seq, kind, submission_id, form, subject_id, subject_kind, state, at) \
     SELECT 0, $1, $2, s.id, s.form, $3, $4, $5, $6 FROM submissions s WHERE s.id = $7";

/// The id of `changes_start`'s one row.
const START: &str = "feed";

/// PostgreSQL: the next `seq` of this process (see the module's doc).
static NEXT_SEQ: AtomicI64 = AtomicI64::new(1);

/// PostgreSQL: `n` consecutive `seq`s after all this process gave before; the first is
/// returned (the rows take `first`, `first + 1`, …, or `first - 1 + ordinality`).
pub fn pg_seqs(n: usize) -> i64 {
    NEXT_SEQ.fetch_add(i64::try_from(n.max(1)).unwrap_or(i64::MAX), Ordering::Relaxed)
}

/// One change of a submission to record; the form is the submission's.
#[derive(Debug, Clone, Copy)]
pub struct Noted<'a> {
    pub kind: ChangeKind,
    pub submission_id: &'a str,
    /// The effect record, the duplicate pair.
    pub subject_id: Option<&'a str>,
    /// The effect record's kind.
    pub subject_kind: Option<&'a str>,
    /// The effect record's new state, the pair's new status.
    pub state: Option<&'a str>,
}

impl<'a> Noted<'a> {
    /// A change with no subject (accepted, conflict, erased, deleted).
    pub fn of(kind: ChangeKind, submission_id: &'a str) -> Noted<'a> {
        Noted { kind, submission_id, subject_id: None, subject_kind: None, state: None }
    }
}

/// A side-effect record an update moved (its `RETURNING` columns: `MOVED`).
#[derive(Debug, Clone, Queryable)]
pub struct Moved {
    pub id: String,
    pub submission_id: Option<String>,
    pub kind: String,
    pub state: EffectState,
}

/// What an update of `side_effects` returns for `Moved`.
pub type MovedColumns =
    (side_effects::id, side_effects::submission_id, side_effects::kind, side_effects::state);
pub const MOVED: MovedColumns =
    (side_effects::id, side_effects::submission_id, side_effects::kind, side_effects::state);

/// Runs `f` in the caller's transaction, or in a write transaction of its own when there is
/// none: a change and its row commit together.
pub fn atomically<T>(
    c: &mut DbConnection,
    f: impl FnOnce(&mut DbConnection) -> QueryResult<T>,
) -> QueryResult<T> {
    type Manager = <DbConnection as Connection>::TransactionManager;
    if matches!(Manager::transaction_manager_status_mut(c).transaction_depth(), Ok(Some(_))) {
        f(c)
    } else {
        c.write_transaction(f)
    }
}

/// Records `rows` at `at`, in the caller's transaction.
pub fn record<'a>(c: &mut DbConnection, rows: &[Noted<'a>], at: NaiveDateTime) -> QueryResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    match c {
        DbConnection::Pg(pg) => {
            let texts =
                |f: for<'r> fn(&'r Noted<'a>) -> Option<&'a str>| rows.iter().map(f).collect::<Vec<_>>();
            Prepared::new(format!(
                "INSERT INTO changes (xid, seq, kind, submission_id, form, subject_id, subject_kind, state, at) \
                 SELECT {PG_XID}, $1 + x.n - 1, x.kind, s.id, s.form, x.subject_id, x.subject_kind, x.state, $2 \
                 FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) WITH ORDINALITY \
                 AS x(kind, sub, subject_id, subject_kind, state, n) JOIN submissions s ON s.id = x.sub"
            ))
            .bind::<BigInt, _>(pg_seqs(rows.len()))
            .bind::<Timestamp, _>(at)
            .bind::<Array<Text>, _>(rows.iter().map(|r| r.kind.as_str()).collect::<Vec<_>>())
            .bind::<Array<Text>, _>(rows.iter().map(|r| r.submission_id).collect::<Vec<_>>())
            .bind::<Array<Nullable<Text>>, _>(texts(|r| r.subject_id))
            .bind::<Array<Nullable<Text>>, _>(texts(|r| r.subject_kind))
            .bind::<Array<Nullable<Text>>, _>(texts(|r| r.state))
            .execute(pg)?;
        }
        DbConnection::Sqlite(sqlite) => {
            // No round trip: kept statements, the next position read once (an insert whose
            // SELECT read `changes` itself was copied through a temporary table each time).
            #[derive(QueryableByName)]
            struct Next {
                #[diesel(sql_type = BigInt)]
                seq: i64,
            }
            let mut seq = Prepared::<Sqlite>::new(SQLITE_NEXT).get_result::<Next>(sqlite)?.seq;
            for r in rows {
                let written = Prepared::<Sqlite>::new(SQLITE_INSERT)
                    .bind::<BigInt, _>(seq)
                    .bind::<Text, _>(r.kind.as_str())
                    .bind::<Nullable<Text>, _>(r.subject_id)
                    .bind::<Nullable<Text>, _>(r.subject_kind)
                    .bind::<Nullable<Text>, _>(r.state)
                    .bind::<Timestamp, _>(at)
                    .bind::<Text, _>(r.submission_id)
                    .execute(sqlite)?;
                seq += i64::from(written > 0); // positions without gaps
            }
        }
    }
    Ok(())
}

/// Records the moves of `moved` that belong to submissions (an inbound event's records are
/// not in the feed); how many records moved.
pub fn record_moved(c: &mut DbConnection, moved: &[Moved], at: NaiveDateTime) -> QueryResult<usize> {
    let rows: Vec<Noted<'_>> = moved
        .iter()
        .filter_map(|m| {
            Some(Noted {
                kind: ChangeKind::EffectState,
                submission_id: m.submission_id.as_deref()?,
                subject_id: Some(&m.id),
                subject_kind: Some(&m.kind),
                state: Some(m.state.as_str()),
            })
        })
        .collect();
    record(c, &rows, at)?;
    Ok(moved.len())
}

/// PostgreSQL: the `accepted` rows as a CTE of the one-statement accept (`claim_pg`,
/// `claim_many_pg`), a row for each submission `from` gives as `s` (nothing when the claim
/// failed); `seq` is the expression of its `seq`.
pub fn pg_accepted_cte(seq: &str, from: &str) -> String {
    format!(
        "ch AS (INSERT INTO changes (xid, seq, kind, submission_id, form, at) \
         SELECT {PG_XID}, {seq}, '{}', s.id, s.form, s.received_at FROM {from})",
        ChangeKind::Accepted.as_str()
    )
}

/// One stored row of the feed.
#[derive(Debug, Clone, QueryableByName)]
pub struct Row {
    #[diesel(sql_type = BigInt)]
    pub xid: i64,
    #[diesel(sql_type = BigInt)]
    pub seq: i64,
    #[diesel(sql_type = Text)]
    pub kind: ChangeKind,
    #[diesel(sql_type = Text)]
    pub submission_id: String,
    #[diesel(sql_type = Text)]
    pub form: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub subject_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub subject_kind: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub state: Option<String>,
    #[diesel(sql_type = Timestamp)]
    pub at: NaiveDateTime,
}

impl Row {
    pub fn position(&self) -> Position {
        Position { xid: self.xid, seq: self.seq }
    }
}

/// The columns of `Row`.
const COLUMNS: &str = "xid, seq, kind, submission_id, form, subject_id, subject_kind, state, at";

/// Up to `limit` rows after `from`, in feed order; on PostgreSQL only rows below the
/// horizon (final: nothing can be committed before them any more). One statement, one
/// snapshot; the primary key (`xid`, `seq`) serves it.
pub fn after(c: &mut DbConnection, from: Position, limit: i64) -> QueryResult<Vec<Row>> {
    match c {
        DbConnection::Pg(pg) => Prepared::new(format!(
            "SELECT {COLUMNS} FROM changes WHERE (xid, seq) > ($1, $2) AND xid < {HORIZON} \
             ORDER BY xid, seq LIMIT $3"
        ))
        .bind::<BigInt, _>(from.xid)
        .bind::<BigInt, _>(from.seq)
        .bind::<BigInt, _>(limit)
        .load(pg),
        DbConnection::Sqlite(sqlite) => Prepared::<Sqlite>::new(format!(
            "SELECT {COLUMNS} FROM changes WHERE (xid, seq) > ($1, $2) ORDER BY xid, seq LIMIT $3"
        ))
        .bind::<BigInt, _>(from.xid)
        .bind::<BigInt, _>(from.seq)
        .bind::<BigInt, _>(limit)
        .load(sqlite),
    }
}

#[derive(QueryableByName)]
struct Key {
    #[diesel(sql_type = BigInt)]
    xid: i64,
    #[diesel(sql_type = BigInt)]
    seq: i64,
}

/// Where the feed starts: the last position retention purged ((0, 0) before any purge). A
/// cursor before it may have missed purged rows.
pub fn start(c: &mut DbConnection) -> QueryResult<Position> {
    let key: Option<Key> =
        diesel::sql_query("SELECT xid, seq FROM changes_start WHERE id = 'feed'").get_result(c).optional()?;
    Ok(key.map(|k| Position { xid: k.xid, seq: k.seq }).unwrap_or_default())
}

#[derive(QueryableByName)]
struct Dated {
    #[diesel(sql_type = BigInt)]
    xid: i64,
    #[diesel(sql_type = BigInt)]
    seq: i64,
    #[diesel(sql_type = Timestamp)]
    at: NaiveDateTime,
}

/// Deletes up to `limit` rows from the front of the feed, in feed order, while they were
/// written before `before` (a prefix: the first younger row stops it), and moves the start
/// to the last one deleted. On PostgreSQL only final rows (below the horizon). The rows
/// deleted; the caller owns the transaction.
pub fn purge_front(c: &mut DbConnection, before: NaiveDateTime, limit: i64) -> QueryResult<usize> {
    let horizon = match c {
        DbConnection::Pg(_) => format!("WHERE xid < {HORIZON} "),
        DbConnection::Sqlite(_) => String::new(),
    };
    let front: Vec<Dated> = diesel::sql_query(format!(
        "SELECT xid, seq, at FROM changes {horizon}ORDER BY xid, seq LIMIT {limit}"
    ))
    .load(c)?;
    let due = front.iter().take_while(|r| r.at < before).count();
    let Some(last) = due.checked_sub(1).and_then(|i| front.get(i)) else { return Ok(0) };
    move_start(c, Position { xid: last.xid, seq: last.seq })
}

/// Deletes every row up to `last` and moves the start there (never back: another process's
/// purge may have gone further).
fn move_start(c: &mut DbConnection, last: Position) -> QueryResult<usize> {
    let start = "INSERT INTO changes_start (id, xid, seq) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE \
         SET xid = excluded.xid, seq = excluded.seq \
         WHERE (changes_start.xid, changes_start.seq) < (excluded.xid, excluded.seq)";
    match c {
        DbConnection::Pg(pg) => {
            let n = Prepared::new("DELETE FROM changes WHERE (xid, seq) <= ($1, $2)")
                .bind::<BigInt, _>(last.xid)
                .bind::<BigInt, _>(last.seq)
                .execute(pg)?;
            Prepared::new(start)
                .bind::<Text, _>(START)
                .bind::<BigInt, _>(last.xid)
                .bind::<BigInt, _>(last.seq)
                .execute(pg)?;
            Ok(n)
        }
        DbConnection::Sqlite(sqlite) => {
            let n = Prepared::<Sqlite>::new("DELETE FROM changes WHERE (xid, seq) <= ($1, $2)")
                .bind::<BigInt, _>(last.xid)
                .bind::<BigInt, _>(last.seq)
                .execute(sqlite)?;
            Prepared::<Sqlite>::new(start)
                .bind::<Text, _>(START)
                .bind::<BigInt, _>(last.xid)
                .bind::<BigInt, _>(last.seq)
                .execute(sqlite)?;
            Ok(n)
        }
    }
}

#[cfg(test)]
mod tests {
    /// Every update of a record's state in `db/` (a `Move` applied: `.eq(mv.to())` or
    /// `Released::new(`) records what it moved: a path without its row would be a change the
    /// feed skips.
    #[test]
    fn every_state_update_in_db_records_its_change() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/db");
        let mut files = vec![root];
        let mut checked = 0;
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            let moves = code.matches(".eq(mv.to())").count() + code.matches("Released::new(").count();
            let recorded = code.matches("record_moved(").count();
            assert!(recorded >= moves, "{}: {moves} state updates, {recorded} recorded", path.display());
            checked += moves;
        }
        assert!(checked >= 9, "the state updates were found ({checked})");
    }
}
