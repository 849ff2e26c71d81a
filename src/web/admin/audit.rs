//! The audit log, written for a signed-in admin (see `services::audit`).

use super::guard::SessionUser;
use crate::db::admin::accounts::AccountStore;
use crate::services::audit::{self, Actor};

impl SessionUser {
    /// This admin as the actor of an audit row.
    pub fn actor(&self) -> Actor {
        Actor { id: self.id.clone(), label: self.email.clone() }
    }
}

/// Writes one audit row for `user`, inside the caller's transaction.
pub fn record<C: AccountStore>(
    c: &mut C,
    user: &SessionUser,
    action: &str,
    target: (&str, &str),
    note: Option<&str>,
) -> diesel::QueryResult<()> {
    audit::record(c, &user.actor(), action, target, note)
}
