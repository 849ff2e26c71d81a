//! Conflicts and suspected duplicate pairs as admins review them, and the changes their
//! decisions make.

use chrono::NaiveDateTime;
use diesel::dsl::count_star;
use diesel::prelude::*;

use crate::db::schema::{conflicts, duplicate_pairs, side_effects, submissions};
use crate::db::{changes, DbConnection};
use crate::domain::transitions::Move;
use crate::domain::{ChangeKind, ConflictStatus, PairStatus, SubmissionId};

/// A conflict with what its page needs of the original submission.
#[derive(Debug, Clone, Queryable)]
pub struct ConflictRow {
    pub id: String,
    pub submission_id: SubmissionId,
    pub form: String,
    pub operation_id: String,
    pub original_json: Option<String>,
    pub original_received_at: NaiveDateTime,
    /// The conflicting content; `None` once purged.
    pub fields_json: Option<String>,
    pub status: ConflictStatus,
    pub attempts: i32,
    pub first_seen_at: NaiveDateTime,
    pub last_seen_at: NaiveDateTime,
}

#[derive(Debug, Clone, Queryable)]
pub struct PairRow {
    pub id: String,
    pub form: String,
    pub original_id: SubmissionId,
    pub duplicate_id: SubmissionId,
    pub score: f64,
    pub reasons: String,
    pub status: PairStatus,
    pub decided_by: Option<String>,
    pub decided_at: Option<NaiveDateTime>,
    pub created_at: NaiveDateTime,
}

/// One side of a pair.
#[derive(Debug, Clone, Queryable)]
pub struct SubmissionBrief {
    pub id: SubmissionId,
    pub form: String,
    pub operation_id: String,
    pub fields_json: Option<String>,
    pub received_at: NaiveDateTime,
    pub duplicate_of: Option<SubmissionId>,
}

/// Conflicts with their original submission, as `ConflictRow`s.
#[diesel::dsl::auto_type(no_type_alias)]
fn conflict_rows() -> _ {
    conflicts::table.inner_join(submissions::table).select((
        conflicts::id,
        conflicts::submission_id,
        submissions::form,
        submissions::operation_id,
        submissions::fields_json,
        submissions::received_at,
        conflicts::fields_json,
        conflicts::status,
        conflicts::attempts,
        conflicts::first_seen_at,
        conflicts::last_seen_at,
    ))
}

/// Duplicate pairs as `PairRow`s.
#[diesel::dsl::auto_type(no_type_alias)]
fn pair_rows() -> _ {
    duplicate_pairs::table.select((
        duplicate_pairs::id,
        duplicate_pairs::form,
        duplicate_pairs::original_id,
        duplicate_pairs::duplicate_id,
        duplicate_pairs::score,
        duplicate_pairs::reasons,
        duplicate_pairs::status,
        duplicate_pairs::decided_by,
        duplicate_pairs::decided_at,
        duplicate_pairs::created_at,
    ))
}

pub trait ReviewStore {
    /// Most recently seen first.
    fn conflicts_in_status(&mut self, status: ConflictStatus, limit: i64) -> QueryResult<Vec<ConflictRow>>;
    fn conflict_row(&mut self, id: &str) -> QueryResult<Option<ConflictRow>>;
    /// (status, count)
    fn conflict_counts(&mut self) -> QueryResult<Vec<(ConflictStatus, i64)>>;
    /// True when the conflict was `from` and now is `to`.
    fn set_conflict_status(
        &mut self,
        id: &str,
        from: ConflictStatus,
        to: ConflictStatus,
    ) -> QueryResult<bool>;
    /// Highest score first.
    fn pairs_in_status(&mut self, status: PairStatus, limit: i64) -> QueryResult<Vec<PairRow>>;
    /// At most `limit` pairs in `status` (of `form`, when given), newest first, after the
    /// one at `after` (its created_at and id).
    fn pairs_page(
        &mut self,
        status: PairStatus,
        form: Option<&str>,
        after: Option<(NaiveDateTime, &str)>,
        limit: i64,
    ) -> QueryResult<Vec<PairRow>>;
    fn pair_row(&mut self, id: &str) -> QueryResult<Option<PairRow>>;
    /// (status, count)
    fn pair_counts(&mut self) -> QueryResult<Vec<(PairStatus, i64)>>;
    /// (original, pairs in `status` naming it): the size of each cluster, less its first.
    fn cluster_sizes(
        &mut self,
        status: PairStatus,
        originals: &[SubmissionId],
    ) -> QueryResult<Vec<(SubmissionId, i64)>>;
    /// Open pairs naming `submission_id` as the suspected duplicate.
    fn open_pairs_of(&mut self, submission_id: &str) -> QueryResult<i64>;
    fn submissions_by_id(&mut self, ids: &[SubmissionId]) -> QueryResult<Vec<SubmissionBrief>>;
    /// True when the pair was in one of `from` and now is `to`, decided by `by` at `at`.
    fn decide_pair(
        &mut self,
        id: &str,
        from: &[PairStatus],
        to: PairStatus,
        by: Option<&str>,
        at: Option<NaiveDateTime>,
    ) -> QueryResult<bool>;
    fn set_duplicate_of(&mut self, submission_id: &str, original_id: &str) -> QueryResult<usize>;
    /// Clears `duplicate_of` if it still names `original_id`.
    fn clear_duplicate_of(&mut self, submission_id: &str, original_id: &str) -> QueryResult<usize>;
    /// Moves the records a decision cancelled with `note` back to PENDING, held for a new decision.
    fn restore_cancelled(
        &mut self,
        submission_id: &str,
        note: &str,
        now: NaiveDateTime,
    ) -> QueryResult<usize>;
}

impl ReviewStore for DbConnection {
    fn conflicts_in_status(&mut self, status: ConflictStatus, limit: i64) -> QueryResult<Vec<ConflictRow>> {
        conflict_rows()
            .filter(conflicts::status.eq(status))
            .order((conflicts::last_seen_at.desc(), conflicts::id))
            .limit(limit)
            .load(self)
    }

    fn conflict_row(&mut self, id: &str) -> QueryResult<Option<ConflictRow>> {
        conflict_rows().filter(conflicts::id.eq(id)).first(self).optional()
    }

    fn conflict_counts(&mut self) -> QueryResult<Vec<(ConflictStatus, i64)>> {
        conflicts::table.group_by(conflicts::status).select((conflicts::status, count_star())).load(self)
    }

    fn set_conflict_status(
        &mut self,
        id: &str,
        from: ConflictStatus,
        to: ConflictStatus,
    ) -> QueryResult<bool> {
        let n =
            diesel::update(conflicts::table.filter(conflicts::id.eq(id)).filter(conflicts::status.eq(from)))
                .set(conflicts::status.eq(to))
                .execute(self)?;
        Ok(n == 1)
    }

    fn pairs_in_status(&mut self, status: PairStatus, limit: i64) -> QueryResult<Vec<PairRow>> {
        pair_rows()
            .filter(duplicate_pairs::status.eq(status))
            .order((duplicate_pairs::score.desc(), duplicate_pairs::created_at.desc()))
            .limit(limit)
            .load(self)
    }

    fn pairs_page(
        &mut self,
        status: PairStatus,
        form: Option<&str>,
        after: Option<(NaiveDateTime, &str)>,
        limit: i64,
    ) -> QueryResult<Vec<PairRow>> {
        let mut q = pair_rows().filter(duplicate_pairs::status.eq(status)).into_boxed();
        if let Some(form) = form {
            q = q.filter(duplicate_pairs::form.eq(form));
        }
        if let Some((at, id)) = after {
            q = q.filter(
                duplicate_pairs::created_at
                    .lt(at)
                    .or(duplicate_pairs::created_at.eq(at).and(duplicate_pairs::id.lt(id))),
            );
        }
        q.order((duplicate_pairs::created_at.desc(), duplicate_pairs::id.desc())).limit(limit).load(self)
    }

    fn pair_row(&mut self, id: &str) -> QueryResult<Option<PairRow>> {
        pair_rows().filter(duplicate_pairs::id.eq(id)).first(self).optional()
    }

    fn pair_counts(&mut self) -> QueryResult<Vec<(PairStatus, i64)>> {
        duplicate_pairs::table
            .group_by(duplicate_pairs::status)
            .select((duplicate_pairs::status, count_star()))
            .load(self)
    }

    fn cluster_sizes(
        &mut self,
        status: PairStatus,
        originals: &[SubmissionId],
    ) -> QueryResult<Vec<(SubmissionId, i64)>> {
        duplicate_pairs::table
            .filter(duplicate_pairs::status.eq(status))
            .filter(duplicate_pairs::original_id.eq_any(originals))
            .group_by(duplicate_pairs::original_id)
            .select((duplicate_pairs::original_id, count_star()))
            .load(self)
    }

    fn open_pairs_of(&mut self, submission_id: &str) -> QueryResult<i64> {
        duplicate_pairs::table
            .filter(duplicate_pairs::duplicate_id.eq(submission_id))
            .filter(duplicate_pairs::status.eq(PairStatus::Open))
            .select(count_star())
            .get_result(self)
    }

    fn submissions_by_id(&mut self, ids: &[SubmissionId]) -> QueryResult<Vec<SubmissionBrief>> {
        submissions::table
            .filter(submissions::id.eq_any(ids))
            .select((
                submissions::id,
                submissions::form,
                submissions::operation_id,
                submissions::fields_json,
                submissions::received_at,
                submissions::duplicate_of,
            ))
            .load(self)
    }

    fn decide_pair(
        &mut self,
        id: &str,
        from: &[PairStatus],
        to: PairStatus,
        by: Option<&str>,
        at: Option<NaiveDateTime>,
    ) -> QueryResult<bool> {
        // The decision (or its undoing) and its change row, for the pair's later submission.
        changes::atomically(self, |c| {
            let decided: Vec<String> = diesel::update(
                duplicate_pairs::table
                    .filter(duplicate_pairs::id.eq(id))
                    .filter(duplicate_pairs::status.eq_any(from)),
            )
            .set((
                duplicate_pairs::status.eq(to),
                duplicate_pairs::decided_by.eq(by),
                duplicate_pairs::decided_at.eq(at),
            ))
            .returning(duplicate_pairs::duplicate_id)
            .get_results(c)?;
            let rows: Vec<changes::Noted<'_>> = decided
                .iter()
                .map(|submission_id| changes::Noted {
                    kind: ChangeKind::Decision,
                    submission_id,
                    subject_id: Some(id),
                    subject_kind: None,
                    state: Some(to.as_str()),
                })
                .collect();
            changes::record(c, &rows, at.unwrap_or_else(crate::base::clock::now))?;
            Ok(decided.len() == 1)
        })
    }

    fn set_duplicate_of(&mut self, submission_id: &str, original_id: &str) -> QueryResult<usize> {
        diesel::update(submissions::table.filter(submissions::id.eq(submission_id)))
            .set(submissions::duplicate_of.eq(original_id))
            .execute(self)
    }

    fn clear_duplicate_of(&mut self, submission_id: &str, original_id: &str) -> QueryResult<usize> {
        diesel::update(
            submissions::table
                .filter(submissions::id.eq(submission_id))
                .filter(submissions::duplicate_of.eq(original_id)),
        )
        .set(submissions::duplicate_of.eq(None::<String>))
        .execute(self)
    }

    fn restore_cancelled(
        &mut self,
        submission_id: &str,
        note: &str,
        now: NaiveDateTime,
    ) -> QueryResult<usize> {
        let mv = Move::RESTORE_CANCELLED;
        changes::atomically(self, |c| {
            let moved = diesel::update(
                side_effects::table
                    .filter(side_effects::submission_id.eq(submission_id))
                    .filter(side_effects::state.eq_any(mv.from()))
                    .filter(side_effects::last_error.eq(note)),
            )
            .set((
                side_effects::state.eq(mv.to()),
                side_effects::held.eq(true),
                side_effects::last_error.eq(None::<String>),
                side_effects::next_attempt_at.eq(now),
                side_effects::updated_at.eq(now),
            ))
            .returning(changes::MOVED)
            .get_results(c)?;
            changes::record_moved(c, &moved, now)
        })
    }
}
