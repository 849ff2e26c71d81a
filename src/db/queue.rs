//! The side-effect queue: claim under a lease, finish, expire leases, reconcile UNKNOWN.
//! Every state change is a conditional update, so a worker that lost its lease, or a
//! stale lookup, can never move a record another worker owns; each writes its change feed
//! rows (`changes`) in the same transaction.

use chrono::NaiveDateTime;
use diesel::dsl::{count_star, min};
use diesel::prelude::*;
use diesel::sql_types::{Array, Nullable, Text, Timestamp};

use super::models::{JobRow, NewAttempt, Transition};
use super::prepared::Prepared;
use super::schema::{effect_attempts, inbound_events, side_effects, submissions};
use super::{changes, owned_by, DbConnection, Store};
use crate::domain::transitions::{IllegalMove, Move};
use crate::domain::{AttemptOutcome, ChangeKind, EffectState, RecordKind};

const PENDING: EffectState = EffectState::Pending;
const UNKNOWN: EffectState = EffectState::Unknown;

/// An illegal transition is refused before anything is written.
pub(crate) fn refused(e: IllegalMove) -> diesel::result::Error {
    diesel::result::Error::QueryBuilderError(Box::new(e))
}

/// The move recording `t` from `from`, if the state machine allows it.
fn checked(from: &'static [EffectState], t: &Transition) -> QueryResult<Move> {
    Move::new(from, t.state).map_err(refused)
}

/// Nothing is left to send: the effects of these submissions or events still waiting are
/// cancelled (`why`), their records kept.
pub fn cancel_pending(
    c: &mut DbConnection,
    ids: &[String],
    now: NaiveDateTime,
    why: &str,
) -> QueryResult<usize> {
    let mv = Move::CANCEL_PENDING;
    let from: Vec<&str> = mv.from().iter().map(|s| s.as_str()).collect();
    // The state is compared as `state || ''`, which no index serves: the batch's ids pick the
    // rows (unique index by submission). With `state = 'PENDING'`, statistics taken before a
    // backlog built up (workers stopped, a CRM down) made PostgreSQL walk every PENDING
    // record through `side_effects_due` instead: 340 ms a batch at 900,000 of them.
    changes::atomically(c, |c| {
        let moved = diesel::update(
            side_effects::table.filter(owned_by(ids)).filter(side_effects::state.concat("").eq_any(from)),
        )
        .set((
            side_effects::state.eq(mv.to()),
            side_effects::last_error.eq(Some(why)),
            side_effects::updated_at.eq(now),
        ))
        .returning(changes::MOVED)
        .get_results(c)?;
        changes::record_moved(c, &moved, now)
    })
}

/// Figures for `/metrics` about the queue.
#[derive(Debug, Clone, Default)]
pub struct QueueStats {
    pub oldest_pending: Option<NaiveDateTime>,
    /// (outcome, count) over all recorded attempts and lookups.
    pub attempts: Vec<(AttemptOutcome, i64)>,
}

pub trait Queue: Store {
    /// Leases up to `limit` due PENDING records to `owner` (state SENDING, attempts + 1).
    fn claim_due(
        &mut self,
        owner: &str,
        now: NaiveDateTime,
        lease_until: NaiveDateTime,
        limit: i64,
    ) -> QueryResult<Vec<JobRow>>;

    /// Takes up to `limit` due UNKNOWN records of `kinds` for a lookup, pushing their
    /// `next_attempt_at` to `retry_at` so that no other process looks them up meanwhile.
    fn take_unknown_due(
        &mut self,
        kinds: &[RecordKind],
        now: NaiveDateTime,
        retry_at: NaiveDateTime,
        limit: i64,
    ) -> QueryResult<Vec<JobRow>>;

    /// Applies `t` if the record is still SENDING under `owner`'s lease (or was marked
    /// UNKNOWN after the lease ran out); false when someone else owns it now.
    fn finish(&mut self, id: &str, owner: &str, t: &Transition, now: NaiveDateTime) -> QueryResult<bool>;

    /// `finish` for many records at once (one statement on PostgreSQL); returns the IDs
    /// whose lease was no longer `owner`'s, which were left alone.
    fn finish_all(
        &mut self,
        done: &[(&str, &Transition)],
        owner: &str,
        now: NaiveDateTime,
    ) -> QueryResult<Vec<String>>;

    /// Applies a lookup's result if the record is still UNKNOWN.
    fn resolve_unknown(&mut self, id: &str, t: &Transition, now: NaiveDateTime) -> QueryResult<bool>;

    /// SENDING records whose lease ran out become UNKNOWN (never PENDING).
    fn expire_leases(&mut self, now: NaiveDateTime) -> QueryResult<usize>;

    fn insert_attempt(&mut self, row: &NewAttempt) -> QueryResult<()>;
    /// Inserts many attempts with one statement.
    fn insert_attempts(&mut self, rows: &[NewAttempt]) -> QueryResult<()>;
    fn queue_stats(&mut self) -> QueryResult<QueueStats>;
}

#[derive(QueryableByName)]
struct Updated {
    #[diesel(sql_type = Text)]
    id: String,
}

/// Loads claimed records joined with their owners (a submission or an inbound event).
fn jobs_by_id(c: &mut DbConnection, ids: &[String]) -> QueryResult<Vec<JobRow>> {
    side_effects::table
        .left_join(submissions::table)
        .left_join(inbound_events::table)
        .filter(side_effects::id.eq_any(ids))
        .select((
            side_effects::id,
            side_effects::kind,
            side_effects::batch,
            side_effects::effect_key,
            side_effects::state,
            side_effects::attempts,
            (
                submissions::id,
                submissions::form,
                submissions::fields_json,
                submissions::received_at,
                submissions::journey_id,
                submissions::locale,
                submissions::route,
                submissions::duplicate_of,
            )
                .nullable(),
            (
                inbound_events::id,
                inbound_events::source,
                inbound_events::event_id,
                inbound_events::body,
                inbound_events::content_type,
                inbound_events::first_received_at,
            )
                .nullable(),
        ))
        .order(side_effects::next_attempt_at)
        .load(c)
}

/// The columns a `Transition` sets; the lease is released.
#[derive(AsChangeset)]
#[diesel(table_name = side_effects, treat_none_as_null = true)]
struct Released<'a> {
    state: EffectState,
    next_attempt_at: NaiveDateTime,
    provider_ref: Option<&'a str>,
    last_error: Option<&'a str>,
    lease_owner: Option<&'a str>,
    lease_expires_at: Option<NaiveDateTime>,
    updated_at: NaiveDateTime,
}

impl<'a> Released<'a> {
    fn new(mv: Move, t: &'a Transition, now: NaiveDateTime) -> Self {
        Released {
            state: mv.to(),
            next_attempt_at: t.next_attempt_at,
            provider_ref: t.provider_ref.as_deref(),
            last_error: t.last_error.as_deref(),
            lease_owner: None,
            lease_expires_at: None,
            updated_at: now,
        }
    }
}

impl Queue for DbConnection {
    fn claim_due(
        &mut self,
        owner: &str,
        now: NaiveDateTime,
        lease_until: NaiveDateTime,
        limit: i64,
    ) -> QueryResult<Vec<JobRow>> {
        self.write_tx(|c| {
            let due = side_effects::table
                .filter(side_effects::state.eq(PENDING))
                .filter(side_effects::held.eq(false))
                .filter(side_effects::next_attempt_at.le(now))
                .order(side_effects::next_attempt_at)
                .limit(limit)
                .select(side_effects::id);
            // PostgreSQL: concurrent workers skip each other's rows; SQLite: the write
            // transaction already excludes other writers.
            let ids: Vec<String> = match c {
                DbConnection::Pg(pg) => due.for_update().skip_locked().load(pg)?,
                DbConnection::Sqlite(sqlite) => due.load(sqlite)?,
            };
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let mv = Move::CLAIM;
            let moved = diesel::update(
                side_effects::table
                    .filter(side_effects::id.eq_any(&ids))
                    .filter(side_effects::state.eq_any(mv.from())),
            )
            .set((
                side_effects::state.eq(mv.to()),
                side_effects::lease_owner.eq(owner),
                side_effects::lease_expires_at.eq(lease_until),
                side_effects::attempts.eq(side_effects::attempts + 1),
                side_effects::updated_at.eq(now),
            ))
            .returning(changes::MOVED)
            .get_results(c)?;
            changes::record_moved(c, &moved, now)?;
            jobs_by_id(c, &ids)
        })
    }

    fn take_unknown_due(
        &mut self,
        kinds: &[RecordKind],
        now: NaiveDateTime,
        retry_at: NaiveDateTime,
        limit: i64,
    ) -> QueryResult<Vec<JobRow>> {
        self.write_tx(|c| {
            let due = side_effects::table
                .filter(side_effects::state.eq(UNKNOWN))
                .filter(side_effects::kind.eq_any(kinds))
                .filter(side_effects::next_attempt_at.le(now))
                .order(side_effects::next_attempt_at)
                .limit(limit)
                .select(side_effects::id);
            let ids: Vec<String> = match c {
                DbConnection::Pg(pg) => due.for_update().skip_locked().load(pg)?,
                DbConnection::Sqlite(sqlite) => due.load(sqlite)?,
            };
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            diesel::update(side_effects::table.filter(side_effects::id.eq_any(&ids)))
                .set(side_effects::next_attempt_at.eq(retry_at))
                .execute(c)?;
            jobs_by_id(c, &ids)
        })
    }

    fn finish(&mut self, id: &str, owner: &str, t: &Transition, now: NaiveDateTime) -> QueryResult<bool> {
        let mv = checked(Move::AFTER_ATTEMPT, t)?;
        let n = changes::atomically(self, |c| {
            let moved = diesel::update(
                side_effects::table
                    .filter(side_effects::id.eq(id))
                    .filter(side_effects::lease_owner.eq(owner))
                    .filter(side_effects::state.eq_any(mv.from())),
            )
            .set(Released::new(mv, t, now))
            .returning(changes::MOVED)
            .get_results(c)?;
            changes::record_moved(c, &moved, now)
        })?;
        Ok(n == 1)
    }

    fn finish_all(
        &mut self,
        done: &[(&str, &Transition)],
        owner: &str,
        now: NaiveDateTime,
    ) -> QueryResult<Vec<String>> {
        let DbConnection::Pg(pg) = self else {
            // SQLite runs in this process: a statement per record costs no round trip.
            let mut lost = Vec::new();
            for (id, t) in done {
                if !self.finish(id, owner, t, now)? {
                    lost.push(id.to_string());
                }
            }
            return Ok(lost);
        };
        if done.is_empty() {
            return Ok(Vec::new());
        }
        for (_, t) in done {
            checked(Move::AFTER_ATTEMPT, t)?;
        }
        let [sending, unknown] = *Move::AFTER_ATTEMPT;
        // The records moved and their change rows, in one statement.
        let updated: Vec<Updated> = Prepared::new(format!(
            "WITH m AS (UPDATE side_effects AS s SET state = u.state, next_attempt_at = u.next_attempt_at, \
             provider_ref = u.provider_ref, last_error = u.last_error, lease_owner = NULL, \
             lease_expires_at = NULL, updated_at = $6 \
             FROM unnest($1::text[], $2::text[], $3::timestamp[], $4::text[], $5::text[]) \
             AS u(id, state, next_attempt_at, provider_ref, last_error) \
             WHERE s.id = u.id AND s.lease_owner = $7 AND s.state IN ($8, $9) \
             RETURNING s.id, s.submission_id, s.kind, s.state), \
             ch AS (INSERT INTO changes (xid, seq, kind, submission_id, form, subject_id, subject_kind, state, at) \
             SELECT {xid}, $10 + row_number() OVER (ORDER BY m.id), '{kind}', sub.id, sub.form, m.id, m.kind, \
             m.state, $6 FROM m JOIN submissions sub ON sub.id = m.submission_id) \
             SELECT id FROM m",
            xid = changes::PG_XID,
            kind = ChangeKind::EffectState.as_str(),
        ))
        .bind::<Array<Text>, _>(done.iter().map(|(id, _)| *id).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(done.iter().map(|(_, t)| t.state.as_str()).collect::<Vec<_>>())
        .bind::<Array<Timestamp>, _>(done.iter().map(|(_, t)| t.next_attempt_at).collect::<Vec<_>>())
        .bind::<Array<Nullable<Text>>, _>(
            done.iter().map(|(_, t)| t.provider_ref.as_deref()).collect::<Vec<_>>(),
        )
        .bind::<Array<Nullable<Text>>, _>(
            done.iter().map(|(_, t)| t.last_error.as_deref()).collect::<Vec<_>>(),
        )
        .bind::<Timestamp, _>(now)
        .bind::<Text, _>(owner)
        .bind::<Text, _>(sending.as_str())
        .bind::<Text, _>(unknown.as_str())
        .bind::<diesel::sql_types::BigInt, _>(changes::pg_seqs(done.len() + 1) - 1)
        .load(pg)?;
        let updated: std::collections::HashSet<String> = updated.into_iter().map(|u| u.id).collect();
        Ok(done.iter().filter(|(id, _)| !updated.contains(*id)).map(|(id, _)| id.to_string()).collect())
    }

    fn resolve_unknown(&mut self, id: &str, t: &Transition, now: NaiveDateTime) -> QueryResult<bool> {
        let mv = checked(Move::AFTER_LOOKUP, t)?;
        let n = changes::atomically(self, |c| {
            let moved = diesel::update(
                side_effects::table
                    .filter(side_effects::id.eq(id))
                    .filter(side_effects::state.eq_any(mv.from())),
            )
            .set(Released::new(mv, t, now))
            .returning(changes::MOVED)
            .get_results(c)?;
            changes::record_moved(c, &moved, now)
        })?;
        Ok(n == 1)
    }

    fn expire_leases(&mut self, now: NaiveDateTime) -> QueryResult<usize> {
        let mv = Move::LEASE_EXPIRED;
        changes::atomically(self, |c| {
            let moved = diesel::update(
                side_effects::table
                    .filter(side_effects::state.eq_any(mv.from()))
                    .filter(side_effects::lease_expires_at.lt(now)),
            )
            .set((
                side_effects::state.eq(mv.to()),
                side_effects::next_attempt_at.eq(now),
                side_effects::last_error.eq("the lease ran out while sending (the worker stopped)"),
                side_effects::updated_at.eq(now),
            ))
            .returning(changes::MOVED)
            .get_results(c)?;
            changes::record_moved(c, &moved, now)
        })
    }

    fn insert_attempt(&mut self, row: &NewAttempt) -> QueryResult<()> {
        diesel::insert_into(effect_attempts::table).values(row).execute(self)?;
        Ok(())
    }

    fn insert_attempts(&mut self, rows: &[NewAttempt]) -> QueryResult<()> {
        // PostgreSQL allows 65,535 bound values per statement: 9 per row.
        rows.chunks(1000)
            .try_for_each(|chunk| self.insert_rows::<_, NewAttempt>(effect_attempts::table, chunk))
    }

    fn queue_stats(&mut self) -> QueryResult<QueueStats> {
        let oldest_pending = side_effects::table
            .filter(side_effects::state.eq(PENDING))
            .select(min(side_effects::created_at))
            .get_result(self)?;
        let attempts = effect_attempts::table
            .group_by(effect_attempts::outcome)
            .select((effect_attempts::outcome, count_star()))
            .order(effect_attempts::outcome)
            .load(self)?;
        Ok(QueueStats { oldest_pending, attempts })
    }
}
