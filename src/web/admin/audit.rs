//! The audit log: who did what to which record, when, and why.

use uuid::Uuid;

use super::guard::SessionUser;
use crate::base::clock::now;
use crate::db::admin::accounts::{AccountStore, AuditEntry};

/// Writes one audit row, inside the caller's transaction.
pub fn record<C: AccountStore>(
    c: &mut C,
    user: &SessionUser,
    action: &str,
    target: (&str, &str),
    note: Option<&str>,
) -> diesel::QueryResult<()> {
    c.insert_audit(&AuditEntry {
        id: Uuid::now_v7().to_string(),
        user_id: user.id.clone(),
        user_email: user.email.clone(),
        action: action.into(),
        target_type: target.0.into(),
        target_id: target.1.into(),
        note: note.map(str::trim).filter(|n| !n.is_empty()).map(String::from),
        at: now(),
    })
}
