//! The accept path's queries and the row counts, written once for both backends.

use diesel::connection::{Connection, SimpleConnection};
use diesel::dsl::count_star;
use diesel::prelude::*;
use diesel::upsert::excluded;

use super::changes::{self, Noted};
use super::models::{Effect, NewConflict, NewDelivery, NewEffect, NewSubmission, Submission};
use super::schema::{conflicts, deliveries, duplicate_pairs, side_effects, submissions};
use super::DbConnection;
use crate::domain::{ChangeKind, ConflictStatus, DeliveryOutcome, EffectState, PairStatus};

/// Row counts for `/metrics`, tests and the benchmark's consistency check.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub submissions: i64,
    /// (kind, state, count)
    pub effects: Vec<(String, EffectState, i64)>,
    /// (outcome, count)
    pub deliveries: Vec<(DeliveryOutcome, i64)>,
    pub open_conflicts: i64,
    /// Suspected duplicate pairs awaiting a decision.
    pub open_duplicate_pairs: i64,
}

impl Stats {
    pub fn effects_total(&self) -> i64 {
        self.effects.iter().map(|(_, _, n)| n).sum()
    }

    pub fn deliveries_total(&self) -> i64 {
        self.deliveries.iter().map(|(_, n)| n).sum()
    }

    pub fn deliveries_with(&self, outcome: &str) -> i64 {
        self.deliveries.iter().filter(|(o, _)| o.as_str() == outcome).map(|(_, n)| n).sum()
    }
}

/// The queries onceform runs; the caller owns the transaction (`write_tx`).
pub trait Store: Connection + Sized {
    /// A write transaction; on SQLite it takes the write lock up front (`BEGIN IMMEDIATE`).
    fn write_tx<T, E, F>(&mut self, f: F) -> Result<T, E>
    where
        F: FnOnce(&mut Self) -> Result<T, E>,
        E: From<diesel::result::Error>;

    /// Inserts unless (form, operation_id) exists; true when this call created the row.
    fn insert_submission(&mut self, row: &NewSubmission) -> QueryResult<bool>;
    fn find_submission(&mut self, form: &str, operation_id: &str) -> QueryResult<Option<Submission>>;
    /// The submissions of `form` committed under any of `operation_ids` (in no order).
    fn find_submissions(&mut self, form: &str, operation_ids: &[&str]) -> QueryResult<Vec<Submission>>;
    fn insert_effects(&mut self, rows: &[NewEffect]) -> QueryResult<()>;
    fn effects_of(&mut self, submission_id: &str) -> QueryResult<Vec<Effect>>;
    /// Keeps one conflict row per (original, conflicting content), counting repeats.
    fn record_conflict(&mut self, row: &NewConflict) -> QueryResult<()>;
    fn insert_deliveries(&mut self, rows: &[NewDelivery]) -> QueryResult<()>;
    /// Inserts deliveries in their own transaction whose commit does not wait for the disk
    /// (PostgreSQL `synchronous_commit = off`, SQLite `synchronous = NORMAL`): a crash may
    /// lose the last such rows, never corrupt anything.
    fn insert_deliveries_lazily(&mut self, rows: &[NewDelivery]) -> QueryResult<()>;
    fn stats(&mut self) -> QueryResult<Stats>;
}

impl Store for DbConnection {
    fn write_tx<T, E, F>(&mut self, f: F) -> Result<T, E>
    where
        F: FnOnce(&mut Self) -> Result<T, E>,
        E: From<diesel::result::Error>,
    {
        self.write_transaction(f)
    }

    fn insert_submission(&mut self, row: &NewSubmission) -> QueryResult<bool> {
        // With its change row (the feed's `accepted`), in the caller's transaction.
        super::changes::atomically(self, |c| {
            let n = c.execute_native(
                diesel::insert_into(submissions::table)
                    .values(row)
                    .on_conflict((submissions::form, submissions::operation_id))
                    .do_nothing(),
            )?;
            if n == 1 {
                changes::record(c, &[Noted::of(ChangeKind::Accepted, &row.id)], row.received_at)?;
            }
            Ok(n == 1)
        })
    }

    fn find_submission(&mut self, form: &str, operation_id: &str) -> QueryResult<Option<Submission>> {
        submissions::table
            .filter(submissions::form.eq(form))
            .filter(submissions::operation_id.eq(operation_id))
            .select(Submission::as_select())
            .first(self)
            .optional()
    }

    fn find_submissions(&mut self, form: &str, operation_ids: &[&str]) -> QueryResult<Vec<Submission>> {
        match self {
            // One statement (kept prepared) for them all: a round trip each costs more than
            // the read.
            DbConnection::Pg(c) => super::claim_pg::holders(c, form, operation_ids),
            // No round trip: each through the kept single-key statement.
            DbConnection::Sqlite(_) => {
                operation_ids.iter().filter_map(|op| self.find_submission(form, op).transpose()).collect()
            }
        }
    }

    fn insert_effects(&mut self, rows: &[NewEffect]) -> QueryResult<()> {
        self.insert_rows::<_, NewEffect>(side_effects::table, rows)
    }

    fn effects_of(&mut self, submission_id: &str) -> QueryResult<Vec<Effect>> {
        side_effects::table
            .filter(side_effects::submission_id.eq(submission_id))
            .order((side_effects::kind, side_effects::batch))
            .select(Effect::as_select())
            .load(self)
    }

    fn record_conflict(&mut self, row: &NewConflict) -> QueryResult<()> {
        super::changes::atomically(self, |c| {
            c.insert_conflict(row)?;
            changes::record(c, &[Noted::of(ChangeKind::Conflict, &row.submission_id)], row.last_seen_at)
        })
    }

    fn insert_deliveries(&mut self, rows: &[NewDelivery]) -> QueryResult<()> {
        self.insert_rows::<_, NewDelivery>(deliveries::table, rows)
    }

    fn insert_deliveries_lazily(&mut self, rows: &[NewDelivery]) -> QueryResult<()> {
        match self {
            DbConnection::Sqlite(_) => {
                // WAL with synchronous = NORMAL: the commit reaches the WAL but is not fsynced.
                self.batch_execute("PRAGMA synchronous = NORMAL")?;
                let inserted = self.write_tx(|c| c.insert_deliveries(rows));
                self.batch_execute("PRAGMA synchronous = FULL")?;
                inserted
            }
            DbConnection::Pg(c) => c.transaction(|c| {
                c.batch_execute("SET LOCAL synchronous_commit = off")?;
                super::deliveries_pg::insert(c, rows)
            }),
        }
    }

    fn stats(&mut self) -> QueryResult<Stats> {
        let submissions = submissions::table.select(count_star()).get_result(self)?;
        let effects = side_effects::table
            .group_by((side_effects::kind, side_effects::state))
            .select((side_effects::kind, side_effects::state, count_star()))
            .order((side_effects::kind, side_effects::state))
            .load(self)?;
        let deliveries = deliveries::table
            .group_by(deliveries::outcome)
            .select((deliveries::outcome, count_star()))
            .order(deliveries::outcome)
            .load(self)?;
        let open_conflicts = conflicts::table
            .filter(conflicts::status.eq(ConflictStatus::Open))
            .select(count_star())
            .get_result(self)?;
        let open_duplicate_pairs = duplicate_pairs::table
            .filter(duplicate_pairs::status.eq(PairStatus::Open))
            .select(count_star())
            .get_result(self)?;
        Ok(Stats { submissions, effects, deliveries, open_conflicts, open_duplicate_pairs })
    }
}

impl DbConnection {
    /// Keeps one conflict row per (original, conflicting content), counting repeats.
    fn insert_conflict(&mut self, row: &NewConflict) -> QueryResult<()> {
        self.execute_native(
            diesel::insert_into(conflicts::table)
                .values(row)
                .on_conflict((conflicts::submission_id, conflicts::fingerprint))
                .do_update()
                .set((
                    conflicts::attempts.eq(conflicts::attempts + 1),
                    conflicts::last_seen_at.eq(excluded(conflicts::last_seen_at)),
                )),
        )?;
        Ok(())
    }
}
