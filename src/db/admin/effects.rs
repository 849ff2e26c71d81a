//! The effects queue as admins see it, and the state changes they make.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::db::hooks::{HookStore, NewEventEffect};
use crate::db::models::NewEffect;
use crate::db::schema::{effect_attempts, inbound_events, side_effects, submission_files, submissions};
use crate::db::{changes, DbConnection};
use crate::domain::transitions::Move;
use crate::domain::{AttemptOutcome, ChangeKind, EffectId, EffectState, RecordKind, ScanState, SubmissionId};

#[derive(Debug, Clone, Queryable)]
#[diesel(check_for_backend(crate::db::MultiBackend))]
pub struct EffectRow {
    pub id: EffectId,
    /// The owner's ID: the submission's, or the inbound event's row ID.
    #[diesel(deserialize_as = Owner)]
    pub submission_id: SubmissionId,
    /// The submission's form, or the event's source's scope (`RecordKind::source_scope`).
    #[diesel(deserialize_as = OwnerName)]
    pub form: String,
    pub kind: RecordKind,
    pub batch: i32,
    pub effect_key: String,
    pub state: EffectState,
    pub held: bool,
    pub attempts: i32,
    pub provider_ref: Option<String>,
    pub last_error: Option<String>,
    pub next_attempt_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
}

#[derive(Debug, Clone, Queryable)]
pub struct AttemptRow {
    pub started_at: NaiveDateTime,
    pub duration_ms: i32,
    pub outcome: AttemptOutcome,
    pub http_status: Option<i32>,
    pub smtp_code: Option<i32>,
    pub error_class: Option<String>,
    pub provider_ref: Option<String>,
    /// What the vendor said (`effects::Report::detail`).
    pub detail: Option<String>,
}

/// A state change an admin asks for; applied only from the listed states, and only when
/// the state machine allows each (`domain::transitions`).
#[derive(Debug, Clone)]
pub struct EffectChange<'a> {
    pub from: &'a [EffectState],
    pub to: EffectState,
    pub provider_ref: Option<String>,
    pub last_error: Option<String>,
    pub next_attempt_at: NaiveDateTime,
}

/// A record's owner ID as stored: (submission, inbound event), exactly one set.
pub struct Owner(SubmissionId);

impl TryFrom<(Option<String>, Option<String>)> for Owner {
    type Error = String;
    fn try_from(ids: (Option<String>, Option<String>)) -> Result<Self, String> {
        ids.0.or(ids.1).map(|id| Owner(id.into())).ok_or_else(|| "a side-effect record with no owner".into())
    }
}

impl From<Owner> for SubmissionId {
    fn from(o: Owner) -> Self {
        o.0
    }
}

impl<DB: diesel::backend::Backend, ST> Queryable<ST, DB> for Owner
where
    (Option<String>, Option<String>): diesel::deserialize::FromStaticSqlRow<ST, DB>,
{
    type Row = (Option<String>, Option<String>);
    fn build(row: Self::Row) -> diesel::deserialize::Result<Self> {
        Ok(Owner::try_from(row)?)
    }
}

/// An owner's name: (the submission's form, the event's source).
pub struct OwnerName(String);

impl From<OwnerName> for String {
    fn from(o: OwnerName) -> Self {
        o.0
    }
}

impl<DB: diesel::backend::Backend, ST> Queryable<ST, DB> for OwnerName
where
    (Option<String>, Option<String>): diesel::deserialize::FromStaticSqlRow<ST, DB>,
{
    type Row = (Option<String>, Option<String>);
    fn build((form, source): Self::Row) -> diesel::deserialize::Result<Self> {
        match (form, source) {
            (Some(form), _) => Ok(OwnerName(form)),
            (None, Some(source)) => Ok(OwnerName(RecordKind::source_scope(&source))),
            (None, None) => Err("a side-effect record with no owner".into()),
        }
    }
}

/// Effect records with their owner's name, as `EffectRow`s.
#[diesel::dsl::auto_type(no_type_alias)]
fn effect_rows() -> _ {
    side_effects::table.left_join(submissions::table).left_join(inbound_events::table).select((
        side_effects::id,
        (side_effects::submission_id, side_effects::inbound_event_id),
        (submissions::form.nullable(), inbound_events::source.nullable()),
        side_effects::kind,
        side_effects::batch,
        side_effects::effect_key,
        side_effects::state,
        side_effects::held,
        side_effects::attempts,
        side_effects::provider_ref,
        side_effects::last_error,
        side_effects::next_attempt_at,
        side_effects::updated_at,
    ))
}

pub trait EffectAdminStore {
    fn effects_in_state(
        &mut self,
        state: EffectState,
        limit: i64,
        offset: i64,
    ) -> QueryResult<Vec<EffectRow>>;
    /// At most `limit` effect records of submissions (of `form`, in `state`, when given),
    /// most recently changed first, after the one at `after` (its updated_at and id).
    fn effects_page(
        &mut self,
        state: Option<EffectState>,
        form: Option<&str>,
        after: Option<(NaiveDateTime, &str)>,
        limit: i64,
    ) -> QueryResult<Vec<EffectRow>>;
    fn effects_of_submission(&mut self, submission_id: &str) -> QueryResult<Vec<EffectRow>>;
    fn effect_row(&mut self, id: &str) -> QueryResult<Option<EffectRow>>;
    fn attempts_of(&mut self, effect_id: &str) -> QueryResult<Vec<AttemptRow>>;
    /// True when the record was in one of `change.from` and now is in `change.to`.
    fn change_effect(&mut self, id: &str, change: &EffectChange<'_>, now: NaiveDateTime)
        -> QueryResult<bool>;
    /// A new PENDING record for the same submission and kind, in the next batch, with its own key.
    fn replay_effect(&mut self, id: &str, now: NaiveDateTime) -> QueryResult<Option<String>>;
    /// Cancels the PENDING (and held) records of a submission but its CRM notes (each
    /// belongs to one decision: see `duplicate_notes`); returns how many.
    fn cancel_pending_of(
        &mut self,
        submission_id: &str,
        note: &str,
        now: NaiveDateTime,
    ) -> QueryResult<usize>;
    /// Releases a submission's held records to the workers, unless a file of it waits for a
    /// scan or could not be scanned.
    fn release_held_of(&mut self, submission_id: &str, now: NaiveDateTime) -> QueryResult<usize>;
}

impl EffectAdminStore for DbConnection {
    fn effects_in_state(
        &mut self,
        state: EffectState,
        limit: i64,
        offset: i64,
    ) -> QueryResult<Vec<EffectRow>> {
        effect_rows()
            .filter(side_effects::state.eq(state))
            .order(side_effects::updated_at.desc())
            .limit(limit)
            .offset(offset)
            .load(self)
    }

    fn effects_page(
        &mut self,
        state: Option<EffectState>,
        form: Option<&str>,
        after: Option<(NaiveDateTime, &str)>,
        limit: i64,
    ) -> QueryResult<Vec<EffectRow>> {
        let mut q = effect_rows().filter(side_effects::submission_id.is_not_null()).into_boxed();
        if let Some(state) = state {
            q = q.filter(side_effects::state.eq(state));
        }
        if let Some(form) = form {
            q = q.filter(submissions::form.nullable().eq(form));
        }
        if let Some((at, id)) = after {
            q = q.filter(
                side_effects::updated_at
                    .lt(at)
                    .or(side_effects::updated_at.eq(at).and(side_effects::id.lt(id))),
            );
        }
        q.order((side_effects::updated_at.desc(), side_effects::id.desc())).limit(limit).load(self)
    }

    fn effects_of_submission(&mut self, submission_id: &str) -> QueryResult<Vec<EffectRow>> {
        effect_rows()
            .filter(side_effects::submission_id.eq(submission_id))
            .order((side_effects::kind, side_effects::batch))
            .load(self)
    }

    fn effect_row(&mut self, id: &str) -> QueryResult<Option<EffectRow>> {
        effect_rows().filter(side_effects::id.eq(id)).first(self).optional()
    }

    fn attempts_of(&mut self, effect_id: &str) -> QueryResult<Vec<AttemptRow>> {
        effect_attempts::table
            .filter(effect_attempts::effect_id.eq(effect_id))
            .order(effect_attempts::started_at)
            .select((
                effect_attempts::started_at,
                effect_attempts::duration_ms,
                effect_attempts::outcome,
                effect_attempts::http_status,
                effect_attempts::smtp_code,
                effect_attempts::error_class,
                effect_attempts::provider_ref,
                effect_attempts::detail,
            ))
            .load(self)
    }

    fn change_effect(
        &mut self,
        id: &str,
        change: &EffectChange<'_>,
        now: NaiveDateTime,
    ) -> QueryResult<bool> {
        let mv = Move::new(change.from, change.to).map_err(crate::db::queue::refused)?;
        let n = changes::atomically(self, |c| {
            let moved = diesel::update(
                side_effects::table
                    .filter(side_effects::id.eq(id))
                    .filter(side_effects::state.eq_any(mv.from())),
            )
            .set((
                side_effects::state.eq(mv.to()),
                side_effects::provider_ref.eq(&change.provider_ref),
                side_effects::last_error.eq(&change.last_error),
                side_effects::next_attempt_at.eq(change.next_attempt_at),
                side_effects::lease_owner.eq(None::<String>),
                side_effects::lease_expires_at.eq(None::<NaiveDateTime>),
                side_effects::updated_at.eq(now),
            ))
            .returning(changes::MOVED)
            .get_results(c)?;
            changes::record_moved(c, &moved, now)
        })?;
        Ok(n == 1)
    }

    fn replay_effect(&mut self, id: &str, now: NaiveDateTime) -> QueryResult<Option<String>> {
        let Some((submission, event, kind, key)) = side_effects::table
            .filter(side_effects::id.eq(id))
            .select((
                side_effects::submission_id,
                side_effects::inbound_event_id,
                side_effects::kind,
                side_effects::effect_key,
            ))
            .first::<(Option<String>, Option<String>, RecordKind, String)>(self)
            .optional()?
        else {
            return Ok(None);
        };
        let Some(owner) = submission.clone().or(event.clone()) else { return Ok(None) };
        let last: Option<i32> = side_effects::table
            .filter(crate::db::owned_by_one(&owner))
            .filter(side_effects::kind.eq(&kind))
            .select(diesel::dsl::max(side_effects::batch))
            .first(self)?;
        let batch = last.unwrap_or(0) + 1;
        let new_id = uuid::Uuid::now_v7().to_string();
        // Every key ends in `:{batch}` (forms and inbound webhook handlers alike).
        let effect_key = match key.rsplit_once(':') {
            Some((prefix, _)) => format!("{prefix}:{batch}"),
            None => format!("{owner}:{kind}:{batch}"),
        };
        match (submission, event) {
            (Some(submission_id), _) => {
                let row = NewEffect {
                    id: new_id.as_str().into(),
                    effect_key,
                    submission_id: submission_id.into(),
                    kind,
                    batch,
                    state: EffectState::Pending,
                    held: false,
                    last_error: None,
                    next_attempt_at: now,
                    created_at: now,
                    updated_at: now,
                };
                changes::atomically(self, |c| {
                    diesel::insert_into(side_effects::table).values(&row).execute(c)?;
                    // A new record of the submission, waiting: a change of the feed.
                    let noted = changes::Noted {
                        kind: ChangeKind::EffectState,
                        submission_id: row.submission_id.as_str(),
                        subject_id: Some(row.id.as_str()),
                        subject_kind: Some(row.kind.as_str()),
                        state: Some(row.state.as_str()),
                    };
                    changes::record(c, &[noted], now)
                })?;
            }
            (None, _) => self.insert_event_effects(&[NewEventEffect {
                id: new_id.as_str().into(),
                inbound_event_id: owner,
                kind,
                batch,
                effect_key,
                state: EffectState::Pending,
                next_attempt_at: now,
                created_at: now,
                updated_at: now,
            }])?,
        }
        Ok(Some(new_id))
    }

    fn cancel_pending_of(
        &mut self,
        submission_id: &str,
        note: &str,
        now: NaiveDateTime,
    ) -> QueryResult<usize> {
        let mv = Move::CANCEL_PENDING;
        changes::atomically(self, |c| {
            let moved = diesel::update(
                side_effects::table
                    .filter(side_effects::submission_id.eq(submission_id))
                    .filter(side_effects::kind.ne(crate::domain::EffectKind::CRM_NOTE.as_str()))
                    .filter(side_effects::state.eq_any(mv.from())),
            )
            .set((
                side_effects::state.eq(mv.to()),
                side_effects::held.eq(false),
                side_effects::last_error.eq(note),
                side_effects::updated_at.eq(now),
            ))
            .returning(changes::MOVED)
            .get_results(c)?;
            changes::record_moved(c, &moved, now)
        })
    }

    fn release_held_of(&mut self, submission_id: &str, now: NaiveDateTime) -> QueryResult<usize> {
        // A file still waiting for its malware scan, or one clamd could not scan, keeps them
        // held, whoever releases.
        let scanning = submission_files::table
            .filter(submission_files::submission_id.eq(submission_id))
            .filter(submission_files::scan.eq_any(ScanState::HOLDING));
        diesel::update(
            side_effects::table
                .filter(side_effects::submission_id.eq(submission_id))
                .filter(side_effects::held.eq(true))
                .filter(diesel::dsl::not(diesel::dsl::exists(scanning))),
        )
        .set((
            side_effects::held.eq(false),
            side_effects::next_attempt_at.eq(now),
            side_effects::updated_at.eq(now),
        ))
        .execute(self)
    }
}
