//! What an admin can do to one side-effect record: retry now, mark sent (after checking the
//! CRM or the mail log), mark not sent, cancel, replay as a new batch. Each is one
//! transaction: the record read, changed only from the states the action applies from, and
//! audited.

use crate::base::clock::now;
use crate::db::admin::effects::{EffectAdminStore, EffectChange};
use crate::db::{DbError, Pool, Store};
use crate::domain::EffectState;
use crate::services::audit::{self, Actor};
use crate::with_conn;

pub use crate::db::admin::effects::EffectRow;
pub use crate::db::Stats;

/// Why an action on an effect record did not apply.
#[derive(Debug, thiserror::Error)]
pub enum EffectActionError {
    #[error("Marking an effect sent needs the provider's reference.")]
    NoProviderRef,
    #[error("No such effect.")]
    NoSuchEffect,
    #[error("Only a SENT, FAILED_FINAL or CANCELLED effect can be replayed as a new batch.")]
    NotReplayable,
    #[error("The effect is not in a state that allows this; reload the page.")]
    StateChanged,
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for EffectActionError {
    fn from(e: diesel::result::Error) -> Self {
        EffectActionError::Db(e.into())
    }
}

/// The states from which "replay as a new batch" may start: the record's outcome is known
/// (a PENDING, SENDING or UNKNOWN record may still take effect, and a replay would repeat it).
pub const REPLAYABLE: [EffectState; 3] =
    [EffectState::Sent, EffectState::FailedFinal, EffectState::Cancelled];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Retry,
    MarkSent,
    MarkNotSent,
    Cancel,
    Replay,
}

impl Action {
    /// The action a URL names (`/admin/effects/{id}/{action}`).
    pub fn parse(s: &str) -> Option<Action> {
        Some(match s {
            "retry" => Action::Retry,
            "mark-sent" => Action::MarkSent,
            "mark-not-sent" => Action::MarkNotSent,
            "cancel" => Action::Cancel,
            "replay" => Action::Replay,
            _ => return None,
        })
    }

    pub fn audit_name(self) -> &'static str {
        match self {
            Action::Retry => "effect.retry",
            Action::MarkSent => "effect.mark_sent",
            Action::MarkNotSent => "effect.mark_not_sent",
            Action::Cancel => "effect.cancel",
            Action::Replay => "effect.replay",
        }
    }

    /// The states the action applies from.
    pub fn from(self) -> &'static [EffectState] {
        match self {
            Action::Retry => &[EffectState::Pending, EffectState::FailedFinal],
            Action::MarkSent => &[EffectState::Unknown, EffectState::FailedFinal, EffectState::Pending],
            Action::MarkNotSent => &[EffectState::Unknown],
            Action::Cancel => &[EffectState::Pending, EffectState::Unknown, EffectState::FailedFinal],
            Action::Replay => &REPLAYABLE,
        }
    }

    /// Which states allow the action, and where it leads.
    fn change<'a>(
        self,
        note: &str,
        provider_ref: &str,
        row: &EffectRow,
        t: chrono::NaiveDateTime,
    ) -> EffectChange<'a> {
        let note = (!note.is_empty()).then(|| format!("admin: {note}"));
        let keep_ref = row.provider_ref.clone();
        match self {
            Action::Retry => EffectChange {
                from: self.from(),
                to: EffectState::Pending,
                provider_ref: keep_ref,
                last_error: note,
                next_attempt_at: t,
            },
            Action::MarkSent => EffectChange {
                from: self.from(),
                to: EffectState::Sent,
                provider_ref: Some(provider_ref.to_string()),
                last_error: note,
                next_attempt_at: t,
            },
            Action::MarkNotSent => EffectChange {
                from: self.from(),
                to: EffectState::Pending,
                provider_ref: None,
                last_error: note,
                next_attempt_at: t,
            },
            // A replay is no change of this record (`replay_effect`).
            Action::Cancel | Action::Replay => EffectChange {
                from: Action::Cancel.from(),
                to: EffectState::Cancelled,
                provider_ref: keep_ref,
                last_error: note,
                next_attempt_at: t,
            },
        }
    }
}

/// The row counts and up to `limit` records in `state` (the effects queue).
pub fn queue(pool: &Pool, state: EffectState, limit: i64) -> Result<(Stats, Vec<EffectRow>), DbError> {
    with_conn!(pool, |c| {
        let stats = c.stats()?;
        let rows = c.effects_in_state(state, limit, 0)?;
        Ok::<_, DbError>((stats, rows))
    })
}

/// Applies `action` to record `id` on `actor`'s word, with the admin's `note` (and, marking
/// it sent, the provider's reference); the state it left.
pub fn act(
    pool: &Pool,
    actor: &Actor,
    id: &str,
    action: Action,
    note: &str,
    provider_ref: &str,
) -> Result<EffectState, EffectActionError> {
    if action == Action::MarkSent && provider_ref.is_empty() {
        return Err(EffectActionError::NoProviderRef);
    }
    with_conn!(pool, |c| Ok(c.write_tx(|c| {
        let t = now();
        let row = c.effect_row(id)?.ok_or(EffectActionError::NoSuchEffect)?;
        if action == Action::Replay && !REPLAYABLE.contains(&row.state) {
            return Err(EffectActionError::NotReplayable);
        }
        let applied = match action {
            Action::Replay => c.replay_effect(id, t)?.is_some(),
            other => c.change_effect(id, &other.change(note, provider_ref, &row, t), t)?,
        };
        if !applied {
            return Err(EffectActionError::StateChanged);
        }
        audit::record(c, actor, action.audit_name(), ("effect", id), Some(note))?;
        Ok(row.state)
    })))?
}
