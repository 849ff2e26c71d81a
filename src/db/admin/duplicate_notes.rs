//! The CRM note of a decided duplicate (`crm_note`, `[forms.F.crm] on_duplicate = "note"`):
//! added by the "duplicate of" decision at most once per pair (its key is unique), and
//! cancelled by an undo while it still waits.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::db::changes::{self, Noted};
use crate::db::models::NewEffect;
use crate::db::schema::side_effects;
use crate::db::DbConnection;
use crate::domain::transitions::Move;
use crate::domain::{ChangeKind, EffectKind, EffectState};

pub trait DuplicateNoteStore {
    /// The states of the submission's `crm_lead` records.
    fn lead_states_of(&mut self, submission_id: &str) -> QueryResult<Vec<EffectState>>;
    /// The submission's note record under `key`: inserted PENDING when there is none (the
    /// unique key refuses a second), or given back to the workers when an undo cancelled it
    /// (`undone`: the reason it was cancelled with). True when it now waits to be sent.
    fn add_note(
        &mut self,
        submission_id: &str,
        key: &str,
        undone: &str,
        now: NaiveDateTime,
    ) -> QueryResult<bool>;
    /// Cancels the note under `key` while it waits (PENDING), with `undone` as the reason;
    /// a note already sent, or being sent, is left as it is.
    fn cancel_note(&mut self, key: &str, undone: &str, now: NaiveDateTime) -> QueryResult<usize>;
}

impl DuplicateNoteStore for DbConnection {
    fn lead_states_of(&mut self, submission_id: &str) -> QueryResult<Vec<EffectState>> {
        side_effects::table
            .filter(side_effects::submission_id.eq(submission_id))
            .filter(side_effects::kind.eq(EffectKind::CRM_LEAD.as_str()))
            .select(side_effects::state)
            .load(self)
    }

    fn add_note(
        &mut self,
        submission_id: &str,
        key: &str,
        undone: &str,
        now: NaiveDateTime,
    ) -> QueryResult<bool> {
        let last: Option<i32> = side_effects::table
            .filter(side_effects::submission_id.eq(submission_id))
            .filter(side_effects::kind.eq(EffectKind::CRM_NOTE.as_str()))
            .select(diesel::dsl::max(side_effects::batch))
            .first(self)?;
        let row = NewEffect {
            id: crate::domain::EffectId::generate(),
            submission_id: submission_id.into(),
            kind: EffectKind::CRM_NOTE.into(),
            batch: last.map_or(0, |b| b + 1),
            effect_key: key.to_string(),
            state: EffectState::Pending,
            held: false,
            last_error: None,
            next_attempt_at: now,
            created_at: now,
            updated_at: now,
        };
        let inserted = self.execute_native(
            diesel::insert_into(side_effects::table)
                .values(&row)
                .on_conflict(side_effects::effect_key)
                .do_nothing(),
        )?;
        if inserted == 1 {
            // A new record of the submission, waiting: a change of the feed.
            let noted = Noted {
                kind: ChangeKind::EffectState,
                submission_id: row.submission_id.as_str(),
                subject_id: Some(row.id.as_str()),
                subject_kind: Some(row.kind.as_str()),
                state: Some(row.state.as_str()),
            };
            changes::record(self, &[noted], now)?;
            return Ok(true);
        }
        let mv = Move::RESTORE_CANCELLED;
        let restored: Vec<changes::Moved> = diesel::update(
            side_effects::table
                .filter(side_effects::effect_key.eq(key))
                .filter(side_effects::state.eq_any(mv.from()))
                .filter(side_effects::last_error.eq(undone)),
        )
        .set((
            side_effects::state.eq(mv.to()),
            side_effects::last_error.eq(None::<String>),
            side_effects::next_attempt_at.eq(now),
            side_effects::updated_at.eq(now),
        ))
        .returning(changes::MOVED)
        .get_results(self)?;
        Ok(changes::record_moved(self, &restored, now)? == 1)
    }

    fn cancel_note(&mut self, key: &str, undone: &str, now: NaiveDateTime) -> QueryResult<usize> {
        let mv = Move::CANCEL_PENDING;
        let moved: Vec<changes::Moved> = diesel::update(
            side_effects::table
                .filter(side_effects::effect_key.eq(key))
                .filter(side_effects::state.eq_any(mv.from())),
        )
        .set((
            side_effects::state.eq(mv.to()),
            side_effects::held.eq(false),
            side_effects::last_error.eq(undone),
            side_effects::updated_at.eq(now),
        ))
        .returning(changes::MOVED)
        .get_results(self)?;
        changes::record_moved(self, &moved, now)
    }
}
