//! Sessions and users as the admin pages read and change them: the live session of a
//! request, signing out, the users list and a user's language.

use super::changes::idle_since;
use crate::base::clock::now;
use crate::db::admin::accounts::AccountStore;
use crate::db::admin::oidc::OidcStore;
use crate::db::admin::sessions::SessionStore;
use crate::db::{DbError, Pool, Store};
use crate::with_conn;

pub use crate::db::admin::accounts::User;
pub use crate::db::admin::sessions::{LiveSession, UserRow};

/// Sliding the idle timeout costs a write; it is done at most this often per session.
const TOUCH_AFTER_SECONDS: i64 = 60;

/// The live session (not expired, not idle, user not disabled), its idle timeout slid
/// forward when it was last slid more than a minute ago.
pub fn live(pool: &Pool, hash: &str) -> Result<Option<LiveSession>, DbError> {
    let t = now();
    let found = with_conn!(pool, |c| c.live_session(hash, t, idle_since(t)).map_err(DbError::from))?;
    if let Some(session) = &found {
        let stale = session.last_seen_at.is_none_or(|seen| (t - seen).num_seconds() >= TOUCH_AFTER_SECONDS);
        if stale {
            with_conn!(pool, |c| c.write_tx(|c| c.touch_session(hash, t).map_err(DbError::from)))?;
        }
    }
    Ok(found)
}

/// Ends the session `hash` (signing out); whether its user `user_id` signs in through OIDC.
pub fn end(pool: &Pool, hash: &str, user_id: &str) -> Result<bool, DbError> {
    with_conn!(pool, |c| {
        c.delete_session(hash)?;
        c.has_identity(user_id).map_err(DbError::from)
    })
}

/// Every user, for the users page.
pub fn users(pool: &Pool) -> Result<Vec<UserRow>, DbError> {
    with_conn!(pool, |c| c.list_users().map_err(DbError::from))
}

/// The user signed in with `email`.
pub fn user_by_email(pool: &Pool, email: &str) -> Result<Option<User>, DbError> {
    with_conn!(pool, |c| c.user_by_email(email).map_err(DbError::from))
}

/// Sets user `user_id`'s language (a locale's tag; `None`: `[admin] locale`).
pub fn set_locale(pool: &Pool, user_id: &str, locale: Option<&str>) -> Result<(), DbError> {
    with_conn!(pool, |c| c
        .write_tx(|c| c.set_user_locale(user_id, locale).map(|_| ()).map_err(DbError::from)))
}
