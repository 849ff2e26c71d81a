//! The side-effect queue: claim under a lease, finish, expire leases, reconcile UNKNOWN.
//! Every state change is a conditional update, so a worker that lost its lease, or a
//! stale lookup, can never move a record another worker owns.

use chrono::NaiveDateTime;
use diesel::dsl::{count_star, min};
use diesel::prelude::*;

use super::models::{JobRow, NewAttempt, Transition};
use super::schema::{effect_attempts, side_effects, submissions};
use super::Store;
use crate::domain::EffectState;

const PENDING: EffectState = EffectState::Pending;
const SENDING: EffectState = EffectState::Sending;
const UNKNOWN: EffectState = EffectState::Unknown;

/// Figures for `/metrics` about the queue.
#[derive(Debug, Clone, Default)]
pub struct QueueStats {
    pub oldest_pending: Option<NaiveDateTime>,
    /// (outcome, count) over all recorded attempts and lookups.
    pub attempts: Vec<(String, i64)>,
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
        kinds: &[&str],
        now: NaiveDateTime,
        retry_at: NaiveDateTime,
        limit: i64,
    ) -> QueryResult<Vec<JobRow>>;

    /// Applies `t` if the record is still SENDING under `owner`'s lease (or was marked
    /// UNKNOWN after the lease ran out); false when someone else owns it now.
    fn finish(&mut self, id: &str, owner: &str, t: &Transition, now: NaiveDateTime) -> QueryResult<bool>;

    /// Applies a lookup's result if the record is still UNKNOWN.
    fn resolve_unknown(&mut self, id: &str, t: &Transition, now: NaiveDateTime) -> QueryResult<bool>;

    /// SENDING records whose lease ran out become UNKNOWN (never PENDING).
    fn expire_leases(&mut self, now: NaiveDateTime) -> QueryResult<usize>;

    fn insert_attempt(&mut self, row: &NewAttempt) -> QueryResult<()>;
    fn queue_stats(&mut self) -> QueryResult<QueueStats>;
}

/// Loads claimed records joined with their submissions.
macro_rules! jobs_by_id {
    ($conn:expr, $ids:expr) => {
        side_effects::table
            .inner_join(submissions::table)
            .filter(side_effects::id.eq_any($ids))
            .select((
                side_effects::id,
                side_effects::kind,
                side_effects::batch,
                side_effects::effect_key,
                side_effects::state,
                side_effects::attempts,
                side_effects::submission_id,
                submissions::form,
                submissions::fields_json,
                submissions::received_at,
                submissions::journey_id,
            ))
            .order(side_effects::next_attempt_at)
            .load::<JobRow>($conn)
    };
}

/// In one write transaction: the ids of up to `$limit` records matching `$filter` that are
/// due, locked with `$lock`; `$set` applied to them; the records loaded as jobs.
macro_rules! take_due {
    ($conn:expr, [$($lock:tt)*], $filter:expr, $now:expr, $limit:expr, $set:expr) => {
        $conn.write_tx(|c| {
            let ids: Vec<String> = side_effects::table
                .filter($filter)
                .filter(side_effects::next_attempt_at.le($now))
                .order(side_effects::next_attempt_at)
                .limit($limit)
                .select(side_effects::id)
                $($lock)*
                .load(c)?;
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            diesel::update(side_effects::table.filter(side_effects::id.eq_any(&ids))).set($set).execute(c)?;
            jobs_by_id!(c, &ids)
        })
    };
}

/// The columns a `Transition` sets; the lease is released.
macro_rules! transition {
    ($t:expr, $now:expr) => {
        (
            side_effects::state.eq(&$t.state),
            side_effects::next_attempt_at.eq($t.next_attempt_at),
            side_effects::provider_ref.eq(&$t.provider_ref),
            side_effects::last_error.eq(&$t.last_error),
            side_effects::lease_owner.eq(None::<String>),
            side_effects::lease_expires_at.eq(None::<NaiveDateTime>),
            side_effects::updated_at.eq($now),
        )
    };
}

/// `$($lock)*` is the row-locking clause: `FOR UPDATE SKIP LOCKED` on PostgreSQL; nothing on
/// SQLite, where the write transaction already excludes other writers.
macro_rules! impl_queue {
    ($conn:ty, $($lock:tt)*) => {
        impl Queue for $conn {
            fn claim_due(
                &mut self,
                owner: &str,
                now: NaiveDateTime,
                lease_until: NaiveDateTime,
                limit: i64,
            ) -> QueryResult<Vec<JobRow>> {
                take_due!(
                    self,
                    [$($lock)*],
                    side_effects::state.eq(PENDING).and(side_effects::held.eq(false)),
                    now,
                    limit,
                    (
                        side_effects::state.eq(SENDING),
                        side_effects::lease_owner.eq(owner),
                        side_effects::lease_expires_at.eq(lease_until),
                        side_effects::attempts.eq(side_effects::attempts + 1),
                        side_effects::updated_at.eq(now),
                    )
                )
            }

            fn take_unknown_due(
                &mut self,
                kinds: &[&str],
                now: NaiveDateTime,
                retry_at: NaiveDateTime,
                limit: i64,
            ) -> QueryResult<Vec<JobRow>> {
                take_due!(
                    self,
                    [$($lock)*],
                    side_effects::state.eq(UNKNOWN).and(side_effects::kind.eq_any(kinds)),
                    now,
                    limit,
                    side_effects::next_attempt_at.eq(retry_at)
                )
            }

            fn finish(&mut self, id: &str, owner: &str, t: &Transition, now: NaiveDateTime) -> QueryResult<bool> {
                let n = diesel::update(
                    side_effects::table
                        .filter(side_effects::id.eq(id))
                        .filter(side_effects::lease_owner.eq(owner))
                        .filter(side_effects::state.eq_any([SENDING, UNKNOWN])),
                )
                .set(transition!(t, now))
                .execute(self)?;
                Ok(n == 1)
            }

            fn resolve_unknown(&mut self, id: &str, t: &Transition, now: NaiveDateTime) -> QueryResult<bool> {
                let n = diesel::update(
                    side_effects::table.filter(side_effects::id.eq(id)).filter(side_effects::state.eq(UNKNOWN)),
                )
                .set(transition!(t, now))
                .execute(self)?;
                Ok(n == 1)
            }

            fn expire_leases(&mut self, now: NaiveDateTime) -> QueryResult<usize> {
                diesel::update(
                    side_effects::table
                        .filter(side_effects::state.eq(SENDING))
                        .filter(side_effects::lease_expires_at.lt(now)),
                )
                .set((
                    side_effects::state.eq(UNKNOWN),
                    side_effects::next_attempt_at.eq(now),
                    side_effects::last_error.eq("the lease ran out while sending (the worker stopped)"),
                    side_effects::updated_at.eq(now),
                ))
                .execute(self)
            }

            fn insert_attempt(&mut self, row: &NewAttempt) -> QueryResult<()> {
                diesel::insert_into(effect_attempts::table).values(row).execute(self)?;
                Ok(())
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
    };
}

impl_queue!(diesel::SqliteConnection,);
impl_queue!(diesel::PgConnection, .for_update().skip_locked());
