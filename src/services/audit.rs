//! The audit log's rows: who did what to which record, when, and why. Written inside the
//! caller's transaction, by every use case that changes something on someone's behalf.

use uuid::Uuid;

use crate::base::clock::now;
use crate::db::admin::accounts::AccountStore;
use crate::db::admin::browse::BrowseStore;
use crate::db::{DbError, Pool, Store};
use crate::with_conn;

pub use crate::db::admin::accounts::AuditEntry;

/// Who acts: a signed-in admin (their user ID and email), or an API token (`token:ID` and
/// its name).
#[derive(Debug, Clone)]
pub struct Actor {
    pub id: String,
    pub label: String,
}

/// Writes one audit row, inside the caller's transaction.
pub fn record<C: AccountStore>(
    c: &mut C,
    actor: &Actor,
    action: &str,
    target: (&str, &str),
    note: Option<&str>,
) -> diesel::QueryResult<()> {
    c.insert_audit(&AuditEntry {
        id: Uuid::now_v7().to_string(),
        user_id: actor.id.clone(),
        user_email: actor.label.clone(),
        action: action.into(),
        target_type: target.0.into(),
        target_id: target.1.into(),
        note: note.map(str::trim).filter(|n| !n.is_empty()).map(String::from),
        at: now(),
    })
}

/// Writes one audit row in a transaction of its own (no other write goes with it).
pub fn write(
    pool: &Pool,
    actor: &Actor,
    action: &str,
    target: (&str, &str),
    note: Option<&str>,
) -> Result<(), DbError> {
    with_conn!(pool, |c| c.write_tx(|c| record(c, actor, action, target, note).map_err(DbError::from)))
}

/// (effect id, submission id) of effects named by audit rows.
pub type EffectOwners = Vec<(String, String)>;

/// At most `limit` audit rows from `offset`, newest first, with (effect id, submission id)
/// of the effects they name.
pub fn entries(pool: &Pool, limit: i64, offset: i64) -> Result<(Vec<AuditEntry>, EffectOwners), DbError> {
    with_conn!(pool, |c| {
        let entries = c.audit_entries(limit, offset)?;
        let effects: Vec<String> =
            entries.iter().filter(|e| e.target_type == "effect").map(|e| e.target_id.clone()).collect();
        let owners = c.effect_submissions(&effects)?;
        Ok((entries, owners))
    })
}
