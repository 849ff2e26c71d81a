//! The status of an accepted submission: its id and each effect's current state, no content.

use serde::Serialize;

use crate::base::format::rfc3339;
use crate::db::{DbError, Pool, Store};
use crate::domain::EffectState;
use crate::with_conn;

#[derive(Debug, Serialize)]
pub struct StatusBody {
    pub submission_id: String,
    pub operation_id: String,
    pub form: String,
    pub status: &'static str,
    pub received_at: String,
    pub operation_expires_at: String,
    /// `stored`, or `purged` once retention or an erasure removed it (a tombstone).
    pub content: &'static str,
    pub effects: Vec<EffectStatus>,
}

#[derive(Debug, Serialize)]
pub struct EffectStatus {
    pub kind: String,
    pub batch: i32,
    pub state: EffectState,
    pub attempts: i32,
    pub updated_at: String,
}

/// `None` when (form, operation ID) names no submission.
pub fn status(pool: &Pool, form: &str, operation_id: &str) -> Result<Option<StatusBody>, DbError> {
    with_conn!(pool, |c| {
        let Some(s) = c.find_submission(form, operation_id)? else { return Ok(None) };
        let effects = c.effects_of(&s.id)?;
        Ok(Some(StatusBody {
            status: "accepted",
            received_at: rfc3339(s.received_at),
            operation_expires_at: rfc3339(s.operation_expires_at),
            content: if s.content_purged_at.is_some() { "purged" } else { "stored" },
            effects: effects
                .into_iter()
                .map(|e| EffectStatus {
                    kind: e.kind.to_string(),
                    batch: e.batch,
                    state: e.state,
                    attempts: e.attempts,
                    updated_at: rfc3339(e.updated_at),
                })
                .collect(),
            submission_id: s.id.into(),
            operation_id: s.operation_id,
            form: s.form,
        }))
    })
}
