//! One row of a historic import, inside the caller's transaction: a keyless submission
//! (channel `import`) with its original `received_at` and a key derived from the row, so a
//! re-run finds it taken; screened by the duplicate detector; effects only when asked.

use std::sync::Arc;

use chrono::NaiveDateTime;

use super::{Intake, Plan};
use crate::db::duplicates::DuplicateStore;
use crate::db::models::NewEffect;
use crate::db::Store;
use crate::domain::keyring::Keyring;
use crate::services::duplicates;
use crate::services::request_log::Channel;

/// What became of one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Imported {
    /// Stored now, with this submission id.
    New(String),
    /// A row with the same key was imported before.
    AlreadyPresent,
}

/// Imports one validated row; its `operation_id` is the row's derived key. `keyring` digests it.
pub fn import_row<C: Store + DuplicateStore>(
    c: &mut C,
    keyring: &Arc<Keyring>,
    intake: Intake,
    received_at: NaiveDateTime,
    with_effects: bool,
) -> diesel::QueryResult<Imported> {
    let mut plan = Plan::new(intake, keyring);
    let sub = &mut plan.submission;
    let shift = received_at - sub.received_at;
    sub.received_at = received_at;
    sub.operation_expires_at += shift;
    sub.channel = Channel::Import;
    sub.keyless = true;
    if let Ok(mut body) = serde_json::from_str::<serde_json::Value>(&sub.response_body) {
        body["received_at"] = crate::base::format::rfc3339(received_at).into();
        body["operation_expires_at"] = crate::base::format::rfc3339(sub.operation_expires_at).into();
        if !with_effects {
            body["effects"] = serde_json::json!([]);
        }
        sub.response_body = body.to_string();
    }
    if !c.insert_submission(&plan.submission)? {
        return Ok(Imported::AlreadyPresent);
    }
    let hold = duplicates::link(c, &plan.form, &plan.submission, received_at)?;
    if with_effects {
        let effects: Vec<NewEffect> =
            plan.effects.iter().cloned().map(|e| NewEffect { held: hold, ..e }).collect();
        c.insert_effects(&effects)?;
    }
    Ok(Imported::New(plan.submission.id.to_string()))
}
