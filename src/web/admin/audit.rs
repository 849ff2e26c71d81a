//! A signed-in admin as the actor of the audit rows their actions write (`services::audit`).

use super::guard::SessionUser;
use crate::services::audit::Actor;

impl SessionUser {
    /// This admin as the actor of an audit row.
    pub fn actor(&self) -> Actor {
        Actor { id: self.id.clone(), label: self.email.clone() }
    }
}
