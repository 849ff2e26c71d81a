//! An admin's (or an API client's) decision on a suspected duplicate pair, each in one write
//! transaction with one audit row per pair decided. "Duplicate of" cancels the duplicate's
//! pending effects; undo gives back exactly what it cancelled, held.
//!
//! On a form with `[forms.F.crm] on_duplicate = "note"`, "duplicate of" also adds, in the
//! same transaction, one `crm_note` record when the duplicate's lead may exist in the CRM
//! (its `crm_lead` is SENT, SENDING or UNKNOWN): the note goes on that lead once the CRM has
//! it, naming the original's lead. A lead still waiting is cancelled with the rest and never
//! created; a lead that was not created (FAILED_FINAL, or an UNKNOWN found absent) is refused
//! by `crm_lead` from then on, so no lead appears after the decision without its note. The
//! note's key names the pair (`domain::duplicate_note_key`) and is unique, so undoing and
//! deciding again adds no second note: undo cancels the note while it waits, deciding again
//! gives it back; a note already sent stays in the CRM.

use chrono::NaiveDateTime;

use crate::base::clock::now;
use crate::base::format::reference;
use crate::db::admin::accounts::AccountStore;
use crate::db::admin::duplicate_notes::DuplicateNoteStore;
use crate::db::admin::effects::EffectAdminStore;
use crate::db::admin::review::{PairRow, ReviewStore};
use crate::db::{DbError, Pool, Store};
use crate::domain::{duplicate_note_key, EffectState, PairStatus};
use crate::services::audit::{self, Actor};
use crate::with_conn;

/// A decision on an open pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    NotDuplicate,
    Duplicate,
}

impl Decision {
    /// `not-duplicate` or `duplicate`, as the admin's forms and the API name them.
    pub fn parse(s: &str) -> Option<Decision> {
        match s {
            "not-duplicate" => Some(Decision::NotDuplicate),
            "duplicate" => Some(Decision::Duplicate),
            _ => None,
        }
    }

    fn status(self) -> PairStatus {
        match self {
            Decision::NotDuplicate => PairStatus::NotDuplicate,
            Decision::Duplicate => PairStatus::Duplicate,
        }
    }

    fn audit_name(self) -> &'static str {
        match self {
            Decision::NotDuplicate => "duplicate.not_duplicate",
            Decision::Duplicate => "duplicate.duplicate_of",
        }
    }
}

/// What is asked of one pair: a decision, or undoing the one it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairAction {
    Decide(Decision),
    Undo,
}

/// What one action did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The pair is decided; `effects`: how many of the duplicate's effects were released
    /// (not a duplicate) or cancelled (duplicate of).
    Decided { decision: Decision, duplicate: String, original: String, effects: usize },
    /// The decision `was` is undone; `restored`: the cancelled effects given back, held.
    Undone { was: PairStatus, restored: usize },
}

/// Why a decision on a pair (or on a batch of pairs) did not apply.
#[derive(Debug, thiserror::Error)]
pub enum PairError {
    #[error("No such pair.")]
    NotFound,
    #[error("The pair is already decided; undo that decision first.")]
    AlreadyDecided,
    #[error("The pair is open: there is no decision to undo.")]
    NothingToUndo,
    #[error("None of the selected pairs is open; reload the page.")]
    NoneOpen,
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<diesel::result::Error> for PairError {
    fn from(e: diesel::result::Error) -> Self {
        PairError::Db(e.into())
    }
}

/// Most pairs one batch decides.
pub const BATCH_MAX: usize = 500;

/// Whether a "duplicate of" decision on a submission of the form called so adds a CRM note
/// (`[forms.F.crm] on_duplicate = "note"`); the caller reads the forms in force.
pub type CrmNotes<'a> = &'a (dyn Fn(&str) -> bool + Sync);

/// Applies `action` to the pair `pair_id` on behalf of `actor`.
pub fn apply(
    pool: &Pool,
    actor: &Actor,
    crm_notes: CrmNotes<'_>,
    pair_id: &str,
    action: PairAction,
    note: &str,
) -> Result<Outcome, PairError> {
    with_conn!(pool, |c| Ok(c.write_tx(|c| {
        let Some(pair) = c.pair_row(pair_id)? else { return Err(PairError::NotFound) };
        let t = now();
        match action {
            PairAction::Decide(d) => match decide(c, actor, crm_notes, &pair, d, note, t)? {
                None => Err(PairError::AlreadyDecided),
                Some(effects) => Ok(Outcome::Decided {
                    decision: d,
                    duplicate: reference(&pair.duplicate_id),
                    original: reference(&pair.original_id),
                    effects,
                }),
            },
            PairAction::Undo => match undo(c, actor, &pair, note, t)? {
                None => Err(PairError::NothingToUndo),
                Some(restored) => Ok(Outcome::Undone { was: pair.status, restored }),
            },
        }
    })))?
}

/// Decides every open pair of `ids` (at most `BATCH_MAX`, the caller checks) in one
/// transaction; `(decided, skipped)`, or `NoneOpen` when none was open.
pub fn apply_batch(
    pool: &Pool,
    actor: &Actor,
    crm_notes: CrmNotes<'_>,
    ids: &[String],
    decision: Decision,
    note: &str,
) -> Result<(usize, usize), PairError> {
    with_conn!(pool, |c| Ok(c.write_tx(|c| {
        let t = now();
        let mut decided = 0;
        for id in ids {
            let Some(pair) = c.pair_row(id)? else { continue };
            if decide(c, actor, crm_notes, &pair, decision, note, t)?.is_some() {
                decided += 1;
            }
        }
        match decided {
            0 => Err(PairError::NoneOpen),
            n => Ok((n, ids.len() - n)),
        }
    })))?
}

/// The note on the effects a "duplicate of" decision cancels: undo restores exactly those.
fn cancel_note(original_id: &str) -> String {
    format!("duplicate of {}", reference(original_id))
}

/// Why an undo cancelled the pair's CRM note: deciding again gives back only that.
const NOTE_UNDONE: &str = "duplicate decision undone";

trait ReviewConn: ReviewStore + EffectAdminStore + AccountStore + DuplicateNoteStore {}
impl<C: ReviewStore + EffectAdminStore + AccountStore + DuplicateNoteStore> ReviewConn for C {}

/// Decides an open pair; `None` when it is not open (any more), else the effects changed.
fn decide<C: ReviewConn>(
    c: &mut C,
    actor: &Actor,
    crm_notes: CrmNotes<'_>,
    pair: &PairRow,
    decision: Decision,
    note: &str,
    t: NaiveDateTime,
) -> diesel::QueryResult<Option<usize>> {
    if !c.decide_pair(&pair.id, &[PairStatus::Open], decision.status(), Some(&actor.label), Some(t))? {
        return Ok(None);
    }
    let changed = match decision {
        // Held effects wait until no open pair suspects this submission any more.
        Decision::NotDuplicate if c.open_pairs_of(&pair.duplicate_id)? == 0 => {
            c.release_held_of(&pair.duplicate_id, t)?
        }
        Decision::NotDuplicate => 0,
        Decision::Duplicate => {
            c.set_duplicate_of(&pair.duplicate_id, &pair.original_id)?;
            let cancelled = c.cancel_pending_of(&pair.duplicate_id, &cancel_note(&pair.original_id), t)?;
            if crm_notes(&pair.form) && lead_may_exist(&c.lead_states_of(&pair.duplicate_id)?) {
                let key = duplicate_note_key(&pair.duplicate_id, &pair.original_id);
                c.add_note(&pair.duplicate_id, &key, NOTE_UNDONE, t)?;
            }
            cancelled
        }
    };
    audit::record(c, actor, decision.audit_name(), ("duplicate_pair", &pair.id), Some(note))?;
    Ok(Some(changed))
}

/// Reopens a decided pair; a "duplicate of" decision gives back what it cancelled, held.
fn undo<C: ReviewConn>(
    c: &mut C,
    actor: &Actor,
    pair: &PairRow,
    note: &str,
    t: NaiveDateTime,
) -> diesel::QueryResult<Option<usize>> {
    if pair.status == PairStatus::Open
        || !c.decide_pair(&pair.id, &[pair.status], PairStatus::Open, None, None)?
    {
        return Ok(None);
    }
    let mut restored = 0;
    if pair.status == PairStatus::Duplicate {
        c.clear_duplicate_of(&pair.duplicate_id, &pair.original_id)?;
        restored = c.restore_cancelled(&pair.duplicate_id, &cancel_note(&pair.original_id), t)?;
        c.cancel_note(&duplicate_note_key(&pair.duplicate_id, &pair.original_id), NOTE_UNDONE, t)?;
    }
    audit::record(c, actor, "duplicate.undo", ("duplicate_pair", &pair.id), Some(note))?;
    Ok(Some(restored))
}

/// Whether a lead in one of `states` may be in the CRM, or still get there from an attempt
/// under way or a lookup (a waiting lead has just been cancelled; a failed one never will).
fn lead_may_exist(states: &[EffectState]) -> bool {
    states.iter().any(|s| matches!(s, EffectState::Sent | EffectState::Sending | EffectState::Unknown))
}
