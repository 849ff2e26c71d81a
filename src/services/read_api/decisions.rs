//! `POST /api/v1/duplicates/{id}/decision`: a token with `write:decisions` decides a pair
//! (or undoes its decision) through `services::duplicates::decide`, the admin's own use
//! case: the same rules, the same effects on the duplicate's records, and one audit row
//! naming the token (`token:ID`).

use super::views::PairView;
use super::{Caller, ReadError};
use crate::db::admin::review::ReviewStore;
use crate::db::{DbError, Pool};
use crate::domain::ApiScope;
use crate::services::duplicates::decide::{apply, CrmNotes, Outcome, PairAction, PairError};
use crate::with_conn;

/// Why a decision did not apply.
#[derive(Debug, thiserror::Error)]
pub enum DecisionError {
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Already decided, or nothing to undo: the pair's state does not allow it.
    #[error("{0}")]
    Refused(String),
}

impl From<DbError> for DecisionError {
    fn from(e: DbError) -> Self {
        DecisionError::Read(ReadError::Db(e))
    }
}

/// What a decision did: the pair as it is now, and how many of the duplicate's effect
/// records it released, cancelled or gave back.
#[derive(Debug, serde::Serialize)]
pub struct Decided {
    pub pair: PairView,
    pub effects_changed: usize,
}

pub fn decide(
    pool: &Pool,
    caller: &Caller,
    crm_notes: CrmNotes<'_>,
    pair_id: &str,
    action: PairAction,
    note: &str,
) -> Result<Decided, DecisionError> {
    caller.require(ApiScope::WriteDecisions)?;
    let pair = with_conn!(pool, |c| c.pair_row(pair_id).map_err(DbError::from))?;
    let pair = pair.ok_or(ReadError::NotFound)?;
    caller.check_form(&pair.form)?;
    let effects_changed = match apply(pool, &caller.actor(), crm_notes, pair_id, action, note) {
        Ok(Outcome::Decided { effects, .. }) => effects,
        Ok(Outcome::Undone { restored, .. }) => restored,
        Err(PairError::NotFound) => return Err(ReadError::NotFound.into()),
        Err(PairError::Db(e)) => return Err(e.into()),
        Err(refused) => return Err(DecisionError::Refused(refused.to_string())),
    };
    let now = with_conn!(pool, |c| c.pair_row(pair_id).map_err(DbError::from))?;
    let pair = now.ok_or(ReadError::NotFound)?;
    Ok(Decided { pair: PairView::of(pair), effects_changed })
}
