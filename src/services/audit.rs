//! The audit log's rows: who did what to which record, when, and why. Written inside the
//! caller's transaction, by every use case that changes something on someone's behalf.

use uuid::Uuid;

use crate::base::clock::now;
use crate::db::admin::accounts::{AccountStore, AuditEntry};

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
